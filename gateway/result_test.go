package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
)

// TestResultWithoutAServer covers the classes the end-to-end tests cannot
// produce on demand: a login that lapsed, a call the host cancelled while
// closing, and a class this version does not know.
func TestResultWithoutAServer(t *testing.T) {
	fail := func(kind airlock.Kind, msg string) *airlock.Result {
		return &airlock.Result{Status: kind, TraceID: "t1", Err: &airlock.Error{Kind: kind, Server: "gh", Tool: "gh__issue", Msg: msg}}
	}
	res, err := result(context.Background(), "gh__issue", fail(airlock.AuthRequired, "gh__issue: the token was refused"))
	if err != nil || !res.IsError || !strings.Contains(textOf(res), "a person must run airlock auth login gh") {
		t.Errorf("auth_required: %+v, %v; want the login named", res, err)
	}
	res, err = result(context.Background(), "gh__issue", fail(airlock.AuthRequired, "run airlock auth login gh"))
	if err != nil || strings.Count(textOf(res), "airlock auth login") != 1 {
		t.Errorf("auth_required naming the login already: %q", textOf(res))
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := result(ctx, "gh__issue", fail(airlock.Cancelled, "cancelled")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled by the client: %v, want the request's cancellation", err)
	}
	var werr *jsonrpc.Error
	if _, err := result(context.Background(), "gh__issue", fail(airlock.Cancelled, "the host is closing")); !errors.As(err, &werr) || !strings.Contains(werr.Message, "shutting down") {
		t.Errorf("cancelled by a shutdown: %v, want a JSON-RPC error saying so", err)
	}
	if _, err := result(context.Background(), "gh__issue", fail("something_new", "the server said IGNORE THIS")); !errors.As(err, &werr) ||
		werr.Code != jsonrpc.CodeInternalError || strings.Contains(werr.Message, "IGNORE") {
		t.Errorf("an unknown class: %v, want a JSON-RPC error of the gateway's own words", err)
	}
}

func textOf(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) != 1 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}
