package airlock_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
)

// TestCallOffers: a 2026-07-28 server hears with each call the client
// features the call offers (Call.Offers), of those the host declared to
// it; a tool that needs one the call does not offer is refused by the
// server (-32021), and the call ends denied, naming it, in the host's own
// words. A 2025-11-25 server hears the host's declaration, once.
func TestCallOffers(t *testing.T) {
	callOffering := func(h *airlock.Host, offers *airlock.ClientFeatures) *airlock.Result {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return h.Call(ctx, h.Snapshot(), airlock.Call{Name: "caps", Arguments: json.RawMessage(`{}`), Offers: offers})
	}
	for _, tt := range []struct {
		name, sampling string
		offers         *airlock.ClientFeatures
		want           string // the server's answer; "" for denied
	}{
		{"nil: the host's declaration", config.SamplingAllow, nil, "elicitation=[form url] sampling=true"},
		{"everything", config.SamplingAllow, &airlock.ClientFeatures{Elicitation: true, ElicitURL: true, Sampling: true}, "elicitation=[form url] sampling=true"},
		{"sampling only", config.SamplingAllow, &airlock.ClientFeatures{Sampling: true}, "elicitation=[] sampling=true"},
		{"forms only", config.SamplingAllow, &airlock.ClientFeatures{Elicitation: true}, ""},
		{"nothing", config.SamplingAllow, &airlock.ClientFeatures{}, ""},
		{"sampling: ask needs a person too", config.SamplingAsk, &airlock.ClientFeatures{Sampling: true}, ""},
		{"sampling: ask with a person", config.SamplingAsk, &airlock.ClientFeatures{Elicitation: true, Sampling: true}, "elicitation=[form] sampling=true"},
		{"sampling the host never declared", config.SamplingDeny, &airlock.ClientFeatures{Sampling: true}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := openAsks(t, askConfig(t, "2026-07-28", tt.sampling), &airlock.Options{Elicit: decline})
			r := callOffering(h, tt.offers)
			if tt.want != "" {
				wantStatus(t, r, airlock.OK)
				if r.Content != tt.want {
					t.Errorf("the server heard %q, want %q", r.Content, tt.want)
				}
				return
			}
			wantStatus(t, r, airlock.Denied)
			if got := airlock.MissingFeatures(r.Err); !slices.Equal(got, []string{"sampling"}) {
				t.Errorf("MissingFeatures = %v, want [sampling]", got)
			}
			if !strings.Contains(r.Content, "caps refused: server asks needs client features this call does not offer (sampling)") ||
				strings.Contains(r.Content, "IGNORE") {
				t.Errorf("content %q, want the host's words naming sampling", r.Content)
			}
		})
	}
	t.Run("2025-11-25", func(t *testing.T) {
		h := openAsks(t, askConfig(t, "2025-11-25", config.SamplingAllow), &airlock.Options{Elicit: decline})
		r := callOffering(h, &airlock.ClientFeatures{})
		wantStatus(t, r, airlock.OK) // its session heard the host's declaration
	})
	t.Run("other errors", func(t *testing.T) {
		if got := airlock.MissingFeatures(&airlock.Error{Kind: airlock.Denied, Msg: "policy"}); got != nil {
			t.Errorf("MissingFeatures of a policy denial = %v", got)
		}
	})
}

// TestAskAtOnce: a call that takes a round's requests at once
// (Call.AskAtOnce) gets them together, each with the server's key and the
// count; without it they come one at a time, in the order of their keys.
func TestAskAtOnce(t *testing.T) {
	for _, atOnce := range []bool{true, false} {
		var mu sync.Mutex
		var asked []string
		both := make(chan struct{})
		elicit := func(ctx context.Context, req *airlock.InputRequest) (*airlock.InputAnswer, error) {
			mu.Lock()
			asked = append(asked, req.Key)
			if len(asked) == 2 {
				close(both)
			}
			mu.Unlock()
			if want := map[bool]int{true: 2, false: 1}[atOnce]; req.Together != want {
				t.Errorf("at once %t: Together = %d, want %d", atOnce, req.Together, want)
			}
			if atOnce {
				select { // each waits for the other: they are asked together
				case <-both:
				case <-time.After(10 * time.Second):
					t.Errorf("request %s waited alone", req.Key)
				}
			}
			return accept(map[string]any{"a": req.Key + "!"}), nil
		}
		h := openAsks(t, askConfig(t, "2026-07-28", ""), &airlock.Options{Elicit: decline})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r := h.Call(ctx, h.Snapshot(), airlock.Call{Name: "pair", Arguments: json.RawMessage(`{}`), Elicit: elicit, AskAtOnce: atOnce})
		cancel()
		wantStatus(t, r, airlock.OK)
		if r.Content != "first! second!" || r.InputRounds != 1 || len(r.Inputs) != 2 {
			t.Errorf("at once %t: %q, %d rounds, %d inputs; want both answers in one round", atOnce, r.Content, r.InputRounds, len(r.Inputs))
		}
		if !atOnce {
			if diff := cmp.Diff([]string{"first", "second"}, asked); diff != "" {
				t.Errorf("asked (-want +got):\n%s", diff)
			}
		}
	}
}

// decline is an Elicitor that declines: with it, the host declares
// elicitation to servers.
func decline(context.Context, *airlock.InputRequest) (*airlock.InputAnswer, error) { return nil, nil }

// TestCallOffersOverHTTP: a remote 2026-07-28 server hears what the call
// offers, and its refusal (-32021, which it answers with HTTP 400) ends
// the call denied, as over stdio.
func TestCallOffersOverHTTP(t *testing.T) {
	hs := newHTTPServer(t, askServer, true)
	srv := remote("asks", hs.url)
	srv.ProtocolVersions, srv.ToolPrefix, srv.Sampling = []string{"2026-07-28"}, new(string), config.SamplingAllow
	cfg := devConfig(t, srv)
	classify(cfg, "asks", "read", "caps")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := openWith(t, cfg, &airlock.Options{Elicit: decline})
	r := h.Call(ctx, h.Snapshot(), airlock.Call{Name: "caps", Offers: &airlock.ClientFeatures{Sampling: true}})
	wantStatus(t, r, airlock.OK)
	if r.Content != "elicitation=[] sampling=true" {
		t.Errorf("the server heard %q", r.Content)
	}
	r = h.Call(ctx, h.Snapshot(), airlock.Call{Name: "caps", Offers: &airlock.ClientFeatures{Elicitation: true}})
	wantStatus(t, r, airlock.Denied)
	if got := airlock.MissingFeatures(r.Err); !slices.Equal(got, []string{"sampling"}) {
		t.Errorf("MissingFeatures = %v, want [sampling]", got)
	}
}

// TestTitledMultiSelect: a form whose multi-select items carry a type
// beside their titled choices (which the SDK's client refuses) reaches
// the person, in both eras, and the answer is checked against it. (The
// SDK's server refuses an accepted answer to it, so the person declines
// in the end.)
func TestTitledMultiSelect(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		p := &person{answers: []*airlock.InputAnswer{accept(map[string]any{"pick": []any{"v3"}}), {Action: airlock.AnswerDecline}}}
		h := openAsks(t, askConfig(t, version, ""), &airlock.Options{Elicit: p.elicit})
		r := call(t, h, "titled", `{}`)
		wantStatus(t, r, airlock.OK)
		if r.Content != `decline null` {
			t.Errorf("the server saw %q", r.Content)
		}
		if asked := p.requests(); len(asked) != 2 || asked[1].Problem == "" {
			t.Errorf("asked %+v, want the answer outside the choices sent back", asked)
		}
	})
}
