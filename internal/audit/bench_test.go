package audit_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/redact"
	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/sqlite"
)

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var u syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// discard is a trail that writes nothing: what the writer itself costs.
type discard struct{ store.Audit }

func (discard) Append(context.Context, ...store.Event) error { return nil }

// readResult is the event the host writes for most calls: the result of
// a read allowed by policy, which carries its decision (as the root
// package's fold makes it).
func readResult() store.Event {
	fields := make(map[string]any, 24)
	fields["decision"], fields["rule"], fields["reason"], fields["effect"] = verdict("allow"), "policy.rules[0] (bench)", "allowed by policy.rules[0] (bench)", verdict("read")
	fields["generation"], fields["attempt"], fields["connection"] = uint64(1), 1, uint64(1)
	fields["call"], fields["trace_id"] = "call_96497923d475e70bb1ed9eb2f6", "28e1366261ea7caf9d18ba9668d4c0e7"
	fields["tenant"], fields["user"] = "default", "root"
	audit.Record(fields, "args", "echo__echo", map[string]any{"text": "hello, benchmark"})
	audit.Record(fields, "result", "echo__echo", json.RawMessage(`{"text":"hello, benchmark"}`))
	audit.Record(fields, "content", "echo__echo", []any{map[string]any{"type": "text", "text": "hello, benchmark"}})
	return store.Event{Event: store.EventResult, Server: "echo", Tool: "echo__echo", Snapshot: "snap_da73b246c06f7f67",
		Class: "ok", DurationMS: 1, Fields: fields}
}

// BenchmarkWriter measures the writer per event, from Append to the
// trail, for the event most calls write: with a trail that discards
// (what the writer prepares) and with a SQLite trail (everything).
func BenchmarkWriter(b *testing.B) {
	for _, tt := range []struct {
		name  string
		trail func(b *testing.B) store.Audit
	}{
		{"discard", func(*testing.B) store.Audit { return discard{} }},
		{"sqlite", func(b *testing.B) store.Audit {
			db, err := sqlite.Open(filepath.Join(b.TempDir(), "airlock.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			return db.Audit()
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			w := audit.New(tt.trail(b), &audit.Options{Redactor: redact.New([]string{"s3cr3t-value-0123"})})
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				w.Append(b.Context(), readResult())
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := w.Close(ctx); err != nil {
				b.Fatal(err)
			}
			// The writer runs beside the loop: its time is CPU time, not
			// the loop's.
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
