package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/store"
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
	floor []time.Duration // the disk's fdatasync, in the state directory
	// paused is the same with a pause between syncs as long as the bare
	// client's call at p50: the disk as one call at a time meets it.
	paused []time.Duration
	pause  time.Duration
	// begins, laters and ends are the journal's own Begin, BeginLater
	// and End, one at a time, on a database of their own in the state
	// directory.
	begins, laters, ends []time.Duration
}

// floorSyncs is how many times fsyncFloor syncs.
const floorSyncs = 2000

// fsyncFloor measures the disk under dir: n times, a 4 KiB write at the
// start of a file, then fdatasync, as a commit's sync of the WAL does;
// with pause between one sync and the next.
func fsyncFloor(dir string, n int, pause time.Duration) ([]time.Duration, error) {
	f, err := os.CreateTemp(dir, "fsync-floor-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	page := make([]byte, 4096)
	lat := make([]time.Duration, n)
	for i := range lat {
		if pause > 0 {
			time.Sleep(pause)
		}
		page[0] = byte(i)
		t := time.Now()
		if _, err := f.WriteAt(page, 0); err != nil {
			return nil, err
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			return nil, err
		}
		lat[i] = time.Since(t)
	}
	return lat, nil
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
	if res.floor, err = fsyncFloor(state, floorSyncs, 0); err != nil {
		return nil, err
	}
	res.pause = quantile(res.bareLat, 0.5)
	if res.paused, err = fsyncFloor(state, floorSyncs, res.pause); err != nil {
		return nil, err
	}
	if res.begins, res.laters, res.ends, err = journalAlone(ctx, state, floorSyncs); err != nil {
		return nil, err
	}
	return res, nil
}

// journalAlone measures the SQLite journal without a call around it: n
// intents begun and ended one at a time, as a journaled call does (Begin
// and End), and n begun as the host begins them (BeginLater), on a store
// of its own under dir (the default store of a host: SQLite).
func journalAlone(ctx context.Context, dir string, n int) (begins, laters, ends []time.Duration, err error) {
	db, err := airlock.OpenStore(filepath.Join(dir, "journal-alone"))
	if err != nil {
		return nil, nil, nil, err
	}
	defer db.Close()
	j := db.Journal()
	later, ok := j.(store.LaterBeginner)
	if !ok {
		return nil, nil, nil, fmt.Errorf("the SQLite journal has no BeginLater")
	}
	intent := func() store.Intent {
		return store.Intent{ID: store.NewID("rec_"), CallID: store.NewID("call_"), Server: "echo", Tool: "echo__echo", RemoteTool: "echo",
			ArgsHash: "sha256:0", Arguments: []byte(`{"text":"hello"}`), Effect: "write"}
	}
	begins, laters, ends = make([]time.Duration, n), make([]time.Duration, n), make([]time.Duration, n)
	for i := range n {
		in := intent()
		t := time.Now()
		if err := j.Begin(ctx, in); err != nil {
			return nil, nil, nil, err
		}
		begins[i] = time.Since(t)
		t = time.Now()
		if err := j.End(ctx, in.ID, store.OutcomeSucceeded, ""); err != nil {
			return nil, nil, nil, err
		}
		ends[i] = time.Since(t)
		in = intent()
		t = time.Now()
		if err := later.BeginLater(ctx, in); err != nil {
			return nil, nil, nil, err
		}
		laters[i] = time.Since(t)
	}
	return begins, laters, ends, nil
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
	w("call makes its intent durable before it is sent: a checksummed record appended to the writer's intent log\n")
	w("(a preallocated file of its own), written with `O_DSYNC` (`BeginLater`). The intent's row is committed to\n")
	w("SQLite after it, without a sync of its own, and its outcome as the call returns, without the call waiting\n")
	w("for either: the outcome within 10 ms, the row with it in one INSERT (a row waits up to 100 ms for its\n")
	w("outcome), many calls' in one transaction; the WAL is synced\n")
	w("within 10 ms of a commit, and before the log is reused. Appends that arrive while one is being written share\n")
	w("the next (group commit); a call is never sent before its own intent is on disk. The audit trail's batches,\n")
	w("too, go to the WAL without a sync of their own.\n\n")
	w("One call at a time:\n\n")
	table("bare go-sdk", "Airlock", j.bareLat, j.hostLat, us, "p50", "p99")
	w("\n")
	sort.Slice(j.floor, func(a, b int) bool { return j.floor[a] < j.floor[b] })
	w("The floor, measured in the same run: the disk's own `fdatasync` (a 4 KiB write, then `fdatasync`, on the\n")
	w("state directory's file system, %d times) takes %s at p50 and %s at p99; a journaled write syncs once.\n",
		len(j.floor), us(j.floor[len(j.floor)/2]), us(j.floor[len(j.floor)*99/100]))
	w("With a pause between syncs as long as the bare client's call at p50 (%s), as calls one at a time meet\n", us(j.pause))
	w("the disk, it takes %s at p50 and %s at p99.\n\n", us(quantile(j.paused, 0.5)), us(quantile(j.paused, 0.99)))
	p50 := func(d []time.Duration) time.Duration {
		d = slices.Clone(d)
		slices.Sort(d)
		return d[len(d)/2]
	}
	begin, later, end := p50(j.begins), p50(j.laters), p50(j.ends)
	w("The journal alone, in the same run (a store of its own in the state directory; %d intents of each kind,\n", len(j.begins))
	w("one at a time, no call around them): BeginLater, the intent log's synced append, which a call waits for,\n")
	w("takes %s at p50; Begin, the same append beside the row's commit, %s; End, an outcome's unsynced commit, %s.\n",
		us(later), us(begin), us(end))
	w("Airlock adds %s to a journaled call at p50.\n\n", us(p50(j.hostLat)-p50(j.bareLat)))
	j.render(w, rounds)
	w("Targets: p50 ≤ 1.8× the bare client's; calls/s with %d in flight ≥ 0.8× the bare client's.\n\n", j.inflight)
}
