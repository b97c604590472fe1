package airlock_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/metrics"
)

// metricValue gathers m and returns the value of the series of family name
// with exactly labels (a counter's, a gauge's, or a histogram's count); a
// series that does not exist is 0.
func metricValue(t *testing.T, m *metrics.Metrics, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			if !sameLabels(s.GetLabel(), labels) {
				continue
			}
			switch {
			case s.Counter != nil:
				return s.GetCounter().GetValue()
			case s.Gauge != nil:
				return s.GetGauge().GetValue()
			case s.Histogram != nil:
				return float64(s.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}

func sameLabels(got []*dto.LabelPair, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, l := range got {
		if v, ok := want[l.GetName()]; !ok || v != l.GetValue() {
			return false
		}
	}
	return true
}

// TestMetricsOfCalls: a host's metrics count its calls by server, tool and
// class, and report while they run the calls holding the server's slots,
// waiting for one, and holding their tenant's places; a call cancelled
// after it was sent shows up as an unknown outcome of the journal.
func TestMetricsOfCalls(t *testing.T) {
	srv := testServer(t, "sdk", "sdk")
	srv.MaxConcurrency = 1
	srv.QueueTimeout = time.Minute
	srv.AllowedResources = []string{"test://small"}
	cfg := newConfig(t, srv)
	cfg.Limits.MaxConcurrentPerTenant = 2
	classify(cfg, "sdk", "read", "echo")
	m := metrics.New()
	h, err := airlock.Open(context.Background(), cfg, &airlock.Options{StopGrace: 500 * time.Millisecond, Metrics: m,
		Principal: airlock.Principal{Tenant: "acme", User: "alice"}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	server := map[string]string{"server": "sdk"}
	if got := metricValue(t, m, "airlock_server_status", map[string]string{"server": "sdk", "status": "ready"}); got != 1 {
		t.Errorf("airlock_server_status{ready} = %v, want 1", got)
	}
	if got := metricValue(t, m, "airlock_server_max_concurrency", server); got != 1 {
		t.Errorf("airlock_server_max_concurrency = %v, want 1", got)
	}

	wantStatus(t, call(t, h, "sdk__echo", `{"text":"one"}`), airlock.OK)
	wantStatus(t, call(t, h, "sdk__fail", `{}`), airlock.ToolError)
	wantStatus(t, call(t, h, "sdk__nope", `{}`), airlock.UnknownTool)
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"server": "sdk", "tool": "sdk__echo", "class": "ok"}, 1},
		{map[string]string{"server": "sdk", "tool": "sdk__fail", "class": "tool_error"}, 1},
		{map[string]string{"server": "", "tool": "", "class": "unknown_tool"}, 1},
	} {
		if got := metricValue(t, m, "airlock_calls_total", c.labels); got != c.want {
			t.Errorf("airlock_calls_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
	if got := metricValue(t, m, "airlock_call_duration_seconds", map[string]string{"server": "sdk", "class": "ok"}); got != 1 {
		t.Errorf("airlock_call_duration_seconds{ok} count = %v, want 1", got)
	}
	// Reads are counted apart from calls, without their URIs.
	if r := h.ReadResource(context.Background(), h.Snapshot(), airlock.Read{URI: "test://small"}); r.Status != airlock.OK {
		t.Fatalf("read test://small: %s %v", r.Status, r.Err)
	}
	if r := h.ReadResource(context.Background(), h.Snapshot(), airlock.Read{URI: "test://huge"}); r.Status == airlock.OK {
		t.Fatal("read a resource outside allowed_resources")
	}
	if got := metricValue(t, m, "airlock_content_requests_total", map[string]string{"server": "sdk", "kind": "resource", "class": "ok"}); got != 1 {
		t.Errorf("airlock_content_requests_total{resource, ok} = %v, want 1", got)
	}
	if got := metricValue(t, m, "airlock_content_requests_total", map[string]string{"server": "", "kind": "resource", "class": "denied"}); got != 1 {
		t.Errorf("airlock_content_requests_total{resource, denied} = %v, want 1", got)
	}

	// Two slow calls: the first holds the server's only slot and has
	// reached the server, the second waits for the slot; both hold a place
	// of tenant acme, which has no third. Each has its own context: a
	// shared one is cancelled child by child, so the first could end and
	// free its slot before the second saw the cancellation.
	var wg sync.WaitGroup
	results := make([]*airlock.Result, 2)
	cancels := make([]context.CancelFunc, 2)
	slow := func(i int) {
		ctx, cancel := context.WithCancel(context.Background())
		cancels[i] = cancel
		wg.Go(func() {
			results[i] = h.Call(ctx, h.Snapshot(), airlock.Call{Name: "sdk__slow", Arguments: json.RawMessage(`{}`)})
		})
	}
	slow(0)
	waitFor(t, 10*time.Second, "the first slow call to reach the server", func() bool {
		return slices.ContainsFunc(calls(t, srv), func(c string) bool { return strings.HasPrefix(c, "call slow ") })
	})
	slow(1)
	waitFor(t, 10*time.Second, "one call in the slot and one waiting", func() bool {
		return metricValue(t, m, "airlock_server_calls_in_flight", server) == 1 &&
			metricValue(t, m, "airlock_server_calls_queued", server) == 1
	})
	for name, want := range map[string]float64{"airlock_requests_in_flight": 2, "airlock_tenant_calls_in_flight": 2, "airlock_tenants_at_limit": 1} {
		if got := metricValue(t, m, name, map[string]string{}); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	cancels[1]()
	cancels[0]()
	wg.Wait()
	for name, want := range map[string]float64{"airlock_requests_in_flight": 0, "airlock_tenant_calls_in_flight": 0, "airlock_tenants_at_limit": 0} {
		if got := metricValue(t, m, name, map[string]string{}); got != want {
			t.Errorf("after the calls: %s = %v, want %v", name, got, want)
		}
	}
	if got := metricValue(t, m, "airlock_server_calls_queued", server); got != 0 {
		t.Errorf("after the calls: airlock_server_calls_queued = %v, want 0", got)
	}
	// The one that was sent is a write whose outcome is unknown (the
	// journal keeps it for a person); the one that waited never went out.
	if results[0].Status != airlock.OutcomeUnknown || results[1].Status != airlock.Cancelled {
		t.Fatalf("results %s and %s, want outcome_unknown and cancelled", results[0].Status, results[1].Status)
	}
	if n := len(calls(t, srv)); n != 3 {
		t.Errorf("the server saw %d calls, want 3 (echo, fail, one slow): %q", n, calls(t, srv))
	}
	if got := metricValue(t, m, "airlock_journal_unknown_outcomes", map[string]string{}); got != 1 {
		t.Errorf("airlock_journal_unknown_outcomes = %v, want 1", got)
	}
	if got := metricValue(t, m, "airlock_calls_total", map[string]string{"server": "sdk", "tool": "sdk__slow", "class": "outcome_unknown"}); got != 1 {
		t.Errorf("airlock_calls_total{sdk__slow, outcome_unknown} = %v, want 1", got)
	}
}
