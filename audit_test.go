package airlock_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/store"
)

// TestAuditTellsCallsApart: every event of one call (its decision, the
// approval asked, granted and used, the send, the artifact, the result)
// carries the call's id and no other call's; a result that has only
// content is recorded as its shape and hash, and as its redacted values
// for the tools audit.record_values names; and the result names the
// tenant and user as the approval events do, by name.
func TestAuditTellsCallsApart(t *testing.T) {
	const secret = "s3cr3t-audit-value-9"
	png := []byte("\x89PNG\r\n\x1a\n....")
	srv := mcp.NewServer(&mcp.Implementation{Name: "pics", Version: "1"}, nil)
	for _, name := range []string{"pic", "other"} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{
					&mcp.TextContent{Text: "a picture of " + secret},
					&mcp.ImageContent{Data: png, MIMEType: "image/png"},
				}}, nil
			})
	}
	cfg := governed(t, inProcess)
	cfg.Audit.RecordValues = []string{"c__pic"}
	st := sharedStore(t)
	h := openIn(t, cfg, map[string]*mcp.Server{"c": srv}, &airlock.Options{Store: st, StateDir: t.TempDir(),
		Principal: carol, Approver: &recordingApprover{}, Secrets: []string{secret}})
	pic := call(t, h, "c__pic", `{}`)
	other := call(t, h, "c__other", `{}`)
	for _, r := range []*airlock.Result{pic, other} {
		wantStatus(t, r, airlock.OK)
		if !strings.HasPrefix(r.CallID, "call_") || len(r.CallID) != len("call_")+26 {
			t.Fatalf("Result.CallID = %q, want call_ and 26 hex digits", r.CallID)
		}
	}
	if pic.CallID == other.CallID {
		t.Fatalf("two calls share the id %s", pic.CallID)
	}
	h.Close() // writes the audit trail

	events, err := st.Audit().Events(context.Background(), time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	byCall := map[string][]string{}
	results := map[string]store.Event{}
	for _, e := range events {
		id, _ := e.Fields["call"].(string)
		if id == "" {
			continue
		}
		byCall[id] = append(byCall[id], e.Event)
		if e.Event == store.EventResult {
			results[id] = e
		}
		if e.Fields["tenant"] != "acme" || e.Fields["user"] != "carol" {
			// The console shows an event that names nobody to every
			// principal: each event of a call names the call's.
			t.Errorf("%s of call %s names %v/%v, want acme/carol", e.Event, id, e.Fields["tenant"], e.Fields["user"])
		}
	}
	want := []string{store.EventDecision, store.EventApprovalRequested, store.EventApprovalGranted, store.EventApprovalUsed,
		store.EventCallSent, store.EventArtifactStored, store.EventResult}
	for _, r := range []*airlock.Result{pic, other} {
		got := slices.Clone(byCall[r.CallID])
		slices.Sort(got)
		w := slices.Clone(want)
		slices.Sort(w)
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("events of call %s (-want +got):\n%s", r.CallID, diff)
		}
	}
	if len(byCall) != 2 {
		t.Errorf("events carry %d call ids, want 2: %v", len(byCall), byCall)
	}

	shape := []any{
		map[string]any{"text": "string", "type": "string"},
		map[string]any{"artifact": "string", "media_type": "string", "size": "number", "type": "string"},
	}
	for _, r := range []*airlock.Result{pic, other} {
		f := results[r.CallID].Fields
		if diff := cmp.Diff(shape, f["content_shape"]); diff != "" {
			t.Errorf("%s: content_shape (-want +got):\n%s", r.CallID, diff)
		}
		if h, _ := f["content_hash"].(string); !strings.HasPrefix(h, "sha256:") {
			t.Errorf("%s: content_hash = %v", r.CallID, f["content_hash"])
		}
		if f["tenant"] != "acme" || f["user"] != "carol" {
			t.Errorf("result names %v/%v, want acme/carol as the approval events do", f["tenant"], f["user"])
		}
	}
	a := pic.Artifacts[0]
	values := []any{
		map[string]any{"type": "text", "text": "a picture of [REDACTED:secret]"},
		map[string]any{"type": "image", "artifact": a.ID, "media_type": "image/png", "size": float64(a.Size)},
	}
	if diff := cmp.Diff(values, results[pic.CallID].Fields["content"]); diff != "" {
		t.Errorf("content of c__pic, whose values are kept (-want +got):\n%s", diff)
	}
	if v, ok := results[other.CallID].Fields["content"]; ok {
		t.Errorf("content of c__other = %v, want only its shape and hash", v)
	}
}

// TestAuditKeepsToolErrorsAsShape: a tool error's text is the tool's
// result, so the audit trail keeps it as the content's shape and hash, as
// for any result, unless audit.record_values names the tool: not whole in
// the result's error field (where it could hold whatever the tool echoed,
// and be as large as the server made it).
func TestAuditKeepsToolErrorsAsShape(t *testing.T) {
	const private = "patient=Jane Doe ssn=123-45-6789"
	s := mcp.NewServer(&mcp.Implementation{Name: "failing", Version: "1"}, nil)
	for _, name := range []string{"kept", "hashed"} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{IsError: true, Content: text("no record for " + private)}, nil
			})
	}
	cfg := newConfig(t, inProcess)
	cfg.Audit.RecordValues = []string{"c__kept"}
	st := sharedStore(t)
	h := openIn(t, cfg, map[string]*mcp.Server{"c": s}, &airlock.Options{Store: st, StateDir: t.TempDir()})
	kept, hashed := call(t, h, "c__kept", `{}`), call(t, h, "c__hashed", `{}`)
	wantStatus(t, kept, airlock.ToolError)
	wantStatus(t, hashed, airlock.ToolError)
	h.Close()

	events, err := st.Audit().Events(context.Background(), time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Event != store.EventResult {
			continue
		}
		b, _ := json.Marshal(e.Fields)
		switch e.Fields["call"] {
		case hashed.CallID:
			if strings.Contains(string(b), private) {
				t.Errorf("the result of c__hashed, whose values are not kept, holds its text: %s", b)
			}
			if h, _ := e.Fields["content_hash"].(string); !strings.HasPrefix(h, "sha256:") {
				t.Errorf("the result of c__hashed has no content_hash: %s", b)
			}
		case kept.CallID:
			if !strings.Contains(string(b), private) {
				t.Errorf("the result of c__kept, whose values are kept, lacks its text: %s", b)
			}
		}
	}
}
