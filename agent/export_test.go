package agent

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock/store"
)

// TimeSaves times the checkpoint saves of a's runs, for the benchmarks:
// took says how many there were, and how long they took in all.
func TimeSaves(a *Agent) (took func() (saves int64, d time.Duration)) {
	t := &timedRuns{Runs: a.runs}
	a.runs = t
	return func() (int64, time.Duration) { return t.n.Load(), time.Duration(t.d.Load()) }
}

// timedRuns is a store's runs whose saves are timed.
type timedRuns struct {
	store.Runs
	n, d atomic.Int64
}

func (t *timedRuns) SaveRun(ctx context.Context, r store.RunRecord) error {
	start := time.Now()
	err := t.Runs.SaveRun(ctx, r)
	t.d.Add(int64(time.Since(start)))
	t.n.Add(1)
	return err
}

func (t *timedRuns) SaveRunRelaxed(ctx context.Context, r store.RunRecord) error {
	start := time.Now()
	err := t.Runs.SaveRunRelaxed(ctx, r)
	t.d.Add(int64(time.Since(start)))
	t.n.Add(1)
	return err
}
