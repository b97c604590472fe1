// Package metrics keeps what a host measures about itself for Prometheus:
// the calls it ran, by server, tool and result class, how long they took,
// what is in flight and waiting, its servers' states, the approvals waiting
// for a person, the journal's unknown outcomes and the OAuth token
// refreshes. `airlock serve --http` serves them at /metrics.
//
// Labels are bounded by the configuration and the catalog: server ids,
// local tool names of the catalog (a name the model made up is counted
// under tool ""), result classes. No label ever holds arguments, URIs,
// tenants or users.
//
// A nil *Metrics measures nothing: every method is then a no-op, so that
// a host without metrics pays for none.
package metrics

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// A Metrics is one registry of Airlock's metrics. Create it with New. Its
// methods are safe for concurrent use.
type Metrics struct {
	reg       *prometheus.Registry
	calls     *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	content   *prometheus.CounterVec
	refreshes *prometheus.CounterVec

	mu      sync.Mutex
	source  func(context.Context) State // nil until a host is observed
	gateway *gatewayMetrics             // nil until a gateway is observed (gateway.go)
	tasks   *taskMetrics                // nil until a gateway's tasks are observed (gateway.go)
}

// A State is what a host reports when it is scraped: the gauges.
type State struct {
	// Servers are the host's servers, in configuration order.
	Servers []Server
	// InFlight counts the host's requests in flight: tool calls, reads,
	// prompt gets and completions.
	InFlight int
	// TenantInFlight counts the calls that hold one of their tenant's
	// limits.max_concurrent_per_tenant places, and TenantsAtLimit the
	// tenants that have none left.
	TenantInFlight, TenantsAtLimit int
	// ApprovalsPending counts approval requests waiting for a person, and
	// UnknownOutcomes the journal's calls whose outcome is unknown and
	// that nobody has resolved yet; -1 when the store could not say.
	ApprovalsPending, UnknownOutcomes int
	// StoreUp reports whether the store answered the scrape's counts.
	StoreUp bool
}

// A Server is one server's gauges.
type Server struct {
	ID     string
	Status string // starting, ready, degraded, failed, stopped, auth_required
	// InFlight counts the calls holding one of its max_concurrency slots
	// (of every partition, for a server with one connection per user),
	// Queued the calls waiting for one, and Limit is max_concurrency (per
	// partition).
	InFlight, Queued, Limit int
}

// statuses are the states a server may report, each exported as a series
// of airlock_server_status (1 for the one it is in), so that a dashboard
// can count servers by state without guessing what states exist.
var statuses = []string{"starting", "ready", "degraded", "failed", "stopped", "auth_required"}

// scrapeTimeout bounds how long a scrape waits for the host's state (the
// store's counts).
const scrapeTimeout = 5 * time.Second

// New returns a registry with Airlock's metrics, and Go's and the
// process's own.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airlock_calls_total",
			Help: "Tool calls the host ran, by server, local tool name and result class (ok, tool_error, denied, busy, outcome_unknown, …). A call for a tool not in the catalog has server and tool empty.",
		}, []string{"server", "tool", "class"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "airlock_call_duration_seconds",
			Help:    "How long tool calls took, from Call to result (waiting for a slot and for a person included), by server and result class.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"server", "class"}),
		content: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airlock_content_requests_total",
			Help: "Resource reads, prompt gets and completions the host ran, by server, kind (resource, prompt, completion) and result class.",
		}, []string{"server", "kind", "class"}),
		refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airlock_token_refreshes_total",
			Help: "OAuth access tokens renewed for remote servers (refresh_token or client_credentials), by server and result (ok, failed).",
		}, []string{"server", "result"}),
	}
	m.reg.MustRegister(m.calls, m.latency, m.content, m.refreshes, gauges{m},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Call counts a finished tool call.
func (m *Metrics) Call(server, tool, class string, took time.Duration) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(server, tool, class).Inc()
	m.latency.WithLabelValues(server, class).Observe(took.Seconds())
}

// Content counts a finished resource read ("resource"), prompt get
// ("prompt") or completion ("completion").
func (m *Metrics) Content(server, kind, class string) {
	if m == nil {
		return
	}
	m.content.WithLabelValues(server, kind, class).Inc()
}

// TokenRefresh counts an access token renewed for server, or that could
// not be.
func (m *Metrics) TokenRefresh(server string, err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "failed"
	}
	m.refreshes.WithLabelValues(server, result).Inc()
}

// Observe makes source the host whose State a scrape reports (the last
// one observed wins).
func (m *Metrics) Observe(source func(context.Context) State) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.source = source
	m.mu.Unlock()
}

// Handler serves the metrics in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Gatherer is the registry, for callers that serve or push it themselves.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// gauges collects a State from the observed host at each scrape.
type gauges struct{ m *Metrics }

var (
	descInFlight = prometheus.NewDesc("airlock_requests_in_flight",
		"Requests the host is running: tool calls, reads, prompt gets and completions.", nil, nil)
	descServerInFlight = prometheus.NewDesc("airlock_server_calls_in_flight",
		"Calls holding one of the server's max_concurrency slots (of every partition).", []string{"server"}, nil)
	descServerQueued = prometheus.NewDesc("airlock_server_calls_queued",
		"Calls waiting for one of the server's slots (at most queue_timeout).", []string{"server"}, nil)
	descServerLimit = prometheus.NewDesc("airlock_server_max_concurrency",
		"The server's max_concurrency: slots per partition.", []string{"server"}, nil)
	descServerStatus = prometheus.NewDesc("airlock_server_status",
		"1 for the state the server is in, 0 for the others.", []string{"server", "status"}, nil)
	descTenantInFlight = prometheus.NewDesc("airlock_tenant_calls_in_flight",
		"Calls holding a place of their tenant's limits.max_concurrent_per_tenant, all tenants together.", nil, nil)
	descTenantsAtLimit = prometheus.NewDesc("airlock_tenants_at_limit",
		"Tenants with all of their limits.max_concurrent_per_tenant places taken.", nil, nil)
	descApprovals = prometheus.NewDesc("airlock_approvals_pending",
		"Approval requests waiting for a person.", nil, nil)
	descUnknown = prometheus.NewDesc("airlock_journal_unknown_outcomes",
		"Journaled calls whose outcome is unknown and not yet resolved by a person (airlock recovery list).", nil, nil)
	descStoreUp = prometheus.NewDesc("airlock_store_up",
		"1 if the store (journal, approvals, audit trail) answered this scrape, 0 if not: while it is down, calls that need the journal are refused.", nil, nil)
)

func (g gauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInFlight, descServerInFlight, descServerQueued, descServerLimit,
		descServerStatus, descTenantInFlight, descTenantsAtLimit, descApprovals, descUnknown, descStoreUp} {
		ch <- d
	}
}

func (g gauges) Collect(ch chan<- prometheus.Metric) {
	g.m.mu.Lock()
	source := g.m.source
	g.m.mu.Unlock()
	if source == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	s := source(ctx)
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	gauge(descInFlight, s.InFlight)
	gauge(descTenantInFlight, s.TenantInFlight)
	gauge(descTenantsAtLimit, s.TenantsAtLimit)
	if s.ApprovalsPending >= 0 {
		gauge(descApprovals, s.ApprovalsPending)
	}
	if s.UnknownOutcomes >= 0 {
		gauge(descUnknown, s.UnknownOutcomes)
	}
	up := 0
	if s.StoreUp {
		up = 1
	}
	gauge(descStoreUp, up)
	for _, srv := range s.Servers {
		gauge(descServerInFlight, srv.InFlight, srv.ID)
		gauge(descServerQueued, srv.Queued, srv.ID)
		gauge(descServerLimit, srv.Limit, srv.ID)
		for _, st := range statuses {
			v := 0
			if st == srv.Status {
				v = 1
			}
			gauge(descServerStatus, v, srv.ID, st)
		}
	}
}
