package sqlite_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/sqlite"
)

// BenchmarkAuditAppend measures one Append of a batch as the audit writer
// sends it (internal/audit), per event: the host's calls never wait for
// it, but a slower Append lets the writer's queue fill sooner.
func BenchmarkAuditAppend(b *testing.B) {
	for _, n := range []int{1, 64, 512} {
		b.Run(fmt.Sprint("batch=", n), func(b *testing.B) {
			db, err := sqlite.Open(filepath.Join(b.TempDir(), "airlock.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			batch := make([]store.Event, n)
			for i := range batch {
				batch[i] = store.Event{Time: time.Now(), Event: store.EventResult, Server: "fs", Tool: "fs__read_file",
					Snapshot: "snap_1", Class: "ok", DurationMS: 3,
					Fields: map[string]any{"args_hash": "sha256:0123456789abcdef", "decision": "allow", "generation": 1}}
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := db.Audit().Append(b.Context(), batch...); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		})
	}
}

// BenchmarkJournal measures a journaled write's two commits, Begin and
// End, per call: one writer at a time, and 64 at once, whose commits may
// be grouped.
func BenchmarkJournal(b *testing.B) {
	for _, writers := range []int{1, 64} {
		b.Run(fmt.Sprint("writers=", writers), func(b *testing.B) {
			db, err := sqlite.Open(filepath.Join(b.TempDir(), "airlock.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			j := db.Journal()
			b.ReportAllocs()
			run := func() {
				in := store.Intent{ID: store.NewID("rec_"), Server: "fs", Tool: "fs__write_file", RemoteTool: "write_file",
					ArgsHash: "sha256:0123456789abcdef", Arguments: []byte(`{"path":"a.txt"}`), Snapshot: "snap_1", Effect: "write"}
				if err := j.Begin(b.Context(), in); err != nil {
					b.Error(err)
					return
				}
				if err := j.End(b.Context(), in.ID, store.OutcomeSucceeded, ""); err != nil {
					b.Error(err)
				}
			}
			if writers == 1 {
				for b.Loop() {
					run()
				}
				return
			}
			b.SetParallelism(writers / runtime.GOMAXPROCS(0))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					run()
				}
			})
		})
	}
}
