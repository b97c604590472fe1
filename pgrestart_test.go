package airlock_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
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
	s, cfg := writesAndReads(t, pg.URL, &writes)
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
	recs := records(t, h.Store()) // which reads the outcomes the host wrote
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

// writesAndReads returns a server with the tools write, which counts its
// calls in writes, and read, and the configuration of a host on the store
// at url that has it as server c, policy classifying the tools.
func writesAndReads(t *testing.T, url string, writes *atomic.Int64) (*mcp.Server, *config.Config) {
	t.Helper()
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
	cfg.Store.URL = url
	return s, cfg
}

// Phases of TestPostgresRestartUnderLoad: a call is judged by the phases
// it began and ended in.
const (
	pgUp       int32 = iota // before the stop
	pgStopping              // while the server stops
	pgDown                  // from when it has stopped
	pgStarting              // while it starts (it may answer before the start returns)
	pgBack                  // from when it has started again
)

// A loadCall is one call of TestPostgresRestartUnderLoad, and its result.
type loadCall struct {
	id       string // the call's tool call id, and its argument "id"
	tool     string
	from, to int32 // the phase it began and ended in
	r        *airlock.Result
}

// TestPostgresRestartUnderLoad: while several goroutines keep making
// journaled writes and reads, the store's PostgreSQL is stopped and
// started again under the host. While it is down every write is refused,
// denied with a message that says it was not sent and to try again later,
// and never reaches the server; reads keep running within this replica's
// limits; no call hangs. Once it is back, writes are journaled and succeed
// again without restarting the host. The journal holds every write the
// server received, once, and no other but those whose outcome the host
// could not record; and the audit events of the calls made while the
// database was down are in the trail once it is back, in an intact chain.
func TestPostgresRestartUnderLoad(t *testing.T) {
	pg := testenv.StartOwnPostgres(t)
	var (
		mu       sync.Mutex
		received = map[string]int{} // the writes the server got, by id, and how often
	)
	s := mcp.NewServer(&mcp.Implementation{Name: "w", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "write", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ ID string }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			mu.Lock()
			received[in.ID]++
			mu.Unlock()
			return &mcp.CallToolResult{Content: text("written")}, nil
		})
	s.AddTool(&mcp.Tool{Name: "read", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text("read")}, nil
		})
	srv := inProcess
	// Room for every worker's call beside the places of those whose lease
	// could not be given back while the database was down, which stay
	// taken until their lease expires.
	srv.MaxConcurrency = 32
	cfg := newConfig(t, srv)
	classify(cfg, "c", "write", "write")
	classify(cfg, "c", "read", "read")
	cfg.Store.URL = pg.URL
	h := openIn(t, cfg, map[string]*mcp.Server{"c": s}, nil)

	// Three goroutines write and three read, each a call at a time, a
	// little apart (the database's outage must not fill the audit
	// writer's bound), until stopped.
	var (
		phase  atomic.Int32
		calls  []loadCall
		stop   = make(chan struct{})
		wg     sync.WaitGroup
		finish sync.Once
	)
	for g := range 6 {
		tool := "c__read"
		if g%2 == 0 {
			tool = "c__write"
		}
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				id := fmt.Sprintf("%s-%d-%d", tool, g, i)
				from := phase.Load()
				// Far past every queue_timeout and request_timeout: a
				// call that runs out of it hung.
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				r := h.Call(ctx, h.Snapshot(), airlock.Call{ID: id, Name: tool, Arguments: json.RawMessage(`{"id":"` + id + `"}`)})
				cancel()
				mu.Lock()
				calls = append(calls, loadCall{id: id, tool: tool, from: from, to: phase.Load(), r: r})
				mu.Unlock()
			}
		})
	}
	end := func() {
		finish.Do(func() { close(stop) })
		wg.Wait()
	}
	defer end()
	// done reports whether 20 calls of tool or more began in phase p and
	// ended in it with status.
	done := func(tool string, p int32, status airlock.Kind) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			n := 0
			for _, c := range calls {
				if c.tool == tool && c.from == p && c.to == p && c.r.Status == status {
					n++
				}
			}
			return n >= 20
		}
	}

	waitFor(t, 2*time.Minute, "writes before the stop", done("c__write", pgUp, airlock.OK))
	phase.Store(pgStopping)
	pg.Stop()
	phase.Store(pgDown)
	waitFor(t, 2*time.Minute, "writes refused while PostgreSQL is down", done("c__write", pgDown, airlock.Denied))
	waitFor(t, 2*time.Minute, "reads while PostgreSQL is down", done("c__read", pgDown, airlock.OK))
	phase.Store(pgStarting)
	pg.Start()
	phase.Store(pgBack)
	waitFor(t, 2*time.Minute, "writes once PostgreSQL is back", done("c__write", pgBack, airlock.OK))
	end()

	// Every call got one result, and each had time to end.
	ids := map[string]bool{}
	byID := map[string]loadCall{}
	for _, c := range calls {
		if c.r == nil || ids[c.id] || ids[c.r.CallID] {
			t.Fatalf("call %s: result %+v: want one result per call, each with a call id of its own", c.id, c.r)
		}
		ids[c.id], ids[c.r.CallID] = true, true
		byID[c.id] = c
		msg := ""
		if c.r.Err != nil {
			msg = c.r.Err.Msg
		}
		switch {
		case c.r.Status == airlock.Cancelled:
			t.Errorf("call %s ran out of its two minutes: %s", c.id, msg)
		case c.from == pgDown && c.to == pgDown && c.tool == "c__write":
			if c.r.Status != airlock.Denied || !strings.Contains(c.r.Content, "not sent") || !strings.Contains(c.r.Content, "try again later") ||
				strings.Contains(c.r.Content, "127.0.0.1") || strings.Contains(strings.ToLower(c.r.Content), "postgres") || strings.Contains(c.r.Content, "SQLSTATE") {
				t.Errorf("write %s while PostgreSQL was down: %s %q; want it denied, not sent, to try again later, and no address or database", c.id, c.r.Status, c.r.Content)
			}
		case c.r.Status != airlock.OK && c.r.Status != airlock.Denied:
			// Around the stop and the start, a call may be refused; it
			// is never anything else.
			t.Errorf("call %s: %s (%s), want ok or denied", c.id, c.r.Status, msg)
		case c.tool == "c__read" && c.from == pgDown && c.to == pgDown && c.r.Status != airlock.OK:
			t.Errorf("read %s while PostgreSQL was down: %s (%s), want it run within this replica's limits", c.id, c.r.Status, msg)
		case c.from == pgBack && c.r.Status != airlock.OK:
			t.Errorf("%s %s once PostgreSQL was back: %s (%s), want ok", c.tool, c.id, c.r.Status, msg)
		case c.from == pgUp && c.to == pgUp && c.r.Status != airlock.OK:
			t.Errorf("%s %s before PostgreSQL stopped: %s (%s), want ok", c.tool, c.id, c.r.Status, msg)
		}
	}

	// The server got each write once, only those the host answered ok,
	// and none refused.
	for id, n := range received {
		if c, ok := byID[id]; n != 1 || !ok || c.r.Status != airlock.OK {
			t.Errorf("the server got write %s %d times, answered %v; want once, for a call answered ok", id, n, c.r)
		}
	}
	writes := 0
	for _, c := range calls {
		if c.tool == "c__write" && c.r.Status == airlock.OK {
			writes++
			if received[c.id] != 1 {
				t.Errorf("write %s answered ok, but the server got it %d times", c.id, received[c.id])
			}
		}
	}

	// The journal holds an intent for each write the server got, once.
	// One whose outcome could not be recorded (the database went away
	// while it ran) stays open, and so may one whose intent PostgreSQL
	// committed as it stopped, unseen by the host, which refused it.
	recs := records(t, h.Store()) // which reads the outcomes the host wrote
	journaled := map[string]bool{}
	open := 0
	for _, rec := range recs {
		c, ok := byID[rec.CallID]
		switch {
		case journaled[rec.CallID]:
			t.Errorf("the journal holds write %s twice", rec.CallID)
		case !ok:
			t.Errorf("the journal holds %+v, of no call made", rec)
		case rec.Status == store.OutcomeSucceeded && (c.r.Status != airlock.OK || received[rec.CallID] != 1):
			t.Errorf("the journal says write %s succeeded, but it ended %s and the server got it %d times", rec.CallID, c.r.Status, received[rec.CallID])
		case rec.Status == store.OutcomeOpen:
			open++
		case rec.Status != store.OutcomeSucceeded:
			t.Errorf("journal record of write %s: %s, want succeeded (or open, for an outcome not recorded)", rec.CallID, rec.Status)
		}
		journaled[rec.CallID] = true
	}
	for id := range received {
		if !journaled[id] {
			t.Errorf("the server got write %s, which the journal does not hold: a write was sent without its intent", id)
		}
	}
	t.Logf("%d calls, %d writes sent, %d journal records (%d left open)", len(calls), writes, len(recs), open)

	// The audit events of the calls made while the database was down
	// reach the trail once it is back, and its chain is intact.
	st, err := airlock.OpenConfiguredStore(cfg, h.StateDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// missing returns the calls made while it was down whose result is
	// not in the trail, and how many were made.
	missing := func() (ids []string, made int) {
		events, err := st.Audit().Events(t.Context(), time.Time{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		results := map[string]string{} // call id → class of its result event
		for _, e := range events {
			if id, ok := e.Fields["call"].(string); ok && e.Event == store.EventResult {
				results[id] = e.Class
			}
		}
		for _, c := range calls {
			if c.from == pgDown && c.to == pgDown {
				made++
				if results[c.r.CallID] != string(c.r.Status) {
					ids = append(ids, c.id)
				}
			}
		}
		return ids, made
	}
	lost, made := missing()
	for deadline := time.Now().Add(2 * time.Minute); len(lost) > 0 && time.Now().Before(deadline); lost, made = missing() {
		time.Sleep(100 * time.Millisecond)
	}
	if len(lost) > 0 {
		t.Errorf("two minutes after PostgreSQL came back, the audit trail lacks the results of %d of the %d calls made while it was down: %v",
			len(lost), made, lost)
	}
	if r, err := st.Audit().Verify(t.Context()); err != nil || !r.Intact {
		t.Errorf("audit Verify = %+v, %v; want an intact chain", r, err)
	}
}
