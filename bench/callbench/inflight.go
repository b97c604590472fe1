package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
)

// The in-flight read benchmark: the echo tool a read (allowed without
// asking, not journaled), inflight calls at a time over stdio. The bare
// side: that many goroutines on one go-sdk session; Airlock: that many
// goroutines calling one host whose server takes that many at once.

// throughput is what each side passed with calls in flight: the calls
// per second of each round.
type throughput struct {
	inflight, calls int // calls: per side, the warm-up not counted
	bare, host      []float64
}

// openInflight opens a host in state on the echo server, whose tool has
// the given effect, taking inflight calls at once, and returns it with
// the echo call of the bare client's session cs and of the host.
func openInflight(ctx context.Context, cs *mcp.ClientSession, state, effect string, inflight int) (h *airlock.Host, bareCall, hostCall func(context.Context) error, err error) {
	srv, err := serverConfig("echo")
	if err != nil {
		return nil, nil, nil, err
	}
	srv.MaxConcurrency = inflight
	if h, err = open(ctx, srv, state, effect, false); err != nil {
		return nil, nil, nil, err
	}
	snap := h.Snapshot()
	args := json.RawMessage(`{"text":"hello, benchmark"}`)
	bareCall = func(ctx context.Context) error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello, benchmark"}})
		if err == nil && res.IsError {
			err = fmt.Errorf("tool error")
		}
		return err
	}
	hostCall = func(ctx context.Context) error {
		r := h.Call(ctx, snap, airlock.Call{Name: "bench__echo", Arguments: args})
		if r.Status != airlock.OK {
			return r.Err
		}
		return nil
	}
	return h, bareCall, hostCall, nil
}

// measureThroughput makes calls on each side, inflight at a time: a
// warm-up round each, then rounds alternating the sides.
func measureThroughput(ctx context.Context, calls, rounds, inflight int, bareCall, hostCall func(context.Context) error) (*throughput, error) {
	per := calls / rounds
	res := &throughput{inflight: inflight, calls: per * rounds}
	for _, call := range []func(context.Context) error{bareCall, hostCall} {
		if _, _, err := concurrently(ctx, per, inflight, call); err != nil {
			return nil, err
		}
	}
	for range rounds {
		_, wall, err := concurrently(ctx, per, inflight, bareCall)
		if err != nil {
			return nil, fmt.Errorf("bare client: %v", err)
		}
		res.bare = append(res.bare, float64(per)/wall.Seconds())
		_, wall, err = concurrently(ctx, per, inflight, hostCall)
		if err != nil {
			return nil, fmt.Errorf("airlock: %v", err)
		}
		res.host = append(res.host, float64(per)/wall.Seconds())
	}
	return res, nil
}

// render writes how t was measured, then the median calls per second of
// each side's rounds, and their ratio.
func (t *throughput) render(w func(string, ...any), rounds int) {
	w("%d calls in flight (the bare side: %d goroutines on one session; Airlock: %d goroutines calling one host,\n",
		t.inflight, t.inflight, t.inflight)
	w("the server's `max_concurrency` %d), in %d alternating rounds after a warm-up (the median of the rounds'\n", t.inflight, rounds)
	w("calls per second):\n\n")
	t.table(w)
}

// table writes the median calls per second of each side's rounds, and
// their ratio.
func (t *throughput) table(w func(string, ...any)) {
	median := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}
	bare, host := median(t.bare), median(t.host)
	w("| | bare go-sdk | Airlock | ratio |\n|---|---|---|---|\n")
	w("| calls/s (median round) | %.0f | %.0f | %.2f |\n\n", bare, host, host/bare)
}

// inflightReads measures reads in flight against cs, the bare client's
// session with the echo server, with a host of its own in state.
func inflightReads(ctx context.Context, cs *mcp.ClientSession, calls, rounds, inflight int, state string) (*throughput, error) {
	h, bareCall, hostCall, err := openInflight(ctx, cs, state, "read", inflight)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	return measureThroughput(ctx, calls, rounds, inflight, bareCall, hostCall)
}

// renderInflight writes the in-flight read section of the report.
func renderInflight(w func(string, ...any), rounds int, t *throughput) {
	w("## Reads in flight: Airlock vs. bare go-sdk client (%d calls each)\n\n", t.calls)
	w("The per-call pipeline above, the tool a read, allowed without asking and not journaled.\n\n")
	t.render(w, rounds)
	w("Target: calls/s with %d in flight ≥ 0.95× the bare client's.\n\n", t.inflight)
}
