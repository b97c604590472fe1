//lint:file-ignore SA1019 the tests sample for a server, which protocol version 2026-07-28 deprecates (SEP-2577).

package airlock_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
)

// A person is a scripted Elicitor: it answers each request with the next
// of its answers (the last one again when they run out) and keeps what it
// was asked.
type person struct {
	mu      sync.Mutex
	answers []*airlock.InputAnswer
	asked   []airlock.InputRequest
}

func (p *person) elicit(ctx context.Context, req *airlock.InputRequest) (*airlock.InputAnswer, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, *req)
	a := p.answers[min(len(p.asked), len(p.answers))-1]
	return a, nil
}

func (p *person) requests() []airlock.InputRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]airlock.InputRequest(nil), p.asked...)
}

func accept(content map[string]any) *airlock.InputAnswer {
	return &airlock.InputAnswer{Action: airlock.AnswerAccept, Content: content}
}

// openAsks opens a host on cfg whose server is an askServer, with opts.
func openAsks(t *testing.T, cfg *config.Config, opts *airlock.Options) *airlock.Host {
	t.Helper()
	s := askServer()
	opts.Dial = func(config.Server) mcp.Transport {
		st, ct := mcp.NewInMemoryTransports()
		if _, err := s.Connect(context.Background(), st, nil); err != nil {
			t.Fatal(err)
		}
		return ct
	}
	return openWith(t, cfg, opts)
}

// eachEra runs f for both protocol eras.
func eachEra(t *testing.T, f func(t *testing.T, version string)) {
	for _, v := range bothVersions {
		t.Run(v, func(t *testing.T) { f(t, v) })
	}
}

// TestElicitForm: a form goes to the person with its schema, message and
// who asks; what the person left out that has a default gets it
// (SEP-1034); the server sees the checked answer; the result says the
// server asked, once.
func TestElicitForm(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		p := &person{answers: []*airlock.InputAnswer{accept(map[string]any{"age": 30})}}
		h := openAsks(t, askConfig(t, version, ""), &airlock.Options{Elicit: p.elicit})
		r := call(t, h, "form", `{}`)
		wantStatus(t, r, airlock.OK)
		if want := `accept {"age":30,"color":"green","name":"John Doe","score":95.5}`; r.Content != want {
			t.Errorf("the server saw %q, want %q", r.Content, want)
		}
		asked := p.requests()
		if len(asked) != 1 {
			t.Fatalf("the person was asked %d times, want 1", len(asked))
		}
		q := asked[0]
		if q.Kind != airlock.InputElicitation || q.Mode != airlock.ElicitForm || q.Message != "Who are you?" || q.Round != 1 ||
			q.ToolCallID != "call_1" || q.Tool != "form" || q.Server != "asks" || !strings.HasPrefix(q.ID, "inq_") {
			t.Errorf("request = %+v", q)
		}
		var schema struct {
			Properties map[string]map[string]any
		}
		if err := json.Unmarshal(q.Schema, &schema); err != nil || schema.Properties["name"]["default"] != "John Doe" {
			t.Errorf("schema = %s (%v), want the form's with its defaults", q.Schema, err)
		}
		if r.InputRounds != 1 || len(r.Inputs) != 1 || r.Inputs[0].Action != airlock.AnswerAccept || r.Inputs[0].ID != q.ID {
			t.Errorf("rounds %d, inputs %+v; want one accepted", r.InputRounds, r.Inputs)
		}
	})
}

// TestElicitURL: a URL request reaches the person with its domain; the
// host opens nothing; the audit trail keeps the domain, not the URL.
func TestElicitURL(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		p := &person{answers: []*airlock.InputAnswer{{Action: airlock.AnswerAccept}}}
		h := openAsks(t, askConfig(t, version, ""), &airlock.Options{Elicit: p.elicit})
		r := call(t, h, "url", `{}`)
		wantStatus(t, r, airlock.OK)
		if r.Content != "accept" {
			t.Errorf("the server saw %q, want accept", r.Content)
		}
		q := p.requests()[0]
		if q.Mode != airlock.ElicitURL || q.Domain != "auth.example.com" || !strings.HasPrefix(q.URL, "https://auth.example.com/connect") || q.Schema != nil {
			t.Errorf("request = %+v", q)
		}
		h.Close()
		evs := auditEvents(t, h, "input_request")
		if len(evs) != 1 || evs[0].Fields["domain"] != "auth.example.com" {
			t.Fatalf("input_request events = %+v", evs)
		}
		b, _ := json.Marshal(evs)
		if strings.Contains(string(b), "s3cr3t-url-token") {
			t.Errorf("the audit trail keeps the URL: %s", b)
		}
	})
}

// TestElicitDeclineAndCancel: the person's decline and cancel reach the
// server as they are.
func TestElicitDeclineAndCancel(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		for _, action := range []string{airlock.AnswerDecline, airlock.AnswerCancel} {
			p := &person{answers: []*airlock.InputAnswer{{Action: action}}}
			h := openAsks(t, askConfig(t, version, ""), &airlock.Options{Elicit: p.elicit})
			r := call(t, h, "form", `{}`)
			wantStatus(t, r, airlock.OK)
			if want := action + " null"; r.Content != want {
				t.Errorf("the server saw %q, want %q", r.Content, want)
			}
		}
	})
}

// TestElicitCallsOwnElicitor: a call's own Elicitor goes first (as the
// gateway's do); the host's answers the others, and one that answers nil
// declines.
func TestElicitCallsOwnElicitor(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		decline := func(context.Context, *airlock.InputRequest) (*airlock.InputAnswer, error) { return nil, nil }
		h := openAsks(t, askConfig(t, version, ""), &airlock.Options{Elicit: decline})
		r := call(t, h, "form", `{}`)
		wantStatus(t, r, airlock.OK)
		if r.Content != "decline null" {
			t.Errorf("without a call's own Elicitor the server saw %q, want a decline", r.Content)
		}
		p := &person{answers: []*airlock.InputAnswer{accept(map[string]any{"age": 7})}}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r = h.Call(ctx, h.Snapshot(), airlock.Call{ID: "c2", Name: "form", Elicit: p.elicit})
		wantStatus(t, r, airlock.OK)
		if !strings.HasPrefix(r.Content, `accept {"age":7`) {
			t.Errorf("with its own Elicitor the server saw %q", r.Content)
		}
	})
}

// TestElicitNobodyToAsk: a host with no Elicitor declares no
// elicitation; a 2026-07-28 server that asks all the same breaks the
// contract, and the result says what it asked.
func TestElicitNobodyToAsk(t *testing.T) {
	h := openAsks(t, askConfig(t, "2026-07-28", ""), &airlock.Options{})
	r := call(t, h, "form", `{}`)
	wantStatus(t, r, airlock.ContractError)
	if !strings.Contains(r.Err.Msg, "asked for elicitation, which Airlock did not declare") {
		t.Errorf("error = %q", r.Err.Msg)
	}
	if len(r.Inputs) != 1 || r.Inputs[0].Kind != airlock.InputElicitation || r.Inputs[0].Message != "Who are you?" || r.Inputs[0].Action != "" {
		t.Errorf("inputs = %+v, want the refused question", r.Inputs)
	}
}

// TestElicitMultiRound: several rounds, each a new request that echoes
// the server's signed requestState unchanged, one journal intent and one
// result with the round count.
func TestElicitMultiRound(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		var mu sync.Mutex
		n := 0
		elicit := func(_ context.Context, req *airlock.InputRequest) (*airlock.InputAnswer, error) {
			mu.Lock()
			defer mu.Unlock()
			n++
			if req.Round != n || req.Message != fmt.Sprintf("question %d", n) {
				t.Errorf("asked %+v in round %d", req, n)
			}
			// The server keeps the answers in its signed requestState:
			// characters JSON escapes must come back as they went.
			return accept(map[string]any{"a": fmt.Sprintf("x%d\u2028\"é<", n)}), nil
		}
		cfg := askConfig(t, version, "")
		for i := range cfg.Policy.Tools {
			if cfg.Policy.Tools[i].Tool == "multi" {
				cfg.Policy.Tools[i].Effect = "write" // journaled: one intent for every round
			}
		}
		h := openAsks(t, cfg, &airlock.Options{Elicit: elicit})
		r := call(t, h, "multi", `{"rounds":3}`)
		wantStatus(t, r, airlock.OK)
		if r.Content != "answers x1\u2028\"é<,x2\u2028\"é<,x3\u2028\"é<" || r.InputRounds != 3 || len(r.Inputs) != 3 {
			t.Errorf("content %q, rounds %d, inputs %d; want three rounds answered", r.Content, r.InputRounds, len(r.Inputs))
		}
		h.Close()
		sent := auditEvents(t, h, store.EventCallSent)
		results := auditEvents(t, h, store.EventResult)
		if len(sent) != 1 || len(results) != 1 || results[0].Fields["input_rounds"] != float64(3) {
			t.Errorf("call_sent %d, result %+v; want one intent and three rounds", len(sent), results)
		}
		answers := auditEvents(t, h, "input_answer")
		if len(answers) != 3 {
			t.Fatalf("%d input_answer events, want 3", len(answers))
		}
		for _, e := range answers {
			if e.Fields["answer_hash"] == nil || e.Fields["answer_shape"] == nil || e.Fields["answer"] != nil || e.Fields["call"] != r.CallID {
				t.Errorf("input_answer = %+v; want the answer's shape and hash only, for the call", e.Fields)
			}
		}
	})
}

// TestInputRoundLimit: a server that asks for ever is stopped at
// limits.max_input_rounds.
func TestInputRoundLimit(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		p := &person{answers: []*airlock.InputAnswer{accept(nil)}}
		cfg := askConfig(t, version, "")
		cfg.Limits.MaxInputRounds = 3
		h := openAsks(t, cfg, &airlock.Options{Elicit: p.elicit})
		r := call(t, h, "loop", `{}`)
		wantStatus(t, r, airlock.ContractError)
		if !strings.Contains(r.Err.Msg, "limits.max_input_rounds") || r.Content != "" {
			t.Errorf("error %q, content %q", r.Err.Msg, r.Content)
		}
		if got := len(p.requests()); got != 3 {
			t.Errorf("the person was asked %d times, want 3", got)
		}
		// An older server may ask once more before it hears that the call
		// was cancelled: it is counted, and nobody is asked.
		if r.InputRounds != 4 && (version == "2026-07-28" || r.InputRounds < 4) {
			t.Errorf("rounds = %d, want 4 (the one refused included)", r.InputRounds)
		}
	})
}

// TestDroppedRequestState: a server that kept a requestState and then
// asks without one has lost the thread.
func TestDroppedRequestState(t *testing.T) {
	p := &person{answers: []*airlock.InputAnswer{accept(nil)}}
	h := openAsks(t, askConfig(t, "2026-07-28", ""), &airlock.Options{Elicit: p.elicit})
	r := call(t, h, "dropstate", `{}`)
	wantStatus(t, r, airlock.ContractError)
	if !strings.Contains(r.Err.Msg, "without the requestState") {
		t.Errorf("error = %q", r.Err.Msg)
	}
}

// TestAnswerMustFitTheForm: an answer that does not fit goes back to the
// person with the problem; the server never sees it. Three that do not
// fit decline.
func TestAnswerMustFitTheForm(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		p := &person{answers: []*airlock.InputAnswer{accept(map[string]any{"age": "old"}), accept(map[string]any{"age": 5})}}
		h := openAsks(t, askConfig(t, version, ""), &airlock.Options{Elicit: p.elicit})
		r := call(t, h, "form", `{}`)
		wantStatus(t, r, airlock.OK)
		if !strings.HasPrefix(r.Content, `accept {"age":5`) {
			t.Errorf("the server saw %q", r.Content)
		}
		asked := p.requests()
		if len(asked) != 2 || asked[0].Problem != "" || !strings.Contains(asked[1].Problem, "/age") || asked[0].ID != asked[1].ID {
			t.Errorf("asked %+v; want the same request again, with the problem", asked)
		}

		p = &person{answers: []*airlock.InputAnswer{accept(map[string]any{"color": "blue", "age": 1})}}
		h = openAsks(t, askConfig(t, version, ""), &airlock.Options{Elicit: p.elicit})
		r = call(t, h, "form", `{}`)
		wantStatus(t, r, airlock.OK)
		if r.Content != "decline null" || len(p.requests()) != 3 {
			t.Errorf("the server saw %q after %d tries, want a decline after 3", r.Content, len(p.requests()))
		}
		if len(r.Inputs) != 1 || !strings.Contains(r.Inputs[0].Reason, "no answer fit the form") {
			t.Errorf("inputs = %+v", r.Inputs)
		}
	})
}

// TestInputRequestCheck: an Elicitor can check an answer before it gives
// it.
func TestInputRequestCheck(t *testing.T) {
	var got error
	check := func(_ context.Context, req *airlock.InputRequest) (*airlock.InputAnswer, error) {
		got = req.Check(accept(map[string]any{"age": -1}))
		if err := req.Check(accept(map[string]any{"age": 1})); err != nil {
			t.Errorf("a fitting answer: %v", err)
		}
		if err := req.Check(&airlock.InputAnswer{Action: "maybe"}); err == nil {
			t.Error("an unknown action passed")
		}

		return nil, nil
	}
	h := openAsks(t, askConfig(t, "2026-07-28", ""), &airlock.Options{Elicit: check})
	wantStatus(t, call(t, h, "form", `{}`), airlock.OK)
	if got == nil || !strings.Contains(got.Error(), "/age") {
		t.Errorf("Check of an age of -1 = %v", got)
	}
}

// TestSampling: servers[].sampling governs a server's requests for a
// sample: deny (declared to nobody), ask (the person sees the request,
// then the Sampler runs), allow (straight to the Sampler).
func TestSampling(t *testing.T) {
	sampler := func(_ context.Context, req *airlock.SampleRequest) (*mcp.CreateMessageResult, error) {
		if req.Tool != "sample" || req.Server != "asks" || req.Params.MaxTokens != 50 {
			t.Errorf("sample request = %+v", req)
		}
		return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "hello"}}, nil
	}
	eachEra(t, func(t *testing.T, version string) {
		t.Run("deny", func(t *testing.T) {
			h := openAsks(t, askConfig(t, version, config.SamplingDeny), &airlock.Options{Sample: sampler})
			r := call(t, h, "sample", `{}`)
			wantStatus(t, r, airlock.ContractError) // asked for what was never declared
			if len(r.Inputs) != 1 || r.Inputs[0].Kind != airlock.InputSampling || !strings.Contains(r.Inputs[0].Reason, "sampling is deny") {
				t.Errorf("inputs = %+v, want the refused request", r.Inputs)
			}
		})
		t.Run("ask", func(t *testing.T) {
			p := &person{answers: []*airlock.InputAnswer{{Action: airlock.AnswerAccept}}}
			h := openAsks(t, askConfig(t, version, config.SamplingAsk), &airlock.Options{Elicit: p.elicit, Sample: sampler})
			r := call(t, h, "sample", `{}`)
			wantStatus(t, r, airlock.OK)
			if r.Content != "sampled hello" {
				t.Errorf("the server saw %q", r.Content)
			}
			q := p.requests()[0]
			want := &airlock.SamplingRequest{SystemPrompt: "You are terse.", MaxTokens: 50,
				Messages: []airlock.SamplingMessage{{Role: "user", Text: "Say hello"}}}
			if q.Kind != airlock.InputSampling || cmp.Diff(want, q.Sampling) != "" {
				t.Errorf("the person was shown %+v: %s", q, cmp.Diff(want, q.Sampling))
			}

			p = &person{answers: []*airlock.InputAnswer{{Action: airlock.AnswerDecline}}}
			h = openAsks(t, askConfig(t, version, config.SamplingAsk), &airlock.Options{Elicit: p.elicit, Sample: sampler})
			r = call(t, h, "sample", `{}`)
			wantRefused(t, version, r, airlock.Denied, "refused -1")

			// An Elicitor that fails declines, and the refusal says why.
			failing := func(context.Context, *airlock.InputRequest) (*airlock.InputAnswer, error) {
				return nil, errors.New("no way to reach a person")
			}
			h = openAsks(t, askConfig(t, version, config.SamplingAsk), &airlock.Options{Elicit: failing, Sample: sampler})
			r = call(t, h, "sample", `{}`)
			wantRefused(t, version, r, airlock.Denied, "refused -1")
			if version == "2026-07-28" && !strings.Contains(r.Err.Msg, "nobody agreed: the elicitor failed: no way to reach a person") {
				t.Errorf("refusal = %q, want it to say why nobody agreed", r.Err.Msg)
			}
		})
		t.Run("allow", func(t *testing.T) {
			h := openAsks(t, askConfig(t, version, config.SamplingAllow), &airlock.Options{Sample: sampler})
			r := call(t, h, "sample", `{}`)
			wantStatus(t, r, airlock.OK)
			if r.Content != "sampled hello" || len(r.Inputs) != 1 || r.Inputs[0].Action != airlock.AnswerAccept {
				t.Errorf("the server saw %q; inputs %+v", r.Content, r.Inputs)
			}
			h.Close()
			if evs := auditEvents(t, h, "input_answer"); len(evs) != 1 || evs[0].Fields["model"] != "test-model" {
				t.Errorf("input_answer = %+v", evs)
			}

			h = openAsks(t, askConfig(t, version, config.SamplingAllow), &airlock.Options{})
			wantRefused(t, version, call(t, h, "sample", `{}`), airlock.Denied, "refused -1")
		})
	})
}

// wantRefused checks a call whose server asked for something the host
// declared, and was refused: on 2026-07-28, which asks in the call's
// result, the call ends with kind;
// an older server is told in an error of its own, and answers the call
// with what it saw (seen).
func wantRefused(t *testing.T, version string, r *airlock.Result, kind airlock.Kind, seen string) {
	t.Helper()
	if version == "2026-07-28" {
		wantStatus(t, r, kind)
		return
	}
	wantStatus(t, r, airlock.OK)
	if r.Content != seen {
		t.Errorf("the server saw %q, want %q", r.Content, seen)
	}
}

// TestRootsRefused: the host declares no roots: a server that asks breaks
// the contract (an older one is answered "method not found" first).
func TestRootsRefused(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		h := openAsks(t, askConfig(t, version, ""), &airlock.Options{})
		r := call(t, h, "roots", `{}`)
		wantStatus(t, r, airlock.ContractError)
		if len(r.Inputs) != 1 || r.Inputs[0].Kind != "roots" {
			t.Errorf("inputs = %+v", r.Inputs)
		}
	})
}

// TestInputAudit: the question and the answer are in the audit trail,
// secrets scrubbed, the answer's values only where audit.record_values
// covers the tool.
func TestInputAudit(t *testing.T) {
	const canary = "canary-Zk3v9q"
	p := &person{answers: []*airlock.InputAnswer{accept(map[string]any{"age": 41, "name": canary})}}
	cfg := askConfig(t, "2026-07-28", "")
	cfg.Audit.RecordValues = []string{"form"}
	h := openAsks(t, cfg, &airlock.Options{Elicit: p.elicit, Secrets: []string{canary}})
	wantStatus(t, call(t, h, "form", `{}`), airlock.OK)
	h.Close()
	all := append(auditEvents(t, h, "input_request"), auditEvents(t, h, "input_answer")...)
	if b, _ := json.Marshal(all); strings.Contains(string(b), canary) {
		t.Errorf("a secret reached the audit trail: %s", b)
	}
	req := auditEvents(t, h, "input_request")
	if len(req) != 1 {
		t.Fatalf("input_request events: %+v", req)
	}
	f := req[0].Fields
	if f["kind"] != "elicitation" || f["mode"] != "form" || f["round"] != float64(1) || f["message"] != "Who are you?" ||
		req[0].Server != "asks" || req[0].Tool != "form" {
		t.Errorf("input_request = %+v", req[0])
	}
	ans := auditEvents(t, h, "input_answer")
	if len(ans) != 1 {
		t.Fatalf("input_answer events: %+v", ans)
	}
	if v, _ := ans[0].Fields["answer"].(map[string]any); v["age"] != float64(41) || ans[0].Fields["action"] != "accept" {
		t.Errorf("input_answer = %+v; want the values, which record_values asks for", ans[0].Fields)
	}
}

// TestInputOverHTTP: a remote server's questions reach the person too:
// an older server's elicitation/create and sampling/createMessage come on
// the call's response stream; a 2026-07-28 server's rounds are new
// requests.
func TestInputOverHTTP(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		hs := newHTTPServer(t, askServer, version == "2026-07-28") // stateless: the 2026-07-28 way
		srv := remote("asks", hs.url)
		srv.ProtocolVersions, srv.ToolPrefix, srv.Sampling = []string{version}, new(string), config.SamplingAsk
		cfg := devConfig(t, srv)
		classify(cfg, "asks", "read", "form", "multi", "sample")
		// One answer for every question: each form's server gets its own
		// fields of it, and no other.
		p := &person{answers: []*airlock.InputAnswer{accept(map[string]any{"age": 3, "a": "y"})}}
		sampler := func(context.Context, *airlock.SampleRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "hi"}}, nil
		}
		h := openWith(t, cfg, &airlock.Options{Elicit: p.elicit, Sample: sampler})
		for _, c := range []struct{ tool, args, want string }{
			{"form", `{}`, `accept {"age":3,"color":"green","name":"John Doe","score":95.5}`},
			{"multi", `{"rounds":2}`, "answers y,y"},
			{"sample", `{}`, "sampled hi"},
		} {
			r := call(t, h, c.tool, c.args)
			wantStatus(t, r, airlock.OK)
			if r.Content != c.want {
				t.Errorf("%s: the server saw %q, want %q", c.tool, r.Content, c.want)
			}
		}
	})
}

// TestInputRoundLimitOnAWrite: a write stopped between rounds (the server
// answered input_required: it did not finish) is journaled failed; one
// stopped while its request was in flight (an older server asking again
// and again) may have done anything, and is outcome_unknown.
func TestInputRoundLimitOnAWrite(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		p := &person{answers: []*airlock.InputAnswer{accept(nil)}}
		cfg := askConfig(t, version, "")
		cfg.Limits.MaxInputRounds = 2
		for i := range cfg.Policy.Tools {
			if cfg.Policy.Tools[i].Tool == "loop" {
				cfg.Policy.Tools[i].Effect = "write"
			}
		}
		h := openAsks(t, cfg, &airlock.Options{Elicit: p.elicit})
		r := call(t, h, "loop", `{}`)
		want, outcome := airlock.ContractError, store.OutcomeFailed
		if version == "2025-11-25" {
			want, outcome = airlock.OutcomeUnknown, store.OutcomeUnknown
		}
		wantStatus(t, r, want)
		if !strings.Contains(r.Err.Msg, "limits.max_input_rounds") {
			t.Errorf("error = %q", r.Err.Msg)
		}
		h.Close()
		st, err := airlock.OpenStore(h.StateDir())
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		recs, err := st.Journal().Records(context.Background(), store.RecordFilter{All: true})
		if err != nil || len(recs) != 1 || recs[0].Status != outcome {
			t.Fatalf("journal = %+v (%v), want one record, %s", recs, err, outcome)
		}
	})
}

// TestElicitorSeesTheCallEnd: the person's question is withdrawn when the
// call ends (here: the caller gives up).
func TestElicitorSeesTheCallEnd(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		asked := make(chan struct{})
		ended := make(chan error, 1)
		wait := func(ctx context.Context, _ *airlock.InputRequest) (*airlock.InputAnswer, error) {
			close(asked)
			<-ctx.Done()
			ended <- ctx.Err()
			return nil, ctx.Err()
		}
		h := openAsks(t, askConfig(t, version, ""), &airlock.Options{Elicit: wait})
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-asked
			cancel()
		}()
		r := h.Call(ctx, h.Snapshot(), airlock.Call{ID: "c", Name: "form"})
		wantStatus(t, r, airlock.Cancelled)
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Fatal("the Elicitor was not told that the call ended")
		}
	})
}

// TestSamplingScrubsSecrets: what goes to the Sampler (the gateway's
// client's model) has the host's secrets scrubbed, as the person asked
// first is shown it and as a tool result has them.
func TestSamplingScrubsSecrets(t *testing.T) {
	var got *mcp.CreateMessageParams
	sampler := func(_ context.Context, req *airlock.SampleRequest) (*mcp.CreateMessageResult, error) {
		got = req.Params
		return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "hello"}}, nil
	}
	eachEra(t, func(t *testing.T, version string) {
		got = nil
		h := openAsks(t, askConfig(t, version, config.SamplingAllow), &airlock.Options{Sample: sampler, Secrets: []string{"You are terse.", "Say hello"}})
		wantStatus(t, call(t, h, "sample", `{}`), airlock.OK)
		if got == nil {
			t.Fatal("the sampler was not asked")
		}
		if strings.Contains(got.SystemPrompt, "terse") || len(got.Messages) != 1 || strings.Contains(got.Messages[0].Content.(*mcp.TextContent).Text, "hello") {
			t.Errorf("the sampler got a secret: system prompt %q, messages %+v", got.SystemPrompt, got.Messages[0].Content)
		}
	})
}

// TestElicitationScrubsSecrets: a form's schema reaches the person with
// the host's secrets scrubbed, as its message does.
func TestElicitationScrubsSecrets(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		p := &person{answers: []*airlock.InputAnswer{accept(map[string]any{"age": 30})}}
		h := openAsks(t, askConfig(t, version, ""), &airlock.Options{Elicit: p.elicit, Secrets: []string{"John Doe"}})
		wantStatus(t, call(t, h, "form", `{}`), airlock.OK)
		asked := p.requests()
		if len(asked) != 1 {
			t.Fatalf("the person was asked %d times, want 1", len(asked))
		}
		if strings.Contains(string(asked[0].Schema), "John Doe") {
			t.Errorf("the form shown holds the secret: %s", asked[0].Schema)
		}
	})
}
