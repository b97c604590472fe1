package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/airlockhq/airlock/internal/canonical"
	"github.com/airlockhq/airlock/internal/redact"
	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/sqlite"
)

// counting is a trail that counts the batches it is given.
type counting struct {
	store.Audit
	batches atomic.Int64
}

func (c *counting) Append(ctx context.Context, events ...store.Event) error {
	c.batches.Add(1)
	return c.Audit.Append(ctx, events...)
}

// openTrail opens a real trail in a temporary directory.
func openTrail(t *testing.T) *counting {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &counting{Audit: db.Audit()}
}

func closeWriter(t *testing.T, w *audit.Writer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func stored(t *testing.T, trail store.Audit) []store.Event {
	t.Helper()
	events, err := trail.Events(t.Context(), time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// TestWriterBatches: events from several goroutines are all written, each
// goroutine's in order, in batches rather than one by one, and Close
// writes what is queued.
func TestWriterBatches(t *testing.T) {
	trail := openTrail(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent()) // the writer's goroutine ends with Close
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	w := audit.New(trail, &audit.Options{Now: func() time.Time { return t0 }})
	const writers, each = 4, 300
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				w.Append(t.Context(), store.Event{Event: "n", Server: string(rune('a' + g)), DurationMS: int64(i)})
			}
		})
	}
	wg.Wait()
	w.Append(t.Context(), store.Event{Event: "x"}, store.Event{Event: "y"})
	closeWriter(t, w)

	events := stored(t, trail)
	if got, want := len(events), writers*each+2; got != want {
		t.Fatalf("the trail has %d events, want %d", got, want)
	}
	next := map[string]int64{}
	for _, e := range events[:writers*each] {
		if e.DurationMS != next[e.Server] {
			t.Fatalf("writer %s: event %d came after %d", e.Server, e.DurationMS, next[e.Server]-1)
		}
		next[e.Server]++
		if !e.Time.Equal(t0) {
			t.Errorf("event time %v, want the writer's clock %v", e.Time, t0)
		}
	}
	if got, want := []string{events[len(events)-2].Event, events[len(events)-1].Event}, []string{"x", "y"}; !cmp.Equal(got, want) {
		t.Errorf("last events %v, want %v", got, want)
	}
	if n := trail.batches.Load(); n > int64(len(events))/2 {
		t.Errorf("%d events took %d appends: want them written in batches", len(events), n)
	}
}

// TestWriterPrepares: fields that may carry text from outside are
// redacted, the host's own are not, and values put in with Record become
// shape and hash, plus the redacted values where RecordValues asks.
func TestWriterPrepares(t *testing.T) {
	const secret = "s3cr3t-value-0123"
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	args := map[string]any{"text": "key " + secret, "n": 1.0}
	tests := []struct {
		name   string
		record []string
		want   map[string]any
	}{
		{"shape and hash", nil, map[string]any{}},
		{"values of one tool", []string{"fs__write"}, map[string]any{"args": map[string]any{"text": "key [REDACTED:secret]", "n": 1.0},
			"raw": map[string]any{"text": "key [REDACTED:secret]", "n": 1.0}, "bad": map[string]any{}}},
		{"values of another tool", []string{"fs__read"}, map[string]any{}},
		{"values of every tool", []string{"*"}, map[string]any{"args": map[string]any{"text": "key [REDACTED:secret]", "n": 1.0},
			"raw": map[string]any{"text": "key [REDACTED:secret]", "n": 1.0}, "bad": map[string]any{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			trail := openTrail(t)
			w := audit.New(trail, &audit.Options{Redactor: redact.New([]string{secret}), RecordValues: tt.record})
			fields := map[string]any{"decision": "deny " + secret, "reason": "hook said " + secret, "queue_wait_ms": int64(12)}
			audit.Record(fields, "args", "fs__write", args)
			// Raw JSON (a structured result) is recorded as its value
			// would be; JSON that is not one value, as each part sees it.
			audit.Record(fields, "raw", "fs__write", json.RawMessage(`{"n": 1, "text": "key `+secret+`"}`))
			audit.Record(fields, "bad", "fs__write", json.RawMessage(`{} x`))
			w.Append(t.Context(), store.Event{Time: t0, Event: store.EventDecision, Tool: "fs__write", Fields: fields})
			closeWriter(t, w)

			want := map[string]any{
				"decision":   "deny " + secret, // the host's own text
				"reason":     "hook said [REDACTED:secret]",
				"args_shape": map[string]any{"text": "string", "n": "number"},
				"args_hash":  canonical.Hash(args),
				"raw_shape":  map[string]any{"text": "string", "n": "number"},
				"raw_hash":   canonical.Hash(map[string]any{"n": json.Number("1"), "text": "key " + secret}),
				"bad_shape":  map[string]any{},
				"bad_hash":   canonical.Hash(json.RawMessage(`{} x`)),
				// A number is not redacted, and reads back as JSON's.
				"queue_wait_ms": 12.0,
			}
			for k, v := range tt.want {
				want[k] = v
			}
			events := stored(t, trail)
			if len(events) != 1 {
				t.Fatalf("the trail has %d events, want 1", len(events))
			}
			if diff := cmp.Diff(want, events[0].Fields); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
			if !events[0].Time.Equal(t0) {
				t.Errorf("time %v, want the event's own %v", events[0].Time, t0)
			}
		})
	}
}

// TestWriterAfterClose: an event appended after Close goes to the log,
// not to the trail, and Close may be called again.
func TestWriterAfterClose(t *testing.T) {
	trail := openTrail(t)
	var logs bytes.Buffer
	w := audit.New(trail, &audit.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	w.Append(t.Context(), store.Event{Event: "before"})
	closeWriter(t, w)
	w.Append(t.Context(), store.Event{Event: "after", Server: "fs"})
	closeWriter(t, w)

	if events := stored(t, trail); len(events) != 1 || events[0].Event != "before" {
		t.Errorf("the trail has %+v, want only the event appended before Close", events)
	}
	if log := logs.String(); !strings.Contains(log, "audit event after close") || !strings.Contains(log, "event=after") {
		t.Errorf("log does not report the late event:\n%s", log)
	}
}

// stuck is a trail whose Append waits until it is released.
type stuck struct {
	store.Audit
	release chan struct{}
}

func (s stuck) Append(ctx context.Context, events ...store.Event) error {
	<-s.release
	return s.Audit.Append(ctx, events...)
}

// TestWriterCloseBounded: Close returns when its context ends even if the
// trail does not answer, and the writer finishes once it does; a batch the
// trail refuses is logged.
func TestWriterCloseBounded(t *testing.T) {
	trail := stuck{Audit: openTrail(t), release: make(chan struct{})}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var logs bytes.Buffer
	w := audit.New(trail, &audit.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	w.Append(t.Context(), store.Event{Event: "ok"}, store.Event{Event: "bad", Fields: map[string]any{"tool": "reserved"}})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := w.Close(ctx); err == nil || !strings.Contains(err.Error(), "not written completely") {
		t.Errorf("Close with a stuck trail = %v, want an error", err)
	}
	close(trail.release)
	closeWriter(t, w)
	if !strings.Contains(logs.String(), "cannot write the audit trail") {
		t.Errorf("log does not report the refused batch:\n%s", logs.String())
	}
}

// TestWriterBoundsTheUnwritten: what a process killed outright would lose
// is bounded. With a linger far longer than the test, FlushAt events
// queued are written at once, without Close, while fewer wait for the
// linger; with the real linger, a lone event is written without Close.
func TestWriterBoundsTheUnwritten(t *testing.T) {
	restore := audit.SetLinger(time.Hour)
	t.Cleanup(restore)
	trail := openTrail(t)
	w := audit.New(trail, nil)
	events := make([]store.Event, audit.FlushAt-1)
	for i := range events {
		events[i] = store.Event{Event: "e", DurationMS: int64(i)}
	}
	w.Append(t.Context(), events...)
	// Nothing can write these but the linger (an hour) or Close.
	time.Sleep(300 * time.Millisecond)
	if n := len(stored(t, trail)); n > 1 {
		// The writer may have taken the first event before the rest
		// arrived, and written it alone at the count: never more.
		t.Fatalf("%d events of %d were written before the linger or flushAt", n, len(events))
	}
	w.Append(t.Context(), store.Event{Event: "e", DurationMS: int64(len(events))})
	waitStored(t, trail, audit.FlushAt)
	closeWriter(t, w)
	restore()

	trail = openTrail(t)
	w = audit.New(trail, nil)
	defer closeWriter(t, w)
	w.Append(t.Context(), store.Event{Event: "lone"})
	waitStored(t, trail, 1)
}

// waitStored waits (10 s at most, far past any linger) until the trail
// holds n events.
func waitStored(t *testing.T, trail store.Audit, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := len(stored(t, trail))
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the trail holds %d events after 10 s without Close, want %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
