package postgres_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/store"
)

// BenchmarkJournal measures a journaled write's two commits, one writer
// at a time: Begin, synchronous, and End, whose commit does not wait for
// its flush (reported apart, as begin-µs and end-µs).
func BenchmarkJournal(b *testing.B) {
	db := open(b, testenv.PostgresDatabase(b), filepath.Join(b.TempDir(), "audit.key"))
	j := db.Journal()
	var begins, ends time.Duration
	for b.Loop() {
		in := store.Intent{ID: store.NewID("rec_"), Server: "fs", Tool: "fs__write_file", RemoteTool: "write_file",
			ArgsHash: "sha256:0123456789abcdef", Arguments: []byte(`{"path":"a.txt"}`), Snapshot: "snap_1", Effect: "write"}
		t := time.Now()
		if err := j.Begin(b.Context(), in); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if err := j.End(b.Context(), in.ID, store.OutcomeSucceeded, ""); err != nil {
			b.Fatal(err)
		}
		begins += t2.Sub(t)
		ends += time.Since(t2)
	}
	b.ReportMetric(float64(begins.Microseconds())/float64(b.N), "begin-µs")
	b.ReportMetric(float64(ends.Microseconds())/float64(b.N), "end-µs")
}
