package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callInTurn calls w__echo with text, naming turn in its _meta (any, as
// the client sends it; nil names none).
func callInTurn(t *testing.T, cs *mcp.ClientSession, turn any, text string) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := &mcp.CallToolParams{Name: "w__echo", Arguments: json.RawMessage(fmt.Sprintf(`{"text":%q}`, text))}
	if turn != nil {
		p.Meta = mcp.Meta{"airlock/turn": turn}
	}
	return cs.CallTool(ctx, p)
}

// TestTurnLimit: the calls that name one turn in _meta "airlock/turn"
// count against limits.max_calls_per_turn, in both eras; the call beyond
// it is denied and never reaches the server. Calls that name no turn
// count in none, another turn has calls of its own, and a turn named with
// anything but a short printable string is refused as invalid params.
func TestTurnLimit(t *testing.T) {
	const limit = 3
	f := start(t, fmt.Sprintf("limits:\n  max_calls_per_turn: %d\n", limit), nil)
	f.eachEra(t, func(t *testing.T, era string, cs *mcp.ClientSession) {
		turn := "turn " + era
		for i := 1; i <= limit; i++ {
			res, err := callInTurn(t, cs, turn, fmt.Sprintf("%s %d", era, i))
			if err != nil || res.IsError {
				t.Fatalf("call %d of %d in the turn: %v %+v, want ok", i, limit, err, res)
			}
		}
		res, err := callInTurn(t, cs, turn, era+" beyond")
		if err != nil {
			t.Fatalf("call beyond the limit: %v, want a denied result", err)
		}
		if !res.IsError || status(res) != "denied" || !strings.Contains(resultText(res), "limits.max_calls_per_turn") {
			t.Errorf("call beyond the limit: isError=%v class %q %q, want isError denied naming limits.max_calls_per_turn",
				res.IsError, status(res), resultText(res))
		}
		// Calls that name no turn are not counted; another turn is a turn
		// of its own.
		for i := range limit + 2 {
			if res, err := callInTurn(t, cs, nil, fmt.Sprintf("%s free %d", era, i)); err != nil || res.IsError {
				t.Errorf("call %d naming no turn: %v %+v, want ok", i+1, err, res)
			}
		}
		if res, err := callInTurn(t, cs, "next "+era, era+" next"); err != nil || res.IsError {
			t.Errorf("first call of a new turn: %v %+v, want ok", err, res)
		}

		for _, bad := range []any{"", strings.Repeat("x", 129), "tab\there", 7, map[string]any{"id": "x"}} {
			_, err := callInTurn(t, cs, bad, era+" bad")
			werr := rpcError(t, err)
			if werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, `"airlock/turn" must be a string of 1 to 128 printable characters`) {
				t.Errorf("turn %q: error %d %q, want invalid params saying what to send", bad, werr.Code, werr.Message)
			}
		}
		if res, err := callInTurn(t, cs, strings.Repeat("é", 128), era+" long"); err != nil || res.IsError {
			t.Errorf("a turn of 128 characters: %v %+v, want ok", err, res)
		}
	})
	for _, line := range marks(t, f.mark, "call ") {
		if strings.Contains(line, "beyond") || strings.Contains(line, " bad") {
			t.Errorf("the server saw %q", line)
		}
	}
}
