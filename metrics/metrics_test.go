package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/metrics"
)

// TestNilMeasuresNothing: a host without metrics calls the same methods.
func TestNilMeasuresNothing(t *testing.T) {
	var m *metrics.Metrics
	m.Call("fs", "fs__read_file", "ok", time.Millisecond)
	m.Content("fs", "resource", "ok")
	m.TokenRefresh("fs", errors.New("refused"))
	m.Observe(func(context.Context) metrics.State {
		t.Error("a nil Metrics asked for the state")
		return metrics.State{}
	})
	m.ObserveGateway(func() int {
		t.Error("a nil Metrics asked for the sessions")
		return 0
	})
	m.SessionOpened(metrics.SessionTaken)
	m.Handoff("answer")
}

// TestGatewayExposition: a gateway's sessions and hand-offs, every label
// value present from the start (a dashboard's rate needs the zero), and
// nothing counted before a gateway is observed.
func TestGatewayExposition(t *testing.T) {
	m := metrics.New()
	m.SessionOpened(metrics.SessionTaken) // no gateway yet: not counted
	m.ObserveGateway(func() int { return 3 })
	m.SessionOpened(metrics.SessionInitialized)
	m.SessionOpened(metrics.SessionTaken)
	m.Handoff("answer")
	m.Handoff("answer")
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		"airlock_gateway_sessions 3\n",
		`airlock_gateway_sessions_opened_total{how="initialized"} 1` + "\n",
		`airlock_gateway_sessions_opened_total{how="taken"} 1` + "\n",
		`airlock_gateway_handoffs_total{what="answer"} 2` + "\n",
		`airlock_gateway_handoffs_total{what="round"} 0` + "\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("exposition has no %q:\n%s", want, body)
		}
	}
}

// TestExposition: what the handler writes, in the text format a scraper
// reads; gauges the host could not count (-1) are left out rather than
// reported as 0.
func TestExposition(t *testing.T) {
	m := metrics.New()
	scrape := func() string {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body, _ := io.ReadAll(rec.Result().Body)
		return string(body)
	}
	// Before a host is observed: counters only, no host gauges.
	if body := scrape(); strings.Contains(body, "airlock_server_status") || strings.Contains(body, "airlock_requests_in_flight") {
		t.Errorf("gauges before a host is observed:\n%s", body)
	}
	m.Call("fs", "fs__read_file", "ok", 3*time.Millisecond)
	m.Call("fs", "fs__read_file", "ok", time.Second)
	m.TokenRefresh("remote", nil)
	m.TokenRefresh("remote", errors.New("invalid_grant"))
	m.Content("fs", "prompt", "denied")
	m.Observe(func(context.Context) metrics.State {
		return metrics.State{InFlight: 3, ApprovalsPending: 2, UnknownOutcomes: -1, StoreUp: false,
			Servers: []metrics.Server{{ID: "fs", Status: "degraded", InFlight: 2, Queued: 1, Limit: 4}}}
	})
	body := scrape()
	for _, line := range []string{
		`airlock_calls_total{class="ok",server="fs",tool="fs__read_file"} 2`,
		`airlock_call_duration_seconds_bucket{class="ok",server="fs",le="0.005"} 1`,
		`airlock_call_duration_seconds_bucket{class="ok",server="fs",le="1"} 2`,
		`airlock_call_duration_seconds_count{class="ok",server="fs"} 2`,
		`airlock_content_requests_total{class="denied",kind="prompt",server="fs"} 1`,
		`airlock_token_refreshes_total{result="ok",server="remote"} 1`,
		`airlock_token_refreshes_total{result="failed",server="remote"} 1`,
		`airlock_requests_in_flight 3`,
		`airlock_approvals_pending 2`,
		`airlock_server_calls_in_flight{server="fs"} 2`,
		`airlock_server_calls_queued{server="fs"} 1`,
		`airlock_server_max_concurrency{server="fs"} 4`,
		`airlock_server_status{server="fs",status="degraded"} 1`,
		`airlock_server_status{server="fs",status="ready"} 0`,
		`airlock_store_up 0`,
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("no line %s", line)
		}
	}
	if strings.Contains(body, "airlock_journal_unknown_outcomes ") {
		t.Errorf("a count the host could not make is reported:\n%s", body)
	}
}
