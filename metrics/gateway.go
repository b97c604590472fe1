package metrics

import "github.com/prometheus/client_golang/prometheus"

// What a gateway measures of its own: its 2025-11-25 sessions, and what
// it hands to the replicas that share its store.

// How a gateway came to hold a session: "initialized" by its client here,
// or "taken" from the record another replica made.
const (
	SessionInitialized = "initialized"
	SessionTaken       = "taken"
)

// What a gateway hands to another replica: a client's "answer" to a
// question that replica asked, a message for the client's GET stream it
// holds ("message"), a client's cancellation or unsubscription for the
// copies of its session ("relay"), or a 2026-07-28 retry for the call
// waiting there ("round").
var handoffs = []string{"answer", "message", "relay", "round"}

type gatewayMetrics struct {
	sessions *prometheus.CounterVec
	handoffs *prometheus.CounterVec
	open     prometheus.GaugeFunc
}

// addGateway registers the gateway's metrics in m, with open reporting the
// sessions held.
func (m *Metrics) addGateway(open func() float64) {
	g := gatewayMetrics{
		sessions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airlock_gateway_sessions_opened_total",
			Help: "2025-11-25 sessions this gateway opened, by how: initialized by their client here, or taken from the record another replica made (store.url).",
		}, []string{"how"}),
		handoffs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airlock_gateway_handoffs_total",
			Help: "What this gateway handed to the replicas sharing its store: answers to their questions, messages for GET streams they hold, cancellations and unsubscriptions (relay), 2026-07-28 retries for calls waiting there (round).",
		}, []string{"what"}),
		open: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "airlock_gateway_sessions",
			Help: "2025-11-25 sessions this gateway holds: its own and its copies of other replicas'.",
		}, open),
	}
	for _, how := range []string{SessionInitialized, SessionTaken} {
		g.sessions.WithLabelValues(how)
	}
	for _, what := range handoffs {
		g.handoffs.WithLabelValues(what)
	}
	m.reg.MustRegister(g.sessions, g.handoffs, g.open)
	m.mu.Lock()
	m.gateway = &g
	m.mu.Unlock()
}

// ObserveGateway adds a gateway's metrics, with open reporting how many
// sessions it holds. Once per Metrics.
func (m *Metrics) ObserveGateway(open func() int) {
	if m == nil {
		return
	}
	m.addGateway(func() float64 { return float64(open()) })
}

// SessionOpened counts a session a gateway opened, how (SessionInitialized
// or SessionTaken).
func (m *Metrics) SessionOpened(how string) {
	if g := m.gatewayOf(); g != nil {
		g.sessions.WithLabelValues(how).Inc()
	}
}

// Handoff counts what a gateway handed to another replica: "answer",
// "message", "relay" or "round".
func (m *Metrics) Handoff(what string) {
	if g := m.gatewayOf(); g != nil {
		g.handoffs.WithLabelValues(what).Inc()
	}
}

// gatewayOf returns the gateway's metrics, nil if none were added.
func (m *Metrics) gatewayOf() *gatewayMetrics {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gateway
}

// The statuses a task of the gateway's reaches.
var taskStatuses = []string{"working", "input_required", "completed", "failed", "cancelled"}

type taskMetrics struct {
	reached *prometheus.CounterVec
}

// ObserveTasks adds the metrics of a gateway's tasks (tool calls run as MCP
// tasks), with running reporting how many this process runs, by status
// (working or input_required). Once per Metrics.
func (m *Metrics) ObserveTasks(running func() map[string]int) {
	if m == nil {
		return
	}
	t := &taskMetrics{reached: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "airlock_gateway_tasks_total",
		Help: "Tasks of this gateway by the status they reached: working (created), completed, failed, cancelled.",
	}, []string{"status"})}
	for _, s := range taskStatuses {
		if s != "input_required" {
			t.reached.WithLabelValues(s)
		}
	}
	m.reg.MustRegister(t.reached)
	for _, s := range []string{"working", "input_required"} {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "airlock_gateway_tasks_running",
			Help:        "Tasks whose calls this gateway runs now, by status: working, or input_required (waiting for the client's answers).",
			ConstLabels: prometheus.Labels{"status": s},
		}, func() float64 { return float64(running()[s]) }))
	}
	m.mu.Lock()
	m.tasks = t
	m.mu.Unlock()
}

// Task counts a task of the gateway's that reached status.
func (m *Metrics) Task(status string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	t := m.tasks
	m.mu.Unlock()
	if t != nil {
		t.reached.WithLabelValues(status).Inc()
	}
}
