//lint:file-ignore SA1019 a server may still ask for a sample, which protocol version 2026-07-28 deprecates (SEP-2577); the tests drive it.

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/testenv"
)

// askConfig writes an airlock.yaml in dir whose server w (the test
// binary) has the tools that ask (askserver_test.go), speaks era, and
// passes sampling requests on (sampling: allow).
func askConfig(t *testing.T, dir, era string) string {
	return askConfigSampling(t, dir, era, "allow")
}

// askConfigSampling is askConfig with the server's sampling: set.
func askConfigSampling(t *testing.T, dir, era, sampling string) string {
	t.Helper()
	path := filepath.Join(dir, "airlock.yaml")
	writeFile(t, path, testServerYAML(t, "[ask_form, ask_url, ask_twice, ask_forever, sample]", envTestAsks, "1")+
		fmt.Sprintf("    protocol_versions: [%q]\n    sampling: %s\n", era, sampling)+
		"limits: {max_input_rounds: 3}\n"+
		"policy:\n  rules:\n    - {server: w, tool: \"*\", decision: allow}\n")
	return path
}

// A liveShell is airlock shell --json running, driven line by line.
type liveShell struct {
	t     *testing.T
	in    io.WriteCloser
	lines chan map[string]any
	cmd   *exec.Cmd
}

func startShell(t *testing.T, dir string, args ...string) *liveShell {
	t.Helper()
	cmd := exec.Command(airlockBin, append([]string{"shell", "--json"}, args...)...)
	cmd.Dir = dir
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &testenv.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &liveShell{t: t, in: in, lines: make(chan map[string]any, 16), cmd: cmd}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var v map[string]any
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				v = map[string]any{"unparsed": sc.Text()}
			}
			s.lines <- v
		}
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Errorf("shell did not end after its input did\nstderr:\n%s", stderr)
		}
	})
	return s
}

// send writes one command line.
func (s *liveShell) send(v any) {
	s.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.t.Fatal(err)
	}
}

// next reads the next output line.
func (s *liveShell) next() map[string]any {
	s.t.Helper()
	select {
	case v, ok := <-s.lines:
		if !ok {
			s.t.Fatal("the shell ended early")
		}
		return v
	case <-time.After(time.Minute):
		s.t.Fatal("no output from the shell within a minute")
	}
	return nil
}

// answer answers the input request q with action and content, and checks
// that the shell took the answer.
func (s *liveShell) answer(q map[string]any, action string, content map[string]any) {
	s.t.Helper()
	cmd := map[string]any{"id": "answer", "cmd": "answer", "request_id": q["request_id"], "action": action}
	if content != nil {
		cmd["content"] = content
	}
	s.send(cmd)
	if got := s.next(); got["id"] != "answer" || got["ok"] != true {
		s.t.Fatalf("answer %v: %v, want ok", cmd, got)
	}
}

// TestShellJSONInputRequests: a server's questions during a call reach
// airlock shell --json as input_request lines, and answer commands answer
// them: a form (answers that do not fit are refused with what to fix; the
// server's defaults fill what is left out), a link (shown with its
// domain), two questions in one call, decline and cancel. Both eras.
func TestShellJSONInputRequests(t *testing.T) {
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(era, func(t *testing.T) {
			dir := t.TempDir()
			askConfig(t, dir, era)
			sh := startShell(t, dir)

			sh.send(map[string]any{"id": 1, "cmd": "call", "name": "w__ask_form"})
			q := sh.next()
			if q["id"] != 1.0 || q["event"] != "input_request" || q["kind"] != "elicitation" || q["mode"] != "form" ||
				q["server"] != "w" || q["tool"] != "w__ask_form" || q["message"] != "Who are you?" {
				t.Fatalf("input request = %v", q)
			}
			rid, _ := q["request_id"].(string)
			if !strings.HasPrefix(rid, "inq_") {
				t.Errorf("request_id = %q, want inq_…", rid)
			}
			if props, _ := q["schema"].(map[string]any)["properties"].(map[string]any); props["colour"] == nil {
				t.Errorf("schema = %v, want the form's", q["schema"])
			}
			answers := []struct {
				answer map[string]any
				want   string
			}{
				{map[string]any{"id": "a1", "cmd": "answer", "request_id": "inq_nope", "action": "accept"}, "no input request"},
				{map[string]any{"id": "a2", "cmd": "answer", "request_id": rid, "action": "maybe"}, `"action" is "maybe": use accept, decline or cancel`},
				{map[string]any{"id": "a3", "cmd": "answer", "request_id": rid, "action": "accept", "content": map[string]any{"colour": "blue", "count": 2}}, "colour"},
				{map[string]any{"id": "a4", "cmd": "answer", "request_id": rid, "action": "accept", "content": map[string]any{"colour": "red", "count": "two"}}, "count"},
			}
			for _, a := range answers {
				sh.send(a.answer)
				got := sh.next()
				if e, _ := got["error"].(string); got["id"] != a.answer["id"] || !strings.Contains(e, a.want) {
					t.Errorf("answer %v: got %v, want an error that says %q", a.answer, got, a.want)
				}
			}
			sh.answer(q, "accept", map[string]any{"colour": "green", "count": 2})
			r := sh.next()
			if r["id"] != 1.0 || r["status"] != "ok" || r["content"] != `accept {"colour":"green","count":2,"name":"Ada"}` {
				t.Errorf("result = %v, want the answer with the default name", r)
			}

			sh.send(map[string]any{"id": 2, "cmd": "call", "name": "w__ask_url"})
			q = sh.next()
			if q["mode"] != "url" || q["url"] != "https://auth.example.com/connect?state=xyz" || q["domain"] != "auth.example.com" {
				t.Fatalf("input request = %v, want the link and its domain", q)
			}
			sh.answer(q, "decline", nil)
			if r := sh.next(); r["id"] != 2.0 || r["content"] != "decline" {
				t.Errorf("result = %v, want decline", r)
			}

			sh.send(map[string]any{"id": 3, "cmd": "call", "name": "w__ask_twice"})
			q = sh.next()
			sh.answer(q, "accept", map[string]any{"ok": true})
			q2 := sh.next()
			if q2["event"] != "input_request" || q2["message"] != "Second question?" || q2["request_id"] == q["request_id"] || q2["round"] != 2.0 {
				t.Fatalf("second input request = %v", q2)
			}
			sh.answer(q2, "cancel", nil)
			if r := sh.next(); r["id"] != 3.0 || r["content"] != "accept {\"ok\":true}\ncancel" {
				t.Errorf("result = %v, want both answers", r)
			}
			// A server that asks past limits.max_input_rounds (3 here) is
			// stopped, never an endless call: contract_error for a
			// 2026-07-28 server, which asks in results; a 2025-11-25
			// server asks while it runs the call, which may have done
			// something by then: outcome_unknown.
			sh.send(map[string]any{"id": 4, "cmd": "call", "name": "w__ask_forever"})
			for round := 1.0; round <= 3; round++ {
				q := sh.next()
				if q["event"] != "input_request" || q["round"] != round {
					t.Fatalf("question %v = %v", round, q)
				}
				sh.answer(q, "accept", map[string]any{})
			}
			want := map[string]string{"2026-07-28": "contract_error", "2025-11-25": "outcome_unknown"}[era]
			if r := sh.next(); r["id"] != 4.0 || r["status"] != want || !strings.Contains(r["error"].(string), "limits.max_input_rounds") {
				t.Errorf("result = %v, want %s naming the limit", r, want)
			}
			sh.send(map[string]any{"id": 5, "cmd": "quit"})
		})
	}
}

// TestShellJSONSamplingAsk: a sampling request that sampling: ask puts to
// a person is an input_request of kind sampling, showing what the model
// would be asked; declined, the server is refused.
func TestShellJSONSamplingAsk(t *testing.T) {
	dir := t.TempDir()
	askConfigSampling(t, dir, "2025-11-25", "ask")
	sh := startShell(t, dir)
	sh.send(map[string]any{"id": 1, "cmd": "call", "name": "w__sample"})
	q := sh.next()
	want := map[string]any{"system_prompt": "Be brief.", "max_tokens": 50.0,
		"messages": []any{map[string]any{"role": "user", "text": "Say hi."}}}
	if q["event"] != "input_request" || q["kind"] != "sampling" || fmt.Sprint(q["sampling"]) != fmt.Sprint(want) {
		t.Fatalf("input request = %v, want the sampling request %v", q, want)
	}
	sh.answer(q, "decline", nil)
	if r := sh.next(); r["id"] != 1.0 || !strings.HasPrefix(r["content"].(string), "sampling failed") {
		t.Errorf("result = %v, want the server refused", r)
	}
	sh.send(map[string]any{"id": 2, "cmd": "quit"})
}

// TestCallDeclinesWithoutATerminal: airlock call with nobody to ask
// declines the server's question, and the result says what was asked.
func TestCallDeclinesWithoutATerminal(t *testing.T) {
	dir := t.TempDir()
	askConfig(t, dir, "2026-07-28")
	r := runCLI(t, dir, "", "call", "w__ask_form", "--json").want(t, 0)
	out := decode(t, r.stdout)
	if out["content"] != "decline" {
		t.Errorf("content = %v, want the server told decline", out["content"])
	}
	inputs, _ := out["inputs"].([]any)
	if len(inputs) != 1 {
		t.Fatalf("inputs = %v, want the one question", out["inputs"])
	}
	in := inputs[0].(map[string]any)
	if in["kind"] != "elicitation" || in["mode"] != "form" || in["message"] != "Who are you?" || in["action"] != "decline" {
		t.Errorf("input = %v", in)
	}
	r = runCLI(t, dir, "", "call", "w__ask_url").want(t, 0)
	if want := "server w asked for input during the call"; !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "auth.example.com") {
		t.Errorf("stderr = %q, want it to say %q, and the link's domain", r.stderr, want)
	}

	// The audit trail says, in text, who asked what and what became of it.
	audit := runCLI(t, dir, "", "audit").want(t, 0).stdout
	for _, want := range []string{
		`input_request      w          w__ask_form                               kind=elicitation mode=form round=1 message="Who are you?"`,
		`input_answer       w          w__ask_form                               reason="no terminal to ask a person on" action=decline kind=elicitation mode=form round=1`,
		`kind=elicitation mode=url round=1 domain=auth.example.com message=`,
		`input_rounds=1`,
	} {
		if !strings.Contains(audit, want) {
			t.Errorf("airlock audit does not say %q:\n%s", want, audit)
		}
	}
}

// TestServeRelaysQuestions: through airlock serve, a server's questions
// go to the client that made the call when it declared elicitation
// (both eras: elicitation/create, or input_required rounds), and its
// sampling requests to the client's sampling; a client that declared
// neither has the question declined and the sampling refused.
func TestServeRelaysQuestions(t *testing.T) {
	for _, tc := range []struct{ era, transport string }{
		{"2026-07-28", "http"}, {"2025-11-25", "http"}, {"2026-07-28", "stdio"}, {"2025-11-25", "stdio"},
	} {
		era := tc.era
		t.Run(tc.era+"/"+tc.transport, func(t *testing.T) {
			dir := t.TempDir()
			cfg := askConfig(t, dir, era)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var url string
			if tc.transport == "http" {
				url, _ = startServe(t, dir, "--http", "127.0.0.1:0", "--config", cfg)
			}
			connect := func(c *mcp.Client) *mcp.ClientSession {
				t.Helper()
				var transport mcp.Transport = &mcp.StreamableClientTransport{Endpoint: url}
				if tc.transport == "stdio" {
					cmd := exec.Command(airlockBin, "serve", "--stdio", "--config", cfg)
					cmd.Dir = dir
					transport = &mcp.CommandTransport{Command: cmd}
				}
				cs, err := c.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: era})
				if err != nil {
					t.Fatal(err)
				}
				return cs
			}

			var asked []string
			c := mcp.NewClient(&mcp.Implementation{Name: "asked", Version: "1"}, &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
					Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, req.Params.Mode+": "+req.Params.Message)
					switch {
					case req.Params.Mode == "url":
						return &mcp.ElicitResult{Action: "accept"}, nil
					case strings.Contains(req.Params.Message, "Second"):
						return &mcp.ElicitResult{Action: "cancel"}, nil
					case strings.Contains(req.Params.Message, "Again?"):
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
					case strings.Contains(req.Params.Message, "First"):
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"colour": "red", "count": 3}}, nil
				},
				CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					return &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: "hi"}}, nil
				},
			})
			cs := connect(c)
			defer cs.Close()
			for _, tt := range []struct{ tool, want string }{
				{"w__ask_form", `accept {"colour":"red","count":3,"name":"Ada"}`},
				{"w__ask_url", "accept"},
				{"w__ask_twice", "accept {\"ok\":true}\ncancel"},
				{"w__sample", "the model said: hi"},
			} {
				if got := callText(ctx, t, cs, tt.tool); got != tt.want {
					t.Errorf("%s: %q, want %q", tt.tool, got, tt.want)
				}
			}
			// Past limits.max_input_rounds the call is stopped: the
			// client gets the gateway's contract_error (2026-07-28), or
			// an outcome_unknown result naming the limit (2025-11-25).
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "w__ask_forever", Arguments: map[string]any{}})
			switch {
			case era == "2026-07-28" && (err == nil || !strings.Contains(err.Error(), "contract_error")):
				t.Errorf("ask_forever: %+v, %v; want contract_error", res, err)
			case era == "2025-11-25" && (err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "limits.max_input_rounds")):
				t.Errorf("ask_forever: %+v, %v; want outcome_unknown naming the limit", res, err)
			}
			if len(asked) != 4+3 || !strings.HasPrefix(asked[0], "form: ") || !strings.Contains(asked[0], "Who are you?") ||
				!strings.Contains(asked[0], "w") || !strings.HasPrefix(asked[1], "url: ") {
				t.Errorf("asked %q", asked)
			}

			plain := mcp.NewClient(&mcp.Implementation{Name: "not-asked", Version: "1"}, nil)
			ps := connect(plain)
			defer ps.Close()
			if got := callText(ctx, t, ps, "w__ask_form"); got != "decline" {
				t.Errorf("ask_form without elicitation: %q, want decline", got)
			}
			// The server is refused: in 2025-11-25 it says so itself; in
			// 2026-07-28 the host ends the call with the refusal.
			if got := callText(ctx, t, ps, "w__sample"); !strings.HasPrefix(got, "sampling failed") &&
				!strings.Contains(got, "did not declare sampling") {
				t.Errorf("sample without sampling: %q, want the server refused", got)
			}
		})
	}
}

// callText calls tool and returns its result's text.
func callText(ctx context.Context, t *testing.T, cs *mcp.ClientSession, tool string) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil {
		t.Errorf("%s: %v", tool, err)
		return ""
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestCallAsksFormOnTerminal: on a terminal, airlock call asks a server's
// form field by field: the server's default is taken on an empty answer
// (SEP-1034), a choice by its number (SEP-1330), a number that is not one
// is asked again; a link is shown with its domain and not opened.
func TestCallAsksFormOnTerminal(t *testing.T) {
	dir := t.TempDir()
	askConfig(t, dir, "2026-07-28")

	p := onPTY(t, dir, "call", "w__ask_form")
	p.expect("server w, during w__ask_form asks:")
	p.expect("Who are you?")
	p.expect("[y = fill in the form, n = decline, c = cancel] ")
	p.send("y\r")
	p.expect("2) green — Green")
	p.expect("colour (number or value): ")
	p.send("2\r")
	p.expect("count (integer): ")
	p.send("many\r")
	p.expect(`"many" is not a whole number`)
	p.send("3\r")
	p.expect(`name (Your name)`)
	p.expect(`name ["Ada"]: `)
	p.send("\r")
	p.expect("sure (y/n) [leave empty to skip]: ")
	p.send("y\r")
	if code, out := p.exit(); code != 0 || !strings.Contains(out, `accept {"colour":"green","count":3,"name":"Ada","sure":true}`) {
		t.Fatalf("exit %d, terminal:\n%s", code, out)
	}

	p = onPTY(t, dir, "call", "w__ask_url")
	p.expect("server w, during w__ask_url asks you to open a link:")
	p.expect("https://auth.example.com/connect?state=xyz")
	p.expect("(domain auth.example.com)")
	p.expect("Airlock does not open it.")
	p.send("c\r")
	if code, out := p.exit(); code != 0 || !strings.Contains(out, "cancel") {
		t.Fatalf("exit %d, terminal:\n%s", code, out)
	}
}

// TestServeParkedCallState: a 2026-07-28 client's answer reaches its
// parked call only with the request state the gateway signed for that
// call, tool and caller: a changed state, or the state under another
// tool's name, is refused and the call still waits; the right one
// finishes it, once.
func TestServeParkedCallState(t *testing.T) {
	dir := t.TempDir()
	cfg := askConfig(t, dir, "2026-07-28")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url, _ := startServe(t, dir, "--http", "127.0.0.1:0", "--config", cfg)
	c := mcp.NewClient(&mcp.Implementation{Name: "rounds", Version: "1"}, &mcp.ClientOptions{
		Capabilities:   &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "w__ask_twice", Arguments: map[string]any{}})
	if err != nil || !first.NeedsInput() || first.RequestState == "" {
		t.Fatalf("first round: %+v, %v; want an input_required result", first, err)
	}
	var key string
	for k := range first.InputRequests {
		key = k
	}
	answer := mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}}
	state := first.RequestState
	for _, bad := range []struct {
		name, tool, state string
	}{
		{"changed", "w__ask_twice", state[:len(state)-2] + "xx"},
		{"another tool", "w__ask_form", state},
		{"not the gateway's", "w__ask_twice", "in.e30.AAAA"},
	} {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: bad.tool, Arguments: map[string]any{}, InputResponses: answer, RequestState: bad.state})
		if err == nil || !strings.Contains(err.Error(), "the request state names no call waiting for an answer here") {
			t.Errorf("%s: %v, want the state refused", bad.name, err)
		}
	}
	second, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "w__ask_twice", Arguments: map[string]any{}, InputResponses: answer, RequestState: state})
	if err != nil || !second.NeedsInput() {
		t.Fatalf("second round: %+v, %v; want the second question", second, err)
	}
	for k := range second.InputRequests {
		key = k
	}
	last, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "w__ask_twice", Arguments: map[string]any{},
		InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "decline"}}, RequestState: second.RequestState})
	if err != nil || last.NeedsInput() {
		t.Fatalf("last round: %+v, %v", last, err)
	}
	if got := last.Content[0].(*mcp.TextContent).Text; got != "accept {\"ok\":true}\ndecline" {
		t.Errorf("result %q", got)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "w__ask_twice", Arguments: map[string]any{},
		InputResponses: answer, RequestState: second.RequestState}); err == nil {
		t.Error("a state used already was taken again")
	}
}

// TestServeSamplingAsk: with sampling: ask, the person at the client is
// asked first (a form with one yes-or-no field that shows the request),
// and only then is the client's model sampled.
func TestServeSamplingAsk(t *testing.T) {
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(era, func(t *testing.T) {
			dir := t.TempDir()
			cfg := askConfigSampling(t, dir, era, "ask")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			url, _ := startServe(t, dir, "--http", "127.0.0.1:0", "--config", cfg)
			allow := true
			var asked []string
			sampled := 0
			c := mcp.NewClient(&mcp.Implementation{Name: "sampler", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, req.Params.Message)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": allow}}, nil
				},
				CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					sampled++
					return &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: "hi"}}, nil
				},
			})
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: era})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := callText(ctx, t, cs, "w__sample"); got != "the model said: hi" {
				t.Errorf("allowed: %q", got)
			}
			if len(asked) != 1 || !strings.Contains(asked[0], "wants a model to answer this") || !strings.Contains(asked[0], "system: Be brief.") ||
				!strings.Contains(asked[0], "user: Say hi.") || !strings.Contains(asked[0], "at most 50 tokens") {
				t.Errorf("asked %q, want the sampling request shown", asked)
			}
			allow = false
			if got := callText(ctx, t, cs, "w__sample"); strings.Contains(got, "the model said") {
				t.Errorf("refused: %q, want no sampling", got)
			}
			if sampled != 1 {
				t.Errorf("sampled %d times, want once (only when allowed)", sampled)
			}
		})
	}
}

// TestServeRelaysRoots: through airlock serve, a server's request for its
// client's roots goes to the client that made the call when it declared
// roots, whichever era each side speaks: a 2025-11-25 server's
// roots/list or a 2026-07-28 server's input_required round, to a
// 2025-11-25 client's session or into a 2026-07-28 client's
// input_required round. A client that declared no roots has the request
// refused, and a 2026-07-28 server is not offered them. The audit trail
// has the number of roots, never their URIs. airlock call, which has no
// roots to give, offers none and refuses a server that asks anyway.
func TestServeRelaysRoots(t *testing.T) {
	const root = "file:///home/ada/secret-project"
	for _, server := range []string{"2026-07-28", "2025-11-25"} {
		t.Run("server "+server, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "airlock.yaml")
			writeFile(t, cfg, testServerYAML(t, "[roots]", envTestAsks, "1")+
				fmt.Sprintf("    protocol_versions: [%q]\n", server)+
				"policy:\n  rules:\n    - {server: w, tool: \"*\", decision: allow}\n")
			url, serve := startServe(t, dir, "--http", "127.0.0.1:0", "--config", cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			for _, client := range []string{"2026-07-28", "2025-11-25"} {
				connect := func(caps *mcp.ClientCapabilities, roots ...*mcp.Root) *mcp.ClientSession {
					t.Helper()
					c := mcp.NewClient(&mcp.Implementation{Name: "roots", Version: "1"}, &mcp.ClientOptions{Capabilities: caps})
					c.AddRoots(roots...)
					cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: client})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { cs.Close() })
					return cs
				}
				declared := connect(&mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}}, &mcp.Root{URI: root, Name: "project"})
				if got, want := callText(ctx, t, declared, "w__roots"), "roots 1: "+root; got != want {
					t.Errorf("client %s that declared roots: %q, want %q", client, got, want)
				}
				// A client that declares nothing: a 2025-11-25 server is
				// refused; a 2026-07-28 one is not offered roots.
				got := callText(ctx, t, connect(&mcp.ClientCapabilities{}), "w__roots")
				want := map[string]string{"2026-07-28": "roots not offered", "2025-11-25": "roots refused: "}[server]
				if !strings.HasPrefix(got, want) || server == "2025-11-25" && !strings.Contains(got, "did not declare roots") {
					t.Errorf("client %s that declared no roots: %q, want %q", client, got, want)
				}
			}
			stopServe(t, serve)

			out := runCLI(t, dir, "", "audit", "--json").want(t, 0).stdout
			if strings.Contains(out, "secret-project") {
				t.Errorf("a root's URI reached the audit trail:\n%s", out)
			}
			answers := 0
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				e := decode(t, line)
				if e["event"] == "input_answer" && e["kind"] == "roots" && e["action"] == "accept" {
					answers++
					if e["roots"] != float64(1) || e["answer_hash"] == nil {
						t.Errorf("roots answer audited as %v, want roots=1 and the answer's hash", e)
					}
				}
			}
			if answers != 2 {
				t.Errorf("%d roots answers audited, want 2 (one per client era):\n%s", answers, out)
			}

			// airlock call offers a 2026-07-28 server no roots; a
			// 2025-11-25 one that asks anyway breaks the contract.
			r := decode(t, runCLI(t, dir, "", "call", "w__roots", "--json").stdout)
			if server == "2026-07-28" && r["content"] != "roots not offered" || server == "2025-11-25" && r["status"] != "contract_error" {
				t.Errorf("airlock call w__roots: %v, want roots not offered, or contract_error (the CLI has no roots)", r)
			}
		})
	}
}
