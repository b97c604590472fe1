package airlock_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/metrics"
	"github.com/airlockhq/airlock/store"
)

// TestPostgresRestart: while the store's PostgreSQL is down, a write
// (which needs its place counted across replicas and its intent journaled)
// is refused and never sent, with a message that does not show the model
// the database's address; a read still runs, within this replica's own
// limits; once PostgreSQL is back the same host journals writes again,
// without a restart, and the journal holds exactly the writes that were
// sent.
func TestPostgresRestart(t *testing.T) {
	pg := testenv.StartOwnPostgres(t)
	var writes atomic.Int64
	s := mcp.NewServer(&mcp.Implementation{Name: "w", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "write", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			writes.Add(1)
			return &mcp.CallToolResult{Content: text("written")}, nil
		})
	s.AddTool(&mcp.Tool{Name: "read", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text("read")}, nil
		})
	cfg := newConfig(t, inProcess)
	classify(cfg, "c", "write", "write")
	classify(cfg, "c", "read", "read")
	cfg.Store.URL = pg.URL
	m := metrics.New()
	h := openIn(t, cfg, map[string]*mcp.Server{"c": s}, &airlock.Options{Metrics: m})
	wantStatus(t, call(t, h, "c__write", `{}`), airlock.OK)
	if up := metricValue(t, m, "airlock_store_up", map[string]string{}); up != 1 {
		t.Errorf("airlock_store_up = %v with PostgreSQL up, want 1", up)
	}

	pg.Stop()
	if up := metricValue(t, m, "airlock_store_up", map[string]string{}); up != 0 {
		t.Errorf("airlock_store_up = %v with PostgreSQL down, want 0", up)
	}
	r := call(t, h, "c__write", `{}`)
	wantStatus(t, r, airlock.Denied)
	if !strings.Contains(r.Content, "not sent") || !strings.Contains(r.Content, "try again later") ||
		strings.Contains(r.Content, "127.0.0.1") || strings.Contains(strings.ToLower(r.Content), "postgres") || strings.Contains(r.Content, "SQLSTATE") {
		t.Errorf("the model is told %q: want it not sent, to try again later, and no address or database", r.Content)
	}
	if n := writes.Load(); n != 1 {
		t.Errorf("the server got %d writes, want 1: a write was sent without its intent on disk", n)
	}
	wantStatus(t, call(t, h, "c__read", `{}`), airlock.OK)

	pg.Start()
	wantStatus(t, call(t, h, "c__write", `{}`), airlock.OK)
	if n := writes.Load(); n != 2 {
		t.Errorf("the server got %d writes, want 2", n)
	}
	recs := journalOf(t, cfg, h.StateDir())
	succeeded := 0
	for _, rec := range recs {
		if rec.Status == store.OutcomeSucceeded {
			succeeded++
		}
	}
	if len(recs) != 2 || succeeded != 2 {
		t.Errorf("journal after the restart: %d records, %d succeeded; want the 2 writes that were sent: %+v", len(recs), succeeded, recs)
	}
}
