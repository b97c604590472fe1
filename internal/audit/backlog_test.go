package audit_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/sqlite"
)

// logLines returns the records of the JSON log l with message msg.
func logLines(t *testing.T, l *testenv.Buffer, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// newLog returns a JSON log the test reads while the writer writes it.
func newLog() (*testenv.Buffer, *slog.Logger) {
	l := &testenv.Buffer{}
	return l, slog.New(slog.NewJSONHandler(l, nil))
}

// waitFor waits until cond holds, for up to a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// numbered appends events "n" numbered from..to-1 in DurationMS.
func numbered(t *testing.T, w *audit.Writer, from, to int) {
	for i := from; i < to; i++ {
		w.Append(t.Context(), store.Event{Event: "n", DurationMS: int64(i)})
	}
}

// wantNumbered checks that trail holds exactly the events numbered
// from..to-1, in order, and that its chain is intact.
func wantNumbered(t *testing.T, trail store.Audit, from, to int) {
	t.Helper()
	events := stored(t, trail)
	if len(events) != to-from {
		t.Fatalf("the trail has %d events, want %d (numbered %d to %d)", len(events), to-from, from, to-1)
	}
	for i, e := range events {
		if e.DurationMS != int64(from+i) {
			t.Fatalf("event %d of the trail is number %d, want %d: events lost, repeated or out of order", i, e.DurationMS, from+i)
		}
	}
	if r, err := trail.Verify(t.Context()); err != nil || !r.Intact {
		t.Errorf("Verify = %+v, %v; want an intact chain", r, err)
	}
}

// TestWriterHoldsWhileTheTrailIsLocked: while another connection holds
// the SQLite database's write lock, the trail refuses the writer's batch;
// the writer holds it, and the events appended meanwhile behind it, and
// writes them all, in order and chained, once the lock is released.
func TestWriterHoldsWhileTheTrailIsLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	lock, err := raw.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}

	logs, logger := newLog()
	w := audit.New(db.Audit(), &audit.Options{Logger: logger})
	numbered(t, w, 0, 100)
	// The write waits for the lock as long as SQLite's busy timeout, then
	// fails.
	waitFor(t, "the writer to report the locked trail", func() bool {
		return strings.Contains(logs.String(), "cannot write the audit trail")
	})
	numbered(t, w, 100, 200)
	if _, err := lock.ExecContext(t.Context(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	closeWriter(t, w)

	wantNumbered(t, db.Audit(), 0, 200)
	if len(logLines(t, logs, "the audit trail is written again")) != 1 {
		t.Errorf("log does not report that the trail is written again:\n%s", logs)
	}
}

// outage is a trail that refuses every write while down, like a database
// that cannot be reached, and notes the first event of each write.
type outage struct {
	store.Audit
	down  atomic.Bool
	first atomic.Int64 // the number of the first event of the last write refused
}

func (o *outage) Append(ctx context.Context, events ...store.Event) error {
	if o.down.Load() {
		o.first.Store(events[0].DurationMS)
		return errors.New("connection refused")
	}
	return o.Audit.Append(ctx, events...)
}

// TestWriterDropsTheOldest: while the trail is down the writer holds up
// to its bound of events, taking more than its queue holds without
// making Append wait; past the bound the oldest are dropped and the log
// says how many; once the trail is back the newest are written, in order.
func TestWriterDropsTheOldest(t *testing.T) {
	const total, held = 30_000, 20_000
	trail := &outage{Audit: openTrail(t)}
	trail.down.Store(true)
	trail.first.Store(-1)
	logs, logger := newLog()
	w := audit.New(trail, &audit.Options{Logger: logger})
	numbered(t, w, 0, total)
	// Once the writer tries the oldest of the newest events it can hold,
	// it holds all of those and no other.
	waitFor(t, "a write to start at the oldest event held", func() bool { return trail.first.Load() == total-held })
	trail.down.Store(false)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}

	wantNumbered(t, trail.Audit, total-held, total)
	dropped := 0.0
	for _, rec := range logLines(t, logs, "audit events dropped: too many were held while the audit trail could not be written") {
		dropped += rec["events"].(float64)
	}
	if dropped != total-held {
		t.Errorf("the log reports %v events dropped, want %d:\n%s", dropped, total-held, logs)
	}
}

// TestWriterCloseGivesUp: with the trail down, Close returns when its
// context ends and says how many events are left; the writer stops
// writing again, logs them, and its goroutine ends.
func TestWriterCloseGivesUp(t *testing.T) {
	trail := &outage{Audit: openTrail(t)}
	trail.down.Store(true)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	logs, logger := newLog()
	w := audit.New(trail, &audit.Options{Logger: logger})
	numbered(t, w, 0, 10)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := w.Close(ctx); err == nil || !strings.Contains(err.Error(), "not written completely") || !strings.Contains(err.Error(), "10 events left") {
		t.Errorf("Close with the trail down = %v, want an error that says 10 events are left", err)
	}
	// Close again waits for the writer, which gave up.
	ctx, cancel = context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := w.Close(ctx); err == nil {
		t.Error("Close after the writer gave up = nil, want an error")
	}
	left := logLines(t, logs, "audit events not written before closing: the audit trail cannot be written")
	if len(left) != 1 || left[0]["events"] != 10.0 {
		t.Errorf("log of the events left = %v, want one line with events=10:\n%s", left, logs)
	}
	if events := stored(t, trail.Audit); len(events) != 0 {
		t.Errorf("the trail has %d events, want none", len(events))
	}
}

// tee is a trail that sends events on to another, as the OpenTelemetry
// export does, and keeps what it is given.
type tee struct {
	next store.Audit
	mu   sync.Mutex
	seen []int64
}

func (c *tee) Append(ctx context.Context, events ...store.Event) error {
	c.mu.Lock()
	for _, e := range events {
		c.seen = append(c.seen, e.DurationMS)
	}
	c.mu.Unlock()
	return c.next.Append(ctx, events...)
}

func (c *tee) Events(ctx context.Context, since time.Time, limit int) ([]store.Event, error) {
	return c.next.Events(ctx, since, limit)
}

func (c *tee) Tail(ctx context.Context, since time.Time, after int64, limit int) (store.EventPage, error) {
	return c.next.Tail(ctx, since, after, limit)
}

func (c *tee) Verify(ctx context.Context) (store.ChainReport, error) { return c.next.Verify(ctx) }
func (c *tee) Unwrap() store.Audit                                   { return c.next }

// TestWriterSendsOnce: a trail that wraps another is given each event
// once, though the writer writes it several times while the trail it
// wraps is down: the events of a failed write, and those held behind it.
func TestWriterSendsOnce(t *testing.T) {
	trail := &outage{Audit: openTrail(t)}
	trail.down.Store(true)
	trail.first.Store(-1)
	c := &tee{next: trail}
	w := audit.New(c, nil)
	numbered(t, w, 0, 5)
	waitFor(t, "a write to fail", func() bool { return trail.first.Load() == 0 })
	numbered(t, w, 5, 10)
	// Two more tries, the events appended since held behind the first.
	trail.first.Store(-1)
	waitFor(t, "the writer to try again", func() bool { return trail.first.Load() == 0 })
	trail.first.Store(-1)
	waitFor(t, "the writer to try again", func() bool { return trail.first.Load() == 0 })
	trail.down.Store(false)
	closeWriter(t, w)

	wantNumbered(t, trail.Audit, 0, 10)
	c.mu.Lock()
	defer c.mu.Unlock()
	if diff := cmp.Diff([]int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, c.seen); diff != "" {
		t.Errorf("the events the wrapping trail was given, each once (-want +got):\n%s", diff)
	}
}
