package airlock_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/store"
)

// TestJournalKeepsRedactedArguments: a write's journal record keeps its
// arguments for the person who finds out whether it took effect: secrets
// redacted before anything is cut, long strings cut, and arguments too
// large even then replaced by a note; the hash still covers the whole
// value. A write whose outcome is known keeps none.
func TestJournalKeepsRedactedArguments(t *testing.T) {
	const secret = "s3cr3t-journal-value-7"
	s := mcp.NewServer(&mcp.Implementation{Name: "hold", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "hold", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done() // no answer in time: the outcome is unknown
			return nil, ctx.Err()
		})
	s.AddTool(&mcp.Tool{Name: "done", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text("done")}, nil
		})
	srv := inProcess
	srv.RequestTimeout = 200 * time.Millisecond
	cfg := newConfig(t, srv)
	classify(cfg, "c", "write", "hold", "done")
	h := openIn(t, cfg, map[string]*mcp.Server{"c": s}, &airlock.Options{Secrets: []string{secret}})
	long := strings.Repeat("x", 70<<10)
	many := map[string]any{"text": "many"}
	for i := range 100 {
		many[fmt.Sprintf("k%03d", i)] = strings.Repeat("y", 2<<10)
	}
	manyJSON, _ := json.Marshal(many)
	var recs []store.Record
	st := h.Store() // which reads the outcomes it wrote, at once
	for _, args := range []string{
		`{"text":"short, with ` + secret + `"}`,
		`{"text":"` + long + secret + `", "path": "a.txt"}`,
		string(manyJSON),
	} {
		r := call(t, h, "c__hold", args)
		wantStatus(t, r, airlock.OutcomeUnknown)
		rec, err := st.Journal().Get(context.Background(), r.RecoveryID)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	var got []map[string]any
	for _, r := range recs {
		if strings.Contains(string(r.Arguments), secret) || len(r.Arguments) > 64<<10 {
			t.Errorf("record %s keeps %d bytes of arguments, or the secret", r.ID, len(r.Arguments))
		}
		var v map[string]any
		if err := json.Unmarshal(r.Arguments, &v); err != nil {
			t.Fatalf("record %s: arguments %q are not a JSON object: %v", r.ID, r.Arguments, err)
		}
		got = append(got, v)
	}
	if got[0]["text"] != "short, with [REDACTED:secret]" {
		t.Errorf("short arguments = %v, want them whole, the secret redacted", got[0])
	}
	if text, _ := got[1]["text"].(string); got[1]["path"] != "a.txt" || !strings.HasPrefix(text, "xxx") ||
		!strings.HasSuffix(text, fmt.Sprintf("… (%d more bytes)", len(long)+len("[REDACTED:secret]")-1024)) {
		t.Errorf("long arguments = %.200v…, want the path and the text cut at 1 KiB, after redaction", got[1])
	}
	if note, _ := got[2]["…"].(string); len(got[2]) != 1 || !strings.Contains(note, "too many to keep") {
		t.Errorf("too many arguments = %.200v…, want a note in their place", got[2])
	}

	wantStatus(t, call(t, h, "c__done", `{"text":"known"}`), airlock.OK)
	all, err := st.Journal().Records(context.Background(), store.RecordFilter{All: true})
	if err != nil || len(all) != 4 {
		t.Fatalf("Records = %d, %v; want 4", len(all), err)
	}
	if done := all[3]; done.Status != store.OutcomeSucceeded || done.Arguments != nil {
		t.Errorf("a write that succeeded: %s with arguments %q; want none kept", done.Status, done.Arguments)
	}
}

// TestCancelledBeforeSent: a write whose caller cancelled it before it was
// sent (while it waited for its turn, say) is not sent, and leaves no
// intent: it ends cancelled.
func TestCancelledBeforeSent(t *testing.T) {
	srv := testServer(t, "s", "sdk")
	cfg := newConfig(t, srv)
	classify(cfg, "s", "write", "echo")
	h := open(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 20 {
		r := h.Call(ctx, h.Snapshot(), airlock.Call{Name: "s__echo", Arguments: json.RawMessage(`{"text":"never"}`)})
		wantStatus(t, r, airlock.Cancelled)
	}
	if got := calls(t, srv); len(got) != 0 {
		t.Errorf("the server received %q, want nothing", got)
	}
	recs, err := h.Store().Journal().Records(context.Background(), store.RecordFilter{All: true})
	if err != nil || len(recs) != 0 {
		t.Errorf("journal records = %+v, %v; want none", recs, err)
	}
}

// cancellingJournal is a journal that cancels a call's context while it
// makes the call's intent durable, as a caller's cancellation can arrive.
type cancellingJournal struct {
	store.Journal
	cancel context.CancelFunc
}

func (j cancellingJournal) Begin(ctx context.Context, in store.Intent) error {
	j.cancel()
	return j.Journal.Begin(ctx, in)
}

type cancellingStore struct {
	store.Store
	j cancellingJournal
}

func (s cancellingStore) Journal() store.Journal { return s.j }

// TestCancelledWhileJournaled: a write whose caller cancels it while its
// intent is made durable is not sent either: its intent ends rejected.
func TestCancelledWhileJournaled(t *testing.T) {
	c := &counted{}
	cfg := newConfig(t, inProcess)
	classify(cfg, "c", "write", "note")
	ctx, cancel := context.WithCancel(context.Background())
	st := sharedStore(t)
	h := openIn(t, cfg, map[string]*mcp.Server{"c": c.server()},
		&airlock.Options{Store: cancellingStore{Store: st, j: cancellingJournal{Journal: st.Journal(), cancel: cancel}}})
	r := h.Call(ctx, h.Snapshot(), airlock.Call{Name: "c__note", Arguments: json.RawMessage(`{"text":"never"}`)})
	wantStatus(t, r, airlock.Cancelled)
	if n := c.calls.Load(); n != 0 {
		t.Errorf("the server received %d calls, want none", n)
	}
	recs, err := st.Journal().Records(context.Background(), store.RecordFilter{All: true})
	if err != nil || len(recs) != 1 || recs[0].Status != store.OutcomeRejected {
		t.Errorf("journal records = %+v, %v; want one, rejected", recs, err)
	}
}

// recoveringStore is a store whose journal, before it records an answer's
// outcome, has the intent ended unknown, as another process's recovery
// does when it takes a live host for dead (its PostgreSQL session, and so
// its writer lock, was lost to a restart of the database).
type recoveringStore struct{ store.Store }

func (s recoveringStore) Journal() store.Journal { return recoveringJournal{s.Store.Journal()} }

type recoveringJournal struct{ store.Journal }

func (j recoveringJournal) End(ctx context.Context, id string, o store.Outcome, detail string) error {
	if o != store.OutcomeUnknown {
		if err := j.Journal.End(ctx, id, store.OutcomeUnknown, "the process that sent the call ended before its outcome was recorded"); err != nil {
			return err
		}
	}
	return j.Journal.End(ctx, id, o, detail)
}

// EndLater is End for an outcome nobody waits for, as the store's own
// EndLater (on its goroutines) gives it.
func (j recoveringJournal) EndLater(id string, o store.Outcome, detail string, done func(error)) {
	if err := j.Journal.End(context.Background(), id, store.OutcomeUnknown, "the process that sent the call ended before its outcome was recorded"); err != nil {
		done(err)
		return
	}
	j.Journal.(store.LaterEnder).EndLater(id, o, detail, done)
}

// TestOutcomeKeptWhenRecoveredMeanwhile: a call whose intent another
// process ended unknown while the call was under way here ends as the
// server answered, and its record, unknown for a person to resolve, says
// what the server answered, as evidence, instead of losing it.
func TestOutcomeKeptWhenRecoveredMeanwhile(t *testing.T) {
	st, err := airlock.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := &counted{}
	h := openIn(t, newConfig(t, inProcess), map[string]*mcp.Server{"c": c.server()}, &airlock.Options{Store: recoveringStore{st}})
	wantStatus(t, call(t, h, "c__note", `{"text":"x"}`), airlock.OK)
	h.Close()
	recs := records(t, st)
	if len(recs) != 1 || recs[0].Status != store.OutcomeUnknown {
		t.Fatalf("journal = %+v, want one unknown record", recs)
	}
	if !strings.Contains(recs[0].LateAnswer, "succeeded") {
		t.Errorf("the record says %q, want what the server answered (succeeded)", recs[0].LateAnswer)
	}
}
