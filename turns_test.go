package airlock_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/internal/testenv"
)

// callInTurn calls name, without arguments, as a call of the turn named turn.
func callInTurn(t *testing.T, h *airlock.Host, turn, name string) *airlock.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return h.Call(ctx, h.Snapshot(), airlock.Call{Name: name, Arguments: json.RawMessage(`{}`), Turn: turn})
}

// TestNamedTurnsStoreDown: the calls of a named turn count in the store
// (PostgreSQL). While it is down, a write that names a turn is denied and
// never sent, with a message that says which limit could not be counted
// and to try again later; reads are counted in the host's own process,
// and the limit holds for them there. Once it is back, turns count in the
// store again.
func TestNamedTurnsStoreDown(t *testing.T) {
	pg := testenv.StartOwnPostgres(t)
	var writes atomic.Int64
	s, cfg := writesAndReads(t, pg.URL, &writes)
	cfg.Limits.MaxCallsPerTurn = 2
	h := openIn(t, cfg, map[string]*mcp.Server{"c": s}, nil)

	wantStatus(t, callInTurn(t, h, "a", "c__write"), airlock.OK)
	wantStatus(t, callInTurn(t, h, "a", "c__read"), airlock.OK)
	r := callInTurn(t, h, "a", "c__write")
	wantStatus(t, r, airlock.Denied)
	if !strings.Contains(r.Content, `turn "a" already made 2 calls (limits.max_calls_per_turn)`) {
		t.Errorf("the third call of a turn of 2 is refused with %q, want the turn and the limit named", r.Content)
	}

	pg.Stop()
	r = callInTurn(t, h, "b", "c__write")
	wantStatus(t, r, airlock.Denied)
	if !strings.Contains(r.Content, "limits.max_calls_per_turn") || !strings.Contains(r.Content, "not sent") || !strings.Contains(r.Content, "try again later") ||
		strings.Contains(r.Content, "127.0.0.1") || strings.Contains(strings.ToLower(r.Content), "postgres") {
		t.Errorf("a write while the store is down is refused with %q: want the limit named, not sent, try again later, and no address or database", r.Content)
	}
	if n := writes.Load(); n != 1 {
		t.Errorf("the server got %d writes, want 1", n)
	}
	wantStatus(t, callInTurn(t, h, "b", "c__read"), airlock.OK)
	wantStatus(t, callInTurn(t, h, "b", "c__read"), airlock.OK)
	wantStatus(t, callInTurn(t, h, "b", "c__read"), airlock.Denied)

	pg.Start()
	wantStatus(t, callInTurn(t, h, "c", "c__write"), airlock.OK)
	wantStatus(t, callInTurn(t, h, "a", "c__read"), airlock.Denied)
}

// TestNamedTurnsPerPrincipal: without a store that counts turns, the
// calls of a named turn count in the host's process; a turn of the same
// name is another turn for another principal, and a call that names no
// turn counts in none.
func TestNamedTurnsPerPrincipal(t *testing.T) {
	c := &counted{}
	cfg := newConfig(t, inProcess)
	cfg.Limits.MaxCallsPerTurn = 2
	h := openIn(t, cfg, map[string]*mcp.Server{"c": c.server()}, nil)
	ctx := context.Background()
	note := func(snap *airlock.Snapshot, turn string) *airlock.Result {
		return h.Call(ctx, snap, airlock.Call{Name: "c__note", Arguments: json.RawMessage(`{"text":"x"}`), Turn: turn})
	}
	for range 2 {
		wantStatus(t, note(h.Snapshot(), "t"), airlock.OK)
	}
	wantStatus(t, note(h.Snapshot(), "t"), airlock.Denied)
	for range 3 {
		wantStatus(t, note(h.Snapshot(), ""), airlock.OK)
	}
	other, release, err := h.SnapshotFor(h.Snapshot(), airlock.Principal{Tenant: "acme", User: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	wantStatus(t, note(other, "t"), airlock.OK)
	if n := c.calls.Load(); n != 6 {
		t.Errorf("the server ran %d calls, want 6", n)
	}
}
