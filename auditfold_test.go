package airlock_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
)

// callEvents returns the audit events of one call, in the order they
// were written; the host must be closed (its trail written).
func callEvents(t *testing.T, h *airlock.Host, callID string) []store.Event {
	t.Helper()
	return hostEvents(t, h, func(e store.Event) bool { return e.Fields["call"] == callID })
}

func eventNames(evs []store.Event) []string {
	names := make([]string, len(evs))
	for i, e := range evs {
		names[i] = e.Event
	}
	return names
}

// wantEvents checks the names of a call's events, and returns them by name
// (the last of each).
func wantEvents(t *testing.T, evs []store.Event, want ...string) map[string]store.Event {
	t.Helper()
	if diff := cmp.Diff(want, eventNames(evs)); diff != "" {
		t.Errorf("events of the call (-want +got):\n%s", diff)
	}
	by := map[string]store.Event{}
	for _, e := range evs {
		by[e.Event] = e
	}
	return by
}

// TestAuditFoldsAllowedReads: a read that hooks and policy allow without
// asking, sent once, leaves one result event that carries what its
// decision and call_sent events would have said; a call refused, asked
// for, failing before it is sent, or a write keeps its events as they
// are, and its result does not repeat the decision.
func TestAuditFoldsAllowedReads(t *testing.T) {
	const args = `{"text":"folded"}`
	var writeDecision store.Event
	for _, tt := range []struct {
		name, effect, rule, args string
		status                   airlock.Kind
		want                     []string
	}{
		// The allowed write first: its decision event is what the folded
		// read's result is compared with.
		{"allowed write", "write", "allow", args, airlock.OK,
			[]string{store.EventDecision, store.EventCallSent, store.EventResult}},
		{"allowed read", "read", "", args, airlock.OK, []string{store.EventResult}},
		{"read allowed by a rule", "read", "allow", args, airlock.OK, []string{store.EventResult}},
		{"read that fails before it is sent", "read", "", `{}`, airlock.InvalidArguments,
			[]string{store.EventDecision, store.EventResult}},
		{"denied read", "read", "deny", args, airlock.Denied, []string{store.EventDecision, store.EventResult}},
		{"read asked for", "read", "ask", args, airlock.ApprovalRequired,
			[]string{store.EventDecision, store.EventApprovalRequested, store.EventResult}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &counted{}
			cfg := governed(t, inProcess)
			classify(cfg, "c", tt.effect, "note")
			if tt.rule != "" {
				cfg.Policy.Rules = []config.Rule{{Server: "c", Tool: "note", Decision: tt.rule, Source: "test:1"}}
			}
			h := openIn(t, cfg, map[string]*mcp.Server{"c": c.server()}, nil)
			r := call(t, h, "c__note", tt.args)
			wantStatus(t, r, tt.status)
			h.Close()
			by := wantEvents(t, callEvents(t, h, r.CallID), tt.want...)
			res := by[store.EventResult]
			if res.Class != string(tt.status) {
				t.Errorf("result class = %s, want %s", res.Class, tt.status)
			}
			d, folded := by[store.EventDecision], len(tt.want) == 1
			if folded {
				d = res // the result says what the decision said
			} else if _, ok := res.Fields["decision"]; ok {
				t.Errorf("the result of a call whose decision was written repeats it: %v", res.Fields)
			}
			for key, want := range map[string]any{"decision": string(r.Decision.Verdict), "rule": r.Decision.Rule,
				"reason": r.Decision.Reason, "effect": tt.effect, "generation": 1.0} {
				if d.Fields[key] != want {
					t.Errorf("%s %s = %v, want %v", d.Event, key, d.Fields[key], want)
				}
			}
			if tt.rule != "" && r.Decision.Rule == "default" {
				t.Errorf("decision rule = %s, want the test's", r.Decision.Rule)
			}
			switch {
			case tt.name == "allowed write":
				writeDecision = d
				if sent := by[store.EventCallSent]; sent.Fields["attempt"] != 1.0 || sent.Fields["intent"] == "" {
					t.Errorf("call_sent of a write = %v, want attempt 1 and its journal record", sent.Fields)
				}
			case folded:
				if res.Fields["attempt"] != 1.0 {
					t.Errorf("result attempt = %v, want 1", res.Fields["attempt"])
				}
				if _, ok := res.Fields["intent"]; ok {
					t.Errorf("the result of a read names a journal record: %v", res.Fields)
				}
				for _, key := range []string{"args_shape", "args_hash"} {
					if diff := cmp.Diff(writeDecision.Fields[key], res.Fields[key]); diff != "" || res.Fields[key] == nil {
						t.Errorf("result %s, against the write's decision with the same arguments (-want +got):\n%s", key, diff)
					}
				}
			default:
				if _, ok := by[store.EventCallSent]; ok {
					t.Error("a call that was not sent has a call_sent event")
				}
			}
		})
	}
}

// TestAuditFoldsReadsAndGets: resource reads and prompt gets allowed
// without asking leave one result event too (with the artifacts their
// content was stored as before it); a read policy denies keeps its
// decision event.
func TestAuditFoldsReadsAndGets(t *testing.T) {
	ctx := context.Background()
	h := openContentHost(t, newContentServer(), "2025-11-25", func(cfg *config.Config) {
		cfg.Policy.Rules = []config.Rule{{Server: "content", Resource: "test://static/blob", Decision: "deny", Source: "test:1"}}
	}, nil)
	snap := h.Snapshot()
	read := h.ReadResource(ctx, snap, airlock.Read{URI: "test://static/text"})
	wantStatus(t, read, airlock.OK)
	denied := h.ReadResource(ctx, snap, airlock.Read{URI: "test://static/blob"})
	wantStatus(t, denied, airlock.Denied)
	get := h.GetPrompt(ctx, snap, airlock.PromptGet{Name: "content__greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	wantStatus(t, get, airlock.OK)
	h.Close()

	res := wantEvents(t, callEvents(t, h, read.CallID), store.EventResult)[store.EventResult]
	for key, want := range map[string]any{"decision": "allow", "rule": "default", "effect": "read", "attempt": 1.0,
		"uri": "test://static/text"} {
		if res.Fields[key] != want {
			t.Errorf("read's result %s = %v, want %v", key, res.Fields[key], want)
		}
	}
	by := wantEvents(t, callEvents(t, h, denied.CallID), store.EventDecision, store.EventResult)
	if d := by[store.EventDecision]; d.Fields["decision"] != "deny" || d.Fields["uri"] != "test://static/blob" {
		t.Errorf("denied read's decision = %v", d.Fields)
	}
	res = wantEvents(t, callEvents(t, h, get.CallID), store.EventArtifactStored, store.EventArtifactStored,
		store.EventResult)[store.EventResult]
	for key, want := range map[string]any{"decision": "allow", "effect": "read", "attempt": 1.0} {
		if res.Fields[key] != want {
			t.Errorf("get's result %s = %v, want %v", key, res.Fields[key], want)
		}
	}
	if res.Fields["args_hash"] == nil || res.Fields["rule"] == nil {
		t.Errorf("get's result = %v, want its arguments' record and rule", res.Fields)
	}
}

// TestAuditKeepsTheEventsOfAReadSentAgain: a read sent again on a new
// session after the server lost its own keeps a call_sent event for each
// attempt, after its decision; the first read, sent once, is folded.
func TestAuditKeepsTheEventsOfAReadSentAgain(t *testing.T) {
	c := &counted{}
	hs := newHTTPServer(t, c.server, false)
	srv := remote("web", hs.url)
	srv.ProtocolVersions = []string{"2025-11-25"}
	cfg := devConfig(t, srv)
	cfg.Policy.Rules = nil
	classify(cfg, "web", "read", "note")
	h := open(t, cfg)
	first := call(t, h, "web__note", `{"text":"before"}`)
	wantStatus(t, first, airlock.OK)
	hs.forget(false)
	again := call(t, h, "web__note", `{"text":"after"}`)
	wantStatus(t, again, airlock.OK)
	if n := c.calls.Load(); n != 2 {
		t.Fatalf("note ran %d times, want 2", n)
	}
	h.Close()

	wantEvents(t, callEvents(t, h, first.CallID), store.EventResult)
	evs := callEvents(t, h, again.CallID)
	by := wantEvents(t, evs, store.EventDecision, store.EventCallSent, store.EventCallSent, store.EventResult)
	if len(evs) == 4 && (evs[1].Fields["attempt"] != 1.0 || evs[2].Fields["attempt"] != 2.0) {
		t.Errorf("attempts %v, %v; want 1, 2", evs[1].Fields["attempt"], evs[2].Fields["attempt"])
	}
	if d := by[store.EventDecision]; d.Fields["decision"] != "allow" || d.Fields["args_hash"] == nil {
		t.Errorf("decision = %v", d.Fields)
	}
	if res := by[store.EventResult]; res.Fields["decision"] != nil || res.Fields["connection"] != 2.0 {
		t.Errorf("result = %v, want the new connection and no second copy of the decision", res.Fields)
	}
}

// TestAuditKeepsTheEventsOfAReadThatAsks: a read during which the server
// asks for input keeps its decision and call_sent events, before the
// questions and answers.
func TestAuditKeepsTheEventsOfAReadThatAsks(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		elicit := func(context.Context, *airlock.InputRequest) (*airlock.InputAnswer, error) {
			return accept(map[string]any{"a": "y"}), nil
		}
		h := openAsks(t, askConfig(t, version, ""), &airlock.Options{Elicit: elicit})
		r := call(t, h, "multi", `{"rounds":1}`)
		wantStatus(t, r, airlock.OK)
		h.Close()
		by := wantEvents(t, callEvents(t, h, r.CallID), store.EventDecision, store.EventCallSent, "input_request",
			"input_answer", store.EventResult)
		if res := by[store.EventResult]; res.Fields["decision"] != nil || res.Fields["input_rounds"] != 1.0 {
			t.Errorf("result = %v, want one round and no second copy of the decision", res.Fields)
		}
	})
}
