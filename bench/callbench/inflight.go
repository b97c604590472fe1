package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
)

// The in-flight read benchmark: the echo tool a read (allowed without
// asking, not journaled), inflight calls at a time over stdio. The bare
// side: that many goroutines on one go-sdk session; Airlock: that many
// goroutines calling one host whose server takes that many at once.

// inflightResult is what the in-flight read benchmark measured.
type inflightResult struct {
	inflight           int
	bareWall, hostWall time.Duration // rounds added up
	bareN, hostN       int           // calls made
}

// inflightReads measures reads in flight against cs, the bare client's
// session with the echo server, with a host of its own in state.
func inflightReads(ctx context.Context, cs *mcp.ClientSession, calls, rounds, inflight int, state string) (*inflightResult, error) {
	srv, err := serverConfig("echo")
	if err != nil {
		return nil, err
	}
	srv.MaxConcurrency = inflight
	h, err := open(ctx, srv, state, "read", false)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	snap := h.Snapshot()
	args := json.RawMessage(`{"text":"hello, benchmark"}`)
	bareCall := func(ctx context.Context) error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello, benchmark"}})
		if err == nil && res.IsError {
			err = fmt.Errorf("tool error")
		}
		return err
	}
	hostCall := func(ctx context.Context) error {
		r := h.Call(ctx, snap, airlock.Call{Name: "bench__echo", Arguments: args})
		if r.Status != airlock.OK {
			return r.Err
		}
		return nil
	}
	res := &inflightResult{inflight: inflight}
	per := calls / rounds
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
		res.bareWall += wall
		res.bareN += per
		_, wall, err = concurrently(ctx, per, inflight, hostCall)
		if err != nil {
			return nil, fmt.Errorf("airlock: %v", err)
		}
		res.hostWall += wall
		res.hostN += per
	}
	return res, nil
}

// renderInflight writes the in-flight read section of the report.
func renderInflight(w func(string, ...any), calls, rounds int, r *inflightResult) {
	w("## Reads in flight: Airlock vs. bare go-sdk client (%d calls each)\n\n", calls)
	w("The per-call pipeline above, %d calls in flight (the bare side: %d goroutines on one session; Airlock: %d\n",
		r.inflight, r.inflight, r.inflight)
	w("goroutines calling one host, the server's `max_concurrency` %d), in %d alternating rounds after a warm-up:\n\n", r.inflight, rounds)
	bare := float64(r.bareN) / r.bareWall.Seconds()
	host := float64(r.hostN) / r.hostWall.Seconds()
	w("| | bare go-sdk | Airlock | ratio |\n|---|---|---|---|\n")
	w("| calls/s | %.0f | %.0f | %.2f |\n\n", bare, host, host/bare)
	w("Target: calls/s with %d in flight ≥ 0.95× the bare client's.\n\n", r.inflight)
}
