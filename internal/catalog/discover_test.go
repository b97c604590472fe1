package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/config"
)

// pages serves a scripted tools/list: the page for cursor c is pages[c]
// (the first page has cursor ""). It stands in for a broken or hostile
// server, which the SDK's own server would never be.
type pages map[string]*mcp.ListToolsResult

// connect runs an SDK server whose tools/list answers come from p, over
// in-memory transports, and returns a client session to it.
func connect(t *testing.T, p pages) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "scripted", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "placeholder", InputSchema: map[string]any{"type": "object"}}, nil)
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/list" {
				return next(ctx, method, req)
			}
			cursor := req.GetParams().(*mcp.ListToolsParams).Cursor
			res, ok := p[cursor]
			if !ok {
				return nil, fmt.Errorf("unknown cursor %q", cursor)
			}
			return res, nil
		}
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	// The legacy protocol: the 2026-07-28 client caches list results.
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func tool(name string) *mcp.Tool {
	return &mcp.Tool{Name: name, Description: "The " + name + " tool.", InputSchema: map[string]any{"type": "object"}}
}

func server(allowed ...string) *config.Server {
	return &config.Server{ID: "srv", AllowedTools: allowed}
}

func names(tools []*Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Remote)
	}
	return out
}

func TestDiscoverPages(t *testing.T) {
	cs := connect(t, pages{
		"":   {Tools: []*mcp.Tool{tool("b"), tool("a")}, NextCursor: "p2"},
		"p2": {Tools: []*mcp.Tool{tool("c")}, NextCursor: "p3"},
		"p3": {Tools: []*mcp.Tool{tool("d")}},
	})
	got, err := Discover(context.Background(), server("*"), cs, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "d"}, names(got)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	got, err = Discover(context.Background(), server("c", "a"), cs, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "c"}, names(got)); diff != "" {
		t.Errorf("allowed tools (-want +got):\n%s", diff)
	}
}

func TestDiscoverRejects(t *testing.T) {
	many := make([]*mcp.Tool, 11)
	for i := range many {
		many[i] = tool(fmt.Sprintf("t%d", i))
	}
	bad := func(schema any) *mcp.Tool {
		return &mcp.Tool{Name: "bad", InputSchema: schema}
	}
	tests := []struct {
		name    string
		pages   pages
		allowed []string
		limits  Limits
		want    string
	}{
		{"cursor loop", pages{"": {Tools: []*mcp.Tool{tool("a")}, NextCursor: "x"}, "x": {Tools: []*mcp.Tool{tool("b")}, NextCursor: "x"}}, []string{"*"}, Limits{}, "repeated a cursor"},
		{"page limit", pages{"": {NextCursor: "1"}, "1": {NextCursor: "2"}, "2": {NextCursor: "3"}, "3": {}}, []string{"*"}, Limits{MaxPages: 3}, "more than 3 pages (limits.max_pages)"},
		{"catalog size", pages{"": {Tools: many}}, []string{"t1"}, Limits{MaxTools: 10}, "more than 10 tools (limits.max_tools)"},
		{"duplicate names", pages{"": {Tools: []*mcp.Tool{tool("a")}, NextCursor: "2"}, "2": {Tools: []*mcp.Tool{tool("a")}}}, []string{"*"}, Limits{}, `two tools named "a"`},
		{"allowed tool missing", pages{"": {Tools: []*mcp.Tool{tool("a")}}}, []string{"a", "zap"}, Limits{}, "does not have: zap"},
		{"allowed tool misspelt", pages{"": {Tools: []*mcp.Tool{tool("read_file"), tool("write_file")}}}, []string{"raed_file", "write_file", "zap"}, Limits{}, `does not have: raed_file (did you mean "read_file"?), zap`},
		{"input schema not an object", pages{"": {Tools: []*mcp.Tool{bad(map[string]any{"type": "string"})}}}, []string{"*"}, Limits{}, `tool "bad": inputSchema`},
		{"input schema does not compile", pages{"": {Tools: []*mcp.Tool{bad(map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": 7}}})}}}, []string{"*"}, Limits{}, `tool "bad": inputSchema`},
		{"external ref", pages{"": {Tools: []*mcp.Tool{bad(map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"$ref": "https://example.com/s.json"}}})}}}, []string{"*"}, Limits{}, `tool "bad": inputSchema`},
		{"unknown keyword", pages{"": {Tools: []*mcp.Tool{bad(map[string]any{"type": "object", "unevaluatedProperties": false})}}}, []string{"*"}, Limits{}, "unevaluatedProperties"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := connect(t, tt.pages)
			got, err := Discover(context.Background(), server(tt.allowed...), cs, tt.limits)
			var ce *ContractError
			if !errors.As(err, &ce) {
				t.Fatalf("Discover = %v, %v; want a contract error", names(got), err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestDiscoverSchemaBombQuickly(t *testing.T) {
	// 2 KB whose full expansion has 2^40 nodes.
	defs := map[string]any{}
	for i := range 40 {
		next := map[string]any{"type": "string"}
		if i < 39 {
			ref := map[string]any{"$ref": fmt.Sprintf("#/$defs/d%d", i+1)}
			next = map[string]any{"anyOf": []any{ref, ref}}
		}
		defs[fmt.Sprintf("d%d", i)] = next
	}
	bomb := map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/d0"}}, "$defs": defs}
	if b, _ := json.Marshal(bomb); len(b) > 4096 {
		t.Fatalf("bomb is %d bytes, want a small one", len(b))
	}
	cs := connect(t, pages{"": {Tools: []*mcp.Tool{{Name: "bomb", InputSchema: bomb}}}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := Discover(ctx, server("*"), cs, Limits{})
	var ce *ContractError
	if !errors.As(err, &ce) {
		t.Fatalf("Discover = %v, want the bomb rejected as a contract error within a second", err)
	}
}

func TestDiscoverCutsDescriptions(t *testing.T) {
	long := &mcp.Tool{Name: "long", Description: strings.Repeat("é", 50), InputSchema: map[string]any{"type": "object"}}
	cs := connect(t, pages{"": {Tools: []*mcp.Tool{long}}})
	got, err := Discover(context.Background(), server("*"), cs, Limits{MaxDescription: 10})
	if err != nil {
		t.Fatal(err)
	}
	if d := got[0].Description; d != strings.Repeat("é", 9)+"…" {
		t.Errorf("description = %q, want 10 characters", d)
	}
}
