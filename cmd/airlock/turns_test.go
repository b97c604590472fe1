package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/testenv"
)

// TestReplicasShareTurns: two gateway replicas on one PostgreSQL database
// behind a round-robin balancer, with limits.max_calls_per_turn: 3. The
// calls of one turn (named in _meta "airlock/turn") alternate replicas,
// and the fourth is denied all the same, in both protocol versions,
// though each replica saw only some of them; calls that name no turn, and
// another turn, go on. The store keeps no turn or user name in the clear.
func TestReplicasShareTurns(t *testing.T) {
	db := testenv.PostgresDatabase(t)
	urls, _, _ := startReplicas(t, db, "limits: {max_calls_per_turn: 3}\n")
	lb, calls := roundRobin(t, urls[0], urls[1])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	read := func(cs *mcp.ClientSession, turn string) *mcp.CallToolResult {
		t.Helper()
		p := &mcp.CallToolParams{Name: "ws__read_file", Arguments: map[string]any{"path": "hello.txt"}}
		if turn != "" {
			p.Meta = mcp.Meta{"airlock/turn": turn}
		}
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatalf("read in turn %q: %v", turn, err)
		}
		return res
	}
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		c := mcp.NewClient(&mcp.Implementation{Name: "turns", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: lb}, &mcp.ClientSessionOptions{ProtocolVersion: era})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		turn := "turn of " + era
		before := calls.Load()
		for i := range 3 {
			if res := read(cs, turn); res.IsError {
				t.Fatalf("%s: call %d of 3 in the turn: %q, want ok", era, i+1, res.Content)
			}
		}
		res := read(cs, turn)
		// A 2025-11-25 request names no method in its headers: the
		// balancer sends every request of the session to the next
		// replica, the calls among them.
		if era == "2026-07-28" && calls.Load()-before != 4 {
			t.Fatalf("%s: the balancer saw %d tool calls, want 4 taking turns between the replicas", era, calls.Load()-before)
		}
		text := ""
		if len(res.Content) > 0 {
			text = res.Content[0].(*mcp.TextContent).Text
		}
		if st, _ := res.Meta["airlock/status"].(string); !res.IsError || st != "denied" || !strings.Contains(text, "limits.max_calls_per_turn") {
			t.Errorf("%s: fourth call of the turn, on the other replica: isError=%v class %q %q; want denied by limits.max_calls_per_turn",
				era, res.IsError, st, text)
		}
		for i := range 4 {
			if res := read(cs, ""); res.IsError {
				t.Errorf("%s: call %d naming no turn: %q, want ok", era, i+1, res.Content)
			}
		}
		if res := read(cs, "next "+era); res.IsError {
			t.Errorf("%s: first call of a new turn: %q, want ok", era, res.Content)
		}
	}

	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT key FROM turn_calls`)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 4 {
		t.Errorf("turn_calls holds %d turns, want 4 (two per protocol version)", len(keys))
	}
	for _, k := range keys {
		if len(k) != 64 || strings.ContainsAny(k, " -") {
			t.Errorf("turn key %q, want a hash", k)
		}
	}
}
