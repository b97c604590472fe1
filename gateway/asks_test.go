//lint:file-ignore SA1019 the upstream asks for samples and roots, which protocol version 2026-07-28 deprecates (SEP-2577).

package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/gateway"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/store"
)

// The upstream's tools that ask their client (2026-07-28: input_required
// results) or need a client feature, for startAsks:
//
//	needs_sampling  runs only when its request's clientCapabilities
//	                declare sampling, else -32021 naming it (as SEP-2575
//	                gives); answers with the capabilities it heard
//	keyed           asks "user_name" (requestState "round=1"), then
//	                "color" ("round=2;name=…"); answers "NAME likes COLOR"
//	both            asks "user_name" (an elicitation) and "greeting" (a
//	                sample) in one round; answers "GREETING NAME"
//	three           asks in one round, of "user_name", "greeting" and
//	                "client_roots" (roots/list), those its request's
//	                clientCapabilities declare (as the go-sdk's conformance
//	                server does); answers "GREETING NAME, ROOTS" (the
//	                roots' URIs, or "no roots" when it did not ask)
//
// and a prompt, rooted, whose message is "roots: " and the client's roots'
// URIs: asked for in an input_required round when the request's
// clientCapabilities declare roots (2026-07-28), with roots/list on an
// older session that declared them; "no roots" otherwise.
func addAskTools(s *mcp.Server) {
	obj := json.RawMessage(`{"type":"object"}`)
	s.AddTool(&mcp.Tool{Name: "needs_sampling", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		caps := req.ClientCapabilities()
		if caps == nil || caps.Sampling == nil {
			data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}})
			return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "sampling required", Data: data}
		}
		return &mcp.CallToolResult{Content: text(fmt.Sprintf("elicitation=%t sampling=%t", caps.Elicitation != nil, caps.Sampling != nil))}, nil
	})
	name := func(key, prop string) *mcp.ElicitParams {
		return &mcp.ElicitParams{Message: "What is your " + prop + "?", RequestedSchema: map[string]any{"type": "object",
			"properties": map[string]any{prop: map[string]any{"type": "string"}}, "required": []any{prop}}}
	}
	accepted := func(req *mcp.CallToolRequest, key, prop string) string {
		r, _ := req.Params.InputResponses[key].(*mcp.ElicitResult)
		if r == nil || r.Action != "accept" {
			return ""
		}
		v, _ := r.Content[prop].(string)
		return v
	}
	s.AddTool(&mcp.Tool{Name: "keyed", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		state := req.Params.RequestState
		switch {
		case state == "" && accepted(req, "user_name", "name") == "":
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"user_name": name("user_name", "name")}, RequestState: "round=1"}, nil
		case state == "round=1" || state == "":
			n := accepted(req, "user_name", "name")
			if n == "" {
				return &mcp.CallToolResult{IsError: true, Content: text("no answer under user_name")}, nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"color": name("color", "color")}, RequestState: "round=2;name=" + n}, nil
		}
		return &mcp.CallToolResult{Content: text(strings.TrimPrefix(state, "round=2;name=") + " likes " + accepted(req, "color", "color"))}, nil
	})
	// ask_legacy asks for a name, then a color, with elicitation/create
	// requests (2025-11-25), and says both.
	s.AddTool(&mcp.Tool{Name: "ask_legacy", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var got []string
		for _, prop := range []string{"name", "color"} {
			r, err := req.Session.Elicit(ctx, name(prop, prop))
			if err != nil {
				return nil, err
			}
			if r.Action != "accept" {
				return &mcp.CallToolResult{IsError: true, Content: text(prop + ": " + r.Action)}, nil
			}
			v, _ := r.Content[prop].(string)
			got = append(got, v)
		}
		return &mcp.CallToolResult{Content: text(got[0] + " likes " + got[1])}, nil
	})
	// later works for a second, then asks for a name, and greets it.
	s.AddTool(&mcp.Tool{Name: "later", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if n := accepted(req, "user_name", "name"); n != "" {
			return &mcp.CallToolResult{Content: text("hello " + n)}, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"user_name": name("user_name", "name")}}, nil
	})
	// twice works for a second, then asks for a name under one key twice,
	// and says both.
	s.AddTool(&mcp.Tool{Name: "twice", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := accepted(req, "user_name", "name")
		switch first, ok := strings.CutPrefix(req.Params.RequestState, "first="); {
		case ok && n != "":
			return &mcp.CallToolResult{Content: text(first + " then " + n)}, nil
		case n != "":
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"user_name": name("user_name", "name")}, RequestState: "first=" + n}, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"user_name": name("user_name", "name")}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "both", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := accepted(req, "user_name", "name")
		g, _ := req.Params.InputResponses["greeting"].(*mcp.CreateMessageWithToolsResult)
		if n == "" || g == nil || len(g.Content) != 1 {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"user_name": name("user_name", "name"),
				"greeting": &mcp.CreateMessageParams{MaxTokens: 20,
					Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Greet"}}}},
			}, RequestState: "both"}, nil
		}
		t, _ := g.Content[0].(*mcp.TextContent)
		return &mcp.CallToolResult{Content: text(t.Text + " " + n)}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "rooted"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		say := func(r *mcp.ListRootsResult) *mcp.GetPromptResult {
			msg := "no roots"
			if r != nil {
				var uris []string
				for _, root := range r.Roots {
					uris = append(uris, root.URI)
				}
				msg = "roots: " + strings.Join(uris, ",")
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: msg}}}}
		}
		if r, ok := req.Params.InputResponses["client_roots"].(*mcp.ListRootsResult); ok {
			return say(r), nil
		}
		caps := req.ClientCapabilities()
		switch {
		case caps == nil:
		case req.Session.InitializeParams() == nil || req.Session.InitializeParams().ProtocolVersion >= "2026-07-28":
			if caps.RootsV2 != nil {
				return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{"client_roots": &mcp.ListRootsParams{}}, RequestState: "rooted"}, nil
			}
		case caps.Roots.ListChanged || caps.RootsV2 != nil:
			r, err := req.Session.ListRoots(ctx, &mcp.ListRootsParams{})
			if err != nil {
				return nil, err
			}
			return say(r), nil
		}
		return say(nil), nil
	})
	s.AddTool(&mcp.Tool{Name: "three", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		caps := req.ClientCapabilities()
		if caps == nil || caps.Elicitation == nil || caps.Sampling == nil {
			return &mcp.CallToolResult{IsError: true, Content: text("needs elicitation and sampling")}, nil
		}
		if len(req.Params.InputResponses) == 0 {
			reqs := mcp.InputRequestMap{"user_name": name("user_name", "name"), "greeting": &mcp.CreateMessageParams{MaxTokens: 20,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Greet"}}}}}
			if caps.RootsV2 != nil {
				reqs["client_roots"] = &mcp.ListRootsParams{}
			}
			return &mcp.CallToolResult{InputRequests: reqs, RequestState: "three"}, nil
		}
		roots := "no roots"
		if r, ok := req.Params.InputResponses["client_roots"].(*mcp.ListRootsResult); ok {
			var uris []string
			for _, root := range r.Roots {
				uris = append(uris, root.URI)
			}
			roots = strings.Join(uris, ",")
		}
		g, _ := req.Params.InputResponses["greeting"].(*mcp.CreateMessageWithToolsResult)
		if g == nil || len(g.Content) != 1 {
			return &mcp.CallToolResult{IsError: true, Content: text("no greeting")}, nil
		}
		t, _ := g.Content[0].(*mcp.TextContent)
		return &mcp.CallToolResult{Content: text(t.Text + " " + accepted(req, "user_name", "name") + ", " + roots)}, nil
	})
}

// startAsks serves a gateway in front of one server, w, with the ask
// tools under their own names, every call allowed, sampling passed to the
// client.
func startAsks(t *testing.T) *fixture { return startAsksWith(t, "", nil) }

// startAsksWith is startAsks with more configuration (w's keys, then
// top-level ones) and the gateway's options opts (nil for the defaults).
func startAsksWith(t *testing.T, more string, opts *gateway.Options) *fixture {
	t.Helper()
	f, dir, exe := newFixture(t)
	cfg, err := config.Parse(fmt.Appendf(nil, `servers:
  - id: w
    command: %q
    env: {%s: asks, %s: %q}
    allowed_tools: [needs_sampling, keyed, both, three, later, twice, ask_legacy]
    allowed_prompts: [rooted]
    tool_prefix: ""
    sampling: allow
%spolicy:
  rules:
    - {server: w, decision: allow}
`, exe, envUpstream, envMark, f.mark, more), "airlock.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	// Servers may ask: the host declares elicitation and roots (the
	// gateway's Elicitor and RootsLister stand in for these).
	f.open(t, cfg, opts, &airlock.Options{Elicit: func(context.Context, *airlock.InputRequest) (*airlock.InputAnswer, error) { return nil, nil },
		Roots: func(context.Context, *airlock.RootsRequest) (*mcp.ListRootsResult, error) { return nil, nil }})
	return f
}

// rounds connects a 2026-07-28 client that declares caps and runs no
// rounds of its own: each call returns what the gateway answered.
func (f *fixture) rounds(t *testing.T, caps *mcp.ClientCapabilities) *mcp.ClientSession {
	t.Helper()
	return f.connect(t, stateless, &mcp.ClientOptions{Capabilities: caps, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
}

func keys[M ~map[string]V, V any](m M) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

var (
	elicitOnly   = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
	elicitSample = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}},
		Sampling: &mcp.SamplingCapabilities{}}
)

// TestCallOffersWhatItsClientDeclared: a 2026-07-28 server hears, with
// each call, the client features the gateway's client declared, of those
// Airlock declares to it; a tool that needs one the client did not
// declare is refused by the server (-32021), and the client gets -32021
// naming it, with HTTP 400 on a 2026-07-28 request.
func TestCallOffersWhatItsClientDeclared(t *testing.T) {
	f := startAsks(t)
	res, err := call(t, f.rounds(t, elicitSample), "needs_sampling", `{}`)
	if err != nil || resultText(res) != "elicitation=true sampling=true" {
		t.Errorf("client with sampling: %q, %v; want the tool run, hearing both", resultText(res), err)
	}
	for _, caps := range []*mcp.ClientCapabilities{elicitOnly, {}} {
		_, err := call(t, f.rounds(t, caps), "needs_sampling", `{}`)
		werr := rpcError(t, err)
		var data struct {
			RequiredCapabilities map[string]any `json:"requiredCapabilities"`
		}
		if werr.Code != mcp.CodeMissingRequiredClientCapabilities || json.Unmarshal(werr.Data, &data) != nil ||
			!slices.Equal(keys(data.RequiredCapabilities), []string{"sampling"}) || !strings.Contains(werr.Message, "(sampling)") {
			t.Errorf("client with %+v: error %d %q %s, want -32021 naming sampling", caps, werr.Code, werr.Message, werr.Data)
		}
	}
	code, _, body := post(t, f, stateless, callBody("needs_sampling", `{}`), nil)
	if code != http.StatusBadRequest || !strings.Contains(body, "-32021") {
		t.Errorf("raw request without sampling: HTTP %d %s, want 400 with -32021", code, body)
	}
	// A 2025-11-25 client that declared no sampling is refused the same.
	_, err = call(t, f.connect(t, session, nil), "needs_sampling", `{}`)
	if werr := rpcError(t, err); werr.Code != mcp.CodeMissingRequiredClientCapabilities {
		t.Errorf("session client: error %d %q, want -32021", werr.Code, werr.Message)
	}
}

// TestParkedRoundsKeepTheServersKeys: a 2026-07-28 client is asked under
// the keys the server gave its questions; each round's request state is
// new, and one of an earlier round answers nothing; answers under keys the
// gateway did not ask are ignored.
func TestParkedRoundsKeepTheServersKeys(t *testing.T) {
	f := startAsks(t)
	cs := f.rounds(t, elicitOnly)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	callKeyed := func(responses mcp.InputResponseMap, state string) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: "keyed", Arguments: map[string]any{}, InputResponses: responses, RequestState: state})
	}
	first, err := callKeyed(nil, "")
	if err != nil || !first.NeedsInput() || !slices.Equal(keys(first.InputRequests), []string{"user_name"}) {
		t.Fatalf("round 1: %+v, %v; want the question under user_name", first, err)
	}
	extra := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Mallory"}}
	second, err := callKeyed(mcp.InputResponseMap{"user_name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}},
		"airlock_input": extra, "unknown": extra}, first.RequestState)
	if err != nil || !second.NeedsInput() || !slices.Equal(keys(second.InputRequests), []string{"color"}) {
		t.Fatalf("round 2: %+v, %v; want the question under color", second, err)
	}
	if second.RequestState == first.RequestState {
		t.Error("round 2 has round 1's request state")
	}
	if _, err := callKeyed(mcp.InputResponseMap{"color": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"color": "red"}}}, first.RequestState); err == nil {
		t.Error("round 1's state answered round 2's question")
	}
	// A state the gateway never gave names no call: the answers are not
	// handed to a new call of the tool.
	for _, state := range []string{"garbage", "x.y", "round=2;name=Eve"} {
		res, err := callKeyed(mcp.InputResponseMap{"color": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"color": "red"}}}, state)
		if err == nil || !strings.Contains(err.Error(), "the request state names no call waiting for an answer here") {
			t.Errorf("state %q: %+v, %v; want it refused", state, res, err)
		}
	}
	last, err := callKeyed(mcp.InputResponseMap{"color": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"color": "blue"}}}, second.RequestState)
	if err != nil || last.NeedsInput() || resultText(last) != "Ada likes blue" {
		t.Fatalf("round 3: %+v, %v; want Ada likes blue", last, err)
	}

	// Answers sent with the first request answer the questions they name,
	// checked as any answer is; the others are asked.
	early, err := callKeyed(mcp.InputResponseMap{"user_name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Bob"}},
		"junk": extra}, "")
	if err != nil || !early.NeedsInput() || !slices.Equal(keys(early.InputRequests), []string{"color"}) {
		t.Fatalf("answered early: %+v, %v; want only the color asked", early, err)
	}
	last, err = callKeyed(mcp.InputResponseMap{"color": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"color": "green"}}}, early.RequestState)
	if err != nil || resultText(last) != "Bob likes green" {
		t.Fatalf("answered early, then: %+v, %v; want Bob likes green", last, err)
	}
}

// TestSeveralQuestionsOfOneRound: a server that asks an elicitation and a
// sample in one round gets both answers, each under its own key: the
// client is asked both in one round, under the server's keys.
func TestSeveralQuestionsOfOneRound(t *testing.T) {
	f := startAsks(t)
	cs := f.rounds(t, elicitSample)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	answers := mcp.InputResponseMap{}
	state := ""
	asked := []string{}
	for round := 1; round <= 4; round++ {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "both", Arguments: map[string]any{}, InputResponses: answers, RequestState: state})
		if err != nil {
			t.Fatal(err)
		}
		if !res.NeedsInput() {
			if got := resultText(res); got != "Hello Ada" {
				t.Errorf("result %q, want Hello Ada", got)
			}
			slices.Sort(asked)
			if !slices.Equal(asked, []string{"greeting", "user_name"}) || round != 2 {
				t.Errorf("asked %v in %d rounds, want both questions in one round, under their keys", asked, round-1)
			}
			return
		}
		answers, state = mcp.InputResponseMap{}, res.RequestState
		for k, p := range res.InputRequests {
			asked = append(asked, k)
			switch p.(type) {
			case *mcp.ElicitParams:
				answers[k] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}
			case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
				answers[k] = &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: "Hello"}}
			default:
				t.Fatalf("asked %T under %s", p, k)
			}
		}
	}
	t.Fatal("the call did not finish")
}

// TestRootsDuringAGet: a server that asks for roots while getting a
// prompt gets the roots of the client that asked for the prompt, in both
// eras; one whose client declared none is refused them, and the get
// ends as a call would, saying why.
func TestRootsDuringAGet(t *testing.T) {
	f := startAsks(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root := &mcp.Root{URI: "file:///home/ada/project", Name: "project"}
	text := func(res *mcp.GetPromptResult) string {
		if res == nil || len(res.Messages) != 1 {
			return fmt.Sprintf("%+v", res)
		}
		tc, _ := res.Messages[0].Content.(*mcp.TextContent)
		if tc == nil {
			return fmt.Sprintf("%+v", res.Messages[0].Content)
		}
		return tc.Text
	}
	t.Run(session, func(t *testing.T) {
		c := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "1"}, nil)
		c.AddRoots(root)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: f.url}, &mcp.ClientSessionOptions{ProtocolVersion: session})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "rooted"})
		if err != nil || text(res) != "roots: "+root.URI {
			t.Fatalf("rooted: %q, %v; want the client's roots", text(res), err)
		}
	})
	t.Run(stateless, func(t *testing.T) {
		cs := f.rounds(t, &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}})
		first, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "rooted"})
		if err != nil || !first.NeedsInput() || !slices.Equal(keys(first.InputRequests), []string{"client_roots"}) {
			t.Fatalf("round 1: %+v, %v; want client_roots asked", first, err)
		}
		last, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "rooted", RequestState: first.RequestState,
			InputResponses: mcp.InputResponseMap{"client_roots": &mcp.ListRootsResult{Roots: []*mcp.Root{root}}}})
		if err != nil || last.NeedsInput() || text(last) != "roots: "+root.URI {
			t.Fatalf("round 2: %q, %v; want the client's roots", text(last), err)
		}
	})
	t.Run("no roots declared", func(t *testing.T) {
		cs := f.rounds(t, elicitOnly)
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "rooted"})
		if err == nil || !strings.Contains(err.Error(), "the gateway's client did not declare roots") {
			t.Fatalf("rooted: %q, %v; want the roots request refused, saying why", text(res), err)
		}
	})
}

// TestRootsInOneRoundWithTheRest: a 2026-07-28 server that asks, in one
// round, for an elicitation, a sample and the client's roots gets all
// three, under its keys, from a client that declared all three, asked in
// one round; a client that declared no roots is not offered them, and its
// server asks for the rest only.
func TestRootsInOneRoundWithTheRest(t *testing.T) {
	f := startAsks(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tt := range []struct {
		name  string
		caps  *mcp.ClientCapabilities
		asked []string
		want  string
	}{
		{"roots declared", &mcp.ClientCapabilities{Elicitation: elicitSample.Elicitation, Sampling: elicitSample.Sampling, RootsV2: &mcp.RootCapabilities{}},
			[]string{"client_roots", "greeting", "user_name"}, "Hello Ada, file:///home/ada/project"},
		{"roots not declared", elicitSample, []string{"greeting", "user_name"}, "Hello Ada, no roots"},
	} {
		t.Run(strings.ReplaceAll(tt.name, " ", "_"), func(t *testing.T) {
			cs := f.rounds(t, tt.caps)
			first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "three", Arguments: map[string]any{}})
			if err != nil || !first.NeedsInput() || !slices.Equal(keys(first.InputRequests), tt.asked) {
				t.Fatalf("round 1: %+v, %v; want %v asked at once", first, err, tt.asked)
			}
			answers := mcp.InputResponseMap{}
			for k, p := range first.InputRequests {
				switch p.(type) {
				case *mcp.ElicitParams:
					answers[k] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}
				case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
					answers[k] = &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: "Hello"}}
				case *mcp.ListRootsParams:
					answers[k] = &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///home/ada/project", Name: "project"}}}
				default:
					t.Fatalf("asked %T under %s", p, k)
				}
			}
			last, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "three", Arguments: map[string]any{}, InputResponses: answers, RequestState: first.RequestState})
			if err != nil || last.NeedsInput() || resultText(last) != tt.want {
				t.Fatalf("round 2: %+v, %v; want %q", last, err, tt.want)
			}
		})
	}
}

// TestSessionQuestionsOnTheCallsStream: a 2025-11-25 client that never
// opened a stream of its own (no GET) is asked the server's questions on
// its tools/call's own stream, and answers them with POSTs; the server
// too speaks 2025-11-25, and asks with elicitation/create requests.
func TestSessionQuestionsOnTheCallsStream(t *testing.T) {
	f := startAsksWith(t, "    protocol_versions: [\"2025-11-25\"]\n", nil)
	send := rawSession(t, f, `{"elicitation":{"form":{}}}`)
	call := send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask_legacy","arguments":{}}}`)
	defer call.Body.Close()
	if ct := call.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("tools/call answered %s with %s, want a stream", call.Status, ct)
	}
	events := make(chan map[string]any)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(call.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var msg map[string]any
				if json.Unmarshal([]byte(data), &msg) == nil {
					events <- msg
				}
			}
		}
	}()
	answers := map[string]string{"name": "Ada", "color": "blue"}
	for {
		var msg map[string]any
		select {
		case m, ok := <-events:
			if !ok {
				t.Fatal("the call's stream ended without its result")
			}
			msg = m
		case <-time.After(30 * time.Second):
			t.Fatal("nothing on the call's stream for 30 s: the question went elsewhere")
		}
		if msg["method"] == "elicitation/create" {
			params, _ := msg["params"].(map[string]any)
			props, _ := params["requestedSchema"].(map[string]any)["properties"].(map[string]any)
			content := map[string]any{}
			for prop := range props {
				content[prop] = answers[prop]
			}
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg["id"], "result": map[string]any{"action": "accept", "content": content}})
			r := send(string(b))
			r.Body.Close()
			continue
		}
		if msg["id"] != 2.0 {
			continue
		}
		res, _ := msg["result"].(map[string]any)
		content, _ := res["content"].([]any)
		if len(content) != 1 || content[0].(map[string]any)["text"] != "Ada likes blue" {
			t.Errorf("the call's result: %v, want Ada likes blue", msg)
		}
		return
	}
}

// TestSessionClientLeaves: in a 2025-11-25 session, a question on a call's
// stream that the client leaves unanswered (its events have no ids, so
// the stream cannot be resumed) is taken back, and the call ends; DELETE
// ends a session at once, cancelling the calls still running on it.
func TestSessionClientLeaves(t *testing.T) {
	f := startAsksWith(t, "    protocol_versions: [\"2025-11-25\"]\n", nil)
	send := rawSession(t, f, `{"elicitation":{"form":{}}}`)
	asked := func(id int) *http.Response {
		t.Helper()
		call := send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"ask_legacy","arguments":{}}}`, id))
		sc := bufio.NewScanner(call.Body)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"elicitation/create"`) {
				return call
			}
		}
		call.Body.Close()
		t.Fatalf("call %d: its stream ended without the question", id)
		return nil
	}
	results := func() int {
		n := 0
		for _, e := range auditOf(t, f.h) {
			if e.Event == store.EventResult && e.Tool == "ask_legacy" {
				n++
			}
		}
		return n
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("after 30 s: %s", what)
			}
		}
	}

	// The client leaves the question's stream: the call ends.
	asked(2).Body.Close()
	waitFor("the call whose client left is still running", func() bool { return results() == 1 })

	// DELETE, with a question waiting on a stream still open.
	call := asked(3)
	defer call.Body.Close()
	req := newPost(t, f.url, "", "")
	req.Method = http.MethodDelete
	req.Header.Set("Mcp-Session-Id", call.Request.Header.Get("Mcp-Session-Id"))
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("DELETE with a call running: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE: %s", resp.Status)
	}
	waitFor("the call of the ended session is still running", func() bool { return results() == 2 })
	if r := send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`); r.StatusCode != http.StatusNotFound {
		t.Errorf("a request on the ended session: %s, want 404", r.Status)
	}
}

// auditOf returns h's audit trail so far.
func auditOf(t *testing.T, h *airlock.Host) []store.Event {
	t.Helper()
	events, err := h.Store().Audit().Events(context.Background(), time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// TestRetryToAReplicaThatIsGone: a retry that reaches one replica while
// its call waited on another that has since stopped gets an error as soon
// as the round is seen not to be taken, not after the answer's long wait.
func TestRetryToAReplicaThatIsGone(t *testing.T) {
	defer gateway.SetPickupWithin(2 * time.Second)()
	db := testenv.PostgresDatabase(t)
	shared := fmt.Sprintf("store: {url: %q, audit_key: %q}\n", db, filepath.Join(t.TempDir(), "audit.key"))
	opts := &gateway.Options{StateKey: make([]byte, 32), DrainTimeout: time.Second}
	first, other := startAsksWith(t, shared, opts), startAsksWith(t, shared, opts)
	testenv.WaitListening(t, db, "gateway", 2)
	cs := first.rounds(t, elicitOnly)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	asked, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "keyed", Arguments: map[string]any{}})
	if err != nil || !asked.NeedsInput() {
		t.Fatalf("first round: %+v, %v", asked, err)
	}
	first.g.Close() // it hears no more, as a replica that died

	retry := other.rounds(t, elicitOnly)
	began := time.Now()
	_, err = retry.CallTool(ctx, &mcp.CallToolParams{Name: "keyed", Arguments: map[string]any{},
		InputResponses: mcp.InputResponseMap{"user_name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}},
		RequestState:   asked.RequestState})
	if err == nil || !strings.Contains(err.Error(), "did not take the answer") {
		t.Errorf("retry after its replica stopped: %v", err)
	}
	if took := time.Since(began); took > 30*time.Second {
		t.Errorf("the retry took %s", took)
	}
}
