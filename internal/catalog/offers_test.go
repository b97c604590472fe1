package catalog

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestOffers: a person sees every tool a server advertises, allowed or not,
// with its schemas and what allowing it would change, while the tools
// discovery binds (and a snapshot holds) are the allowed ones alone.
func TestOffers(t *testing.T) {
	sum := &mcp.Tool{Name: "sum", Description: "Add.\u202e", InputSchema: map[string]any{"type": "object",
		"properties": map[string]any{"a": map[string]any{"type": "number", "description": "first\u200b"}}, "required": []any{"a"}},
		OutputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{Title: "Sum"}}
	// A schema discovery would refuse is still shown as the server sent it.
	odd := &mcp.Tool{Name: "odd", InputSchema: map[string]any{"type": "string"}}
	cs := connect(t, pages{"": {Tools: []*mcp.Tool{tool("echo"), sum}, NextCursor: "2"}, "2": {Tools: []*mcp.Tool{odd}}})
	srv := server("echo")
	advertised, err := List(context.Background(), srv.ID, cs, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	bound, err := Allowed(srv, advertised, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"echo"}, names(bound)); diff != "" {
		t.Errorf("bound tools mismatch (-want +got):\n%s", diff)
	}
	snap, err := Build(bound, 1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.Lookup("srv__sum"); ok || len(snap.Tools()) != 1 {
		t.Errorf("the snapshot holds %d tools, want the allowed one only", len(snap.Tools()))
	}

	got := Offers(srv, advertised, Limits{})
	want := []Offer{
		{Server: "srv", Name: "echo", Description: "The echo tool.", Input: json.RawMessage(`{"type":"object"}`), Allowed: true},
		{Server: "srv", Name: "odd", Input: json.RawMessage(`{"type":"string"}`)},
		{Server: "srv", Name: "sum", Title: "Sum", Description: "Add.[U+202E]",
			Input:       json.RawMessage(`{"properties":{"a":{"description":"first[U+200B]","type":"number"}},"required":["a"],"type":"object"}`),
			Output:      json.RawMessage(`{"type":"object"}`),
			Annotations: &mcp.ToolAnnotations{Title: "Sum"}},
	}
	if diff := cmp.Diff(want, got, cmp.Transformer("json", func(r json.RawMessage) string { return string(r) })); diff != "" {
		t.Errorf("Offers mismatch (-want +got):\n%s", diff)
	}

	// An allowlist that names a tool the server lacks fails the server, but
	// the offers still show what there is to allow.
	if _, err := Allowed(server("echo", "summ"), advertised, Limits{}); err == nil {
		t.Error("Allowed with a missing tool succeeded")
	}
	if n := len(Offers(server("echo", "summ"), advertised, Limits{})); n != 3 {
		t.Errorf("%d offers, want 3", n)
	}
}
