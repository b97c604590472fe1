package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The journaled-write benchmark: the same echo tool, which local policy
// classifies as a write (allowed without asking), so that every call
// commits its intent to the journal, synced, before it is sent, and its
// outcome after. Against the bare go-sdk client on the same stdio echo
// server: latency one call at a time, and calls per second with inflight
// calls in flight (the bare side: that many goroutines on one session;
// Airlock: on one host whose server takes that many at once).

// journalResult is what the journaled-write benchmark measured.
type journalResult struct {
	bareLat, hostLat []time.Duration // sequential
	*throughput
}

// journaledCalls measures journaled writes against cs, the bare client's
// session with the echo server, with a host of its own in state.
func journaledCalls(ctx context.Context, cs *mcp.ClientSession, calls, rounds, inflight int, state string) (*journalResult, error) {
	h, bareCall, hostCall, err := openInflight(ctx, cs, state, "write", inflight)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	res := &journalResult{}
	res.bareLat, res.hostLat, err = alternate(calls, rounds,
		func() error { return bareCall(ctx) }, func() error { return hostCall(ctx) })
	if err != nil {
		return nil, err
	}
	if res.throughput, err = measureThroughput(ctx, calls, rounds, inflight, bareCall, hostCall); err != nil {
		return nil, err
	}
	return res, nil
}

// concurrently makes n calls, inflight at a time, and returns each one's
// latency and how long they took together. The first error cancels the
// calls not yet made.
func concurrently(ctx context.Context, n, inflight int, call func(context.Context) error) ([]time.Duration, time.Duration, error) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var (
		once     sync.Once
		firstErr error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for range inflight {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t := time.Now()
				if err := call(ctx); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
				lat[i] = time.Since(t)
			}
		})
	}
	wg.Wait()
	return lat, time.Since(start), firstErr
}

// renderJournal writes the journaled-write section of the report.
func renderJournal(w func(string, ...any), table func(left, right string, l, r []time.Duration, show func(time.Duration) string, rows ...string), us func(time.Duration) string, calls, rounds int, j *journalResult) {
	w("## Journaled writes: Airlock vs. bare go-sdk client (%d calls each)\n\n", calls)
	w("The same stdio echo server; local policy classifies the tool as a write, allowed without asking, so every\n")
	w("call commits its intent to the journal (SQLite, WAL, `synchronous=FULL`: synced to disk) before it is sent,\n")
	w("and its outcome after it is answered, besides the read pipeline above. Intents and outcomes that arrive\n")
	w("while a commit is in progress share the next one (group commit); a call is never sent before its own\n")
	w("intent is on disk.\n\n")
	w("One call at a time:\n\n")
	table("bare go-sdk", "Airlock", j.bareLat, j.hostLat, us, "p50", "p99")
	w("\n")
	j.render(w, rounds)
	w("Targets: p50 ≤ 1.5× the bare client's; calls/s with %d in flight ≥ 0.8× the bare client's.\n\n", j.inflight)
}
