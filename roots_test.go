//lint:file-ignore SA1019 the server under test asks for its client's roots, which protocol version 2026-07-28 deprecates (SEP-2577).

package airlock_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
)

// rootsOf is a RootsLister that gives uris, and records what it was asked.
type rootsOf struct {
	uris []string
	err  error

	mu    sync.Mutex
	asked []airlock.RootsRequest
}

func (r *rootsOf) list(_ context.Context, req *airlock.RootsRequest) (*mcp.ListRootsResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, *req)
	if r.err != nil {
		return nil, r.err
	}
	res := &mcp.ListRootsResult{Roots: []*mcp.Root{}}
	for _, u := range r.uris {
		res.Roots = append(res.Roots, &mcp.Root{URI: u})
	}
	return res, nil
}

// TestRootsGiven: a host given a RootsLister declares roots, and a
// server's request for them, in either era, gets what the lister gives
// (the call's own Call.Roots first); the request counts as a round and is
// on the record, the roots by their number and hash, their URIs only where
// audit.record_values covers the tool.
func TestRootsGiven(t *testing.T) {
	const uri = "file:///home/ada/secret-project"
	eachEra(t, func(t *testing.T, version string) {
		host := &rootsOf{uris: []string{"file:///elsewhere"}}
		h := openAsks(t, askConfig(t, version, ""), &airlock.Options{Roots: host.list})
		own := &rootsOf{uris: []string{uri}}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r := h.Call(ctx, h.Snapshot(), airlock.Call{ID: "call_1", Name: "roots", Arguments: json.RawMessage(`{}`), Roots: own.list})
		wantStatus(t, r, airlock.OK)
		if want := "roots 1 " + uri; r.Content != want {
			t.Errorf("the server saw %q, want %q", r.Content, want)
		}
		if len(own.asked) != 1 || len(host.asked) != 0 {
			t.Fatalf("the call's lister was asked %d times, the host's %d; want the call's, once", len(own.asked), len(host.asked))
		}
		if got := own.asked[0]; got.ToolCallID != "call_1" || got.Tool != "roots" || got.Server != "asks" || got.Round != 1 || got.Together != 1 {
			t.Errorf("the lister was asked %+v", got)
		}
		if r.InputRounds != 1 || len(r.Inputs) != 1 || r.Inputs[0].Kind != airlock.InputRoots || r.Inputs[0].Action != airlock.AnswerAccept {
			t.Errorf("rounds %d, inputs %+v; want one roots request, accepted", r.InputRounds, r.Inputs)
		}
		// Without a lister of its own, the call gets the host's.
		wantStatus(t, call(t, h, "roots", `{}`), airlock.OK)
		if len(host.asked) != 1 {
			t.Errorf("the host's lister was asked %d times, want once", len(host.asked))
		}
		h.Close()
		answers := auditEvents(t, h, "input_answer")
		if b, _ := json.Marshal(answers); strings.Contains(string(b), "secret-project") {
			t.Errorf("a root's URI reached the audit trail: %s", b)
		}
		if len(answers) != 2 || answers[0].Fields["kind"] != airlock.InputRoots || answers[0].Fields["roots"] != float64(1) ||
			answers[0].Fields["answer_hash"] == nil || answers[0].Fields["action"] != airlock.AnswerAccept {
			t.Errorf("audited answers %+v, want the roots' number and hash", answers)
		}
	})

	t.Run("record_values", func(t *testing.T) {
		cfg := askConfig(t, "2026-07-28", "")
		cfg.Audit.RecordValues = []string{"roots"}
		h := openAsks(t, cfg, &airlock.Options{Roots: (&rootsOf{uris: []string{uri}}).list})
		wantStatus(t, call(t, h, "roots", `{}`), airlock.OK)
		h.Close()
		if b, _ := json.Marshal(auditEvents(t, h, "input_answer")); !strings.Contains(string(b), "secret-project") {
			t.Errorf("audit.record_values names the tool, but the roots are not recorded: %s", b)
		}
	})
}

// TestRootsRefusedByTheLister: roots the lister refuses, or that are not
// file:// URIs, never reach the server: a 2025-11-25 server is answered
// with an error and goes on, a 2026-07-28 call ends denied (a refusal
// cannot be an input response).
func TestRootsRefusedByTheLister(t *testing.T) {
	for _, tt := range []struct {
		name   string
		lister *rootsOf
		why    string
	}{
		{"refused", &rootsOf{err: errors.New("the client declared no roots")}, "the client declared no roots"},
		{"not a file URI", &rootsOf{uris: []string{"file:///ok", "https://example.com/repo"}}, "root 2 is not a file:// URI"},
	} {
		t.Run(strings.ReplaceAll(tt.name, " ", "_"), func(t *testing.T) {
			eachEra(t, func(t *testing.T, version string) {
				h := openAsks(t, askConfig(t, version, ""), &airlock.Options{Roots: tt.lister.list})
				r := call(t, h, "roots", `{}`)
				if version == "2025-11-25" {
					wantStatus(t, r, airlock.OK)
					if r.Content != "refused -32603" {
						t.Errorf("the server saw %q, want its request refused", r.Content)
					}
				} else {
					wantStatus(t, r, airlock.Denied)
					if !strings.Contains(r.Content, "asked for the client's roots, and the host refused") || !strings.Contains(r.Content, tt.why) {
						t.Errorf("content %q, want the refusal saying %q", r.Content, tt.why)
					}
				}
				if len(r.Inputs) != 1 || r.Inputs[0].Kind != airlock.InputRoots || r.Inputs[0].Action != "" || !strings.Contains(r.Inputs[0].Reason, tt.why) {
					t.Errorf("inputs = %+v, want the roots request refused, saying %q", r.Inputs, tt.why)
				}
			})
		})
	}
}

// TestRootsOffered: a host with roots declares them, and a call offers a
// 2026-07-28 server roots only when its Call.Offers says it can answer
// them; a host without offers none, whatever a call says.
func TestRootsOffered(t *testing.T) {
	for _, tt := range []struct {
		name   string
		roots  bool // the host has a RootsLister
		offers *airlock.ClientFeatures
		want   string
	}{
		{"nil: the host's declaration", true, nil, "elicitation=[] sampling=true roots=true"},
		{"offered", true, &airlock.ClientFeatures{Sampling: true, Roots: true}, "elicitation=[] sampling=true roots=true"},
		{"not offered", true, &airlock.ClientFeatures{Sampling: true}, "elicitation=[] sampling=true"},
		{"a host without roots", false, &airlock.ClientFeatures{Sampling: true, Roots: true}, "elicitation=[] sampling=true"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := &airlock.Options{}
			if tt.roots {
				opts.Roots = (&rootsOf{}).list
			}
			h := openAsks(t, askConfig(t, "2026-07-28", config.SamplingAllow), opts)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := h.Call(ctx, h.Snapshot(), airlock.Call{Name: "caps", Arguments: json.RawMessage(`{}`), Offers: tt.offers})
			wantStatus(t, r, airlock.OK)
			if r.Content != tt.want {
				t.Errorf("the server heard %q, want %q", r.Content, tt.want)
			}
		})
	}
}
