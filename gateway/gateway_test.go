package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/gateway"
	"github.com/airlockhq/airlock/internal/testenv"
)

// The protocol eras a client may speak: a 2026-07-28 client sends
// stateless requests, a 2025-11-25 one initializes and gets a session.
const (
	stateless = "2026-07-28"
	session   = "2025-11-25"
)

var eras = []string{stateless, session}

// A fixture is a gateway in front of a host whose servers are this test
// binary: w (every tool, the default limits) and b (wait and wait_write,
// one call at a time, short timeouts), served over HTTP on loopback.
type fixture struct {
	g      *gateway.Gateway
	h      *airlock.Host
	url    string // the MCP endpoint
	mark   string // what w saw
	markB  string // what b saw
	log    *testenv.Buffer
	cancel context.CancelFunc
	served chan error
}

// policy is the policy: section of every fixture; rules are added to it.
const policy = `policy:
  tools:
    - {server: w, tool: echo, effect: read}
    - {server: w, tool: fail, effect: read}
    - {server: w, tool: badout, effect: read}
    - {server: w, tool: wait, effect: read}
    - {server: w, tool: crash, effect: read}
    - {server: w, tool: crash_write, effect: write}
    - {server: w, tool: extra, effect: read}
    - {server: w, tool: note, effect: write}
    - {server: w, tool: wait_write, effect: write}
    - {server: b, tool: wait, effect: read}
    - {server: b, tool: wait_write, effect: write}
  rules:
    - {server: "*", tool: wait_write, decision: allow}
    - {server: w, tool: crash_write, decision: allow}
`

// start serves a fixture; rules are more policy rules (YAML list items),
// opts the gateway's options (nil for the defaults).
func start(t testing.TB, rules string, opts *gateway.Options) *fixture {
	t.Helper()
	f, dir, exe := newFixture(t)
	f.markB = filepath.Join(dir, "b.mark")
	yaml := fmt.Sprintf(`servers:
  - id: w
    command: %q
    env: {%s: "1", %s: %q}
    allowed_tools: ["*"]
  - id: b
    command: %q
    env: {%s: "1", %s: %q}
    allowed_tools: [wait, wait_write]
    max_concurrency: 1
    queue_timeout: 200ms
    request_timeout: 600ms
%s%s`, exe, envUpstream, envMark, f.mark, exe, envUpstream, envMark, f.markB, policy, rules)
	f.serve(t, dir, yaml, opts)
	return f
}

// newFixture returns a fixture not yet serving, whose server w marks what
// it sees in a new directory, that directory, and this test binary, which
// serves as the upstream.
func newFixture(t testing.TB) (f *fixture, dir, exe string) {
	t.Helper()
	dir = t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{mark: filepath.Join(dir, "w.mark"), log: &testenv.Buffer{}}, dir, exe
}

// serve reads yaml as the airlock.yaml of dir and serves it, with the
// gateway's options opts (nil for the defaults).
func (f *fixture) serve(t testing.TB, dir, yaml string, opts *gateway.Options) {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml), "airlock.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	f.open(t, cfg, opts, nil)
}

// open opens a host of cfg (with hopts, which may be nil) behind a gateway
// with opts (nil for the defaults), and serves it over HTTP on loopback.
func (f *fixture) open(t testing.TB, cfg *config.Config, opts *gateway.Options, hopts *airlock.Options) {
	t.Helper()
	var o gateway.Options
	if opts != nil {
		o = *opts
	}
	o.Logger = slog.New(slog.NewTextHandler(f.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.g = gateway.New(&o)
	ctx := context.Background()
	var ho airlock.Options
	if hopts != nil {
		ho = *hopts
	}
	ho.Logger, ho.Approver, ho.CatalogChanged, ho.CatalogHeard, ho.ResourceUpdated = o.Logger, f.g, f.g.CatalogChanged, f.g.CatalogHeard, f.g.ResourceUpdated
	if ho.Elicit != nil {
		ho.Elicit = f.g.Elicit // as airlock serve has it: servers may ask, and the gateway relays
	}
	if ho.Roots != nil {
		ho.Roots = f.g.Roots // the same for roots
	}
	var err error
	f.h, err = airlock.Open(ctx, cfg, &ho)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.g.Start(ctx, f.h); err != nil {
		t.Fatal(err)
	}
	ln, base := testenv.Listen(t)
	f.url = base + gateway.Endpoint
	sctx, cancel := context.WithCancel(ctx)
	f.cancel, f.served = cancel, make(chan error, 1)
	go func() { f.served <- f.g.Serve(sctx, ln) }()
	t.Cleanup(func() {
		f.stop(t)
		f.g.Close()
		f.h.Close()
	})
}

// stop ends Serve (draining) and returns what it returned.
func (f *fixture) stop(t testing.TB) error {
	t.Helper()
	f.cancel()
	select {
	case err, ok := <-f.served:
		if ok {
			close(f.served)
		}
		return err
	case <-time.After(time.Minute):
		t.Fatal("Serve did not return")
		return nil
	}
}

// connect opens a client session of era on the fixture's endpoint.
func (f *fixture) connect(t testing.TB, era string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: f.url}, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("connect (%s): %v", era, err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != era {
		t.Fatalf("negotiated protocol version %s, want %s", got, era)
	}
	return cs
}

// eachEra runs fn in a subtest for each era, with a session of that era.
func (f *fixture) eachEra(t *testing.T, fn func(t *testing.T, era string, cs *mcp.ClientSession)) {
	t.Helper()
	for _, era := range eras {
		t.Run(era, func(t *testing.T) { fn(t, era, f.connect(t, era, nil)) })
	}
}

// call calls a tool with raw arguments.
func call(t *testing.T, cs *mcp.ClientSession, name, args string) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
}

// resultText is a result's text content.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// status is the class a tool result carries in its _meta.
func status(res *mcp.CallToolResult) string {
	s, _ := res.Meta["airlock/status"].(string)
	return s
}

// rpcError returns err as a JSON-RPC error, failing the test if it is not
// one.
func rpcError(t *testing.T, err error) *jsonrpc.Error {
	t.Helper()
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("error %v (%T), want a JSON-RPC error", err, err)
	}
	return werr
}

// errorClass is the class a JSON-RPC error of the gateway carries.
func errorClass(t *testing.T, werr *jsonrpc.Error) string {
	t.Helper()
	var data struct{ Class string }
	if err := json.Unmarshal(werr.Data, &data); err != nil {
		t.Fatalf("error data %s: %v", werr.Data, err)
	}
	return data.Class
}

// release lets the calls held by wait and wait_write on the server whose
// marks are in markFile finish.
func release(t *testing.T, markFile string) {
	t.Helper()
	if err := os.WriteFile(markFile+".go", nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds or a deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// inParallel runs n copies of fn at once and waits for them.
func inParallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { fn(i) })
	}
	wg.Wait()
}

func TestListAndCallBothEras(t *testing.T) {
	f := start(t, "", nil)
	f.eachEra(t, func(t *testing.T, era string, cs *mcp.ClientSession) {
		list, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range list.Tools {
			names = append(names, tool.Name)
		}
		want := "b__wait b__wait_write w__badout w__crash w__crash_write w__echo w__fail w__note w__wait w__wait_write"
		if got := strings.Join(names, " "); got != want {
			t.Errorf("tools = %s, want %s", got, want)
		}
		for _, tool := range list.Tools {
			// The server claims nothing; policy classifies all but
			// note, wait_write and crash_write as reads.
			read := !strings.HasSuffix(tool.Name, "__note") && !strings.HasSuffix(tool.Name, "_write")
			if tool.Annotations == nil || tool.Annotations.ReadOnlyHint != read {
				t.Errorf("%s: annotations %+v, want readOnlyHint %v (local policy's effect)", tool.Name, tool.Annotations, read)
			}
		}
		res, err := call(t, cs, "w__echo", `{"text":"hello"}`)
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError || resultText(res) != "hello" || status(res) != "ok" {
			t.Errorf("result = %+v (%q), want ok hello", res, resultText(res))
		}
		if got, _ := json.Marshal(res.StructuredContent); string(got) != `{"text":"hello"}` {
			t.Errorf("structuredContent = %s, want {\"text\":\"hello\"}", got)
		}
	})
}

// TestResultClasses maps every class of result onto MCP, in both eras.
func TestResultClasses(t *testing.T) {
	f := start(t, "    - {server: w, tool: crash, decision: deny}\n", nil)
	f.eachEra(t, func(t *testing.T, era string, cs *mcp.ClientSession) {
		tests := []struct {
			name, tool, args string
			class            string // the result's class, or the JSON-RPC error's
			code             int64  // the JSON-RPC error code; 0 for a result
			text             string // in the result's text, or the error's message
		}{
			{"tool error", "w__fail", `{}`, "tool_error", 0, "the disk is full"},
			{"invalid arguments", "w__echo", `{"text":5}`, "invalid_arguments", 0, "invalid arguments for w__echo"},
			{"duplicate keys", "w__echo", `{"text":"a","text":"b"}`, "invalid_arguments", 0, "invalid arguments for w__echo"},
			{"case-variant keys", "w__echo", `{"text":"a","TEXT":"b"}`, "invalid_arguments", 0, "invalid arguments for w__echo"},
			{"denied by a rule", "w__crash", `{}`, "denied", 0, "w__crash refused"},
			{"approval, client cannot be asked", "w__note", `{"text":"x"}`, "approval_required", 0, "airlock approvals approve apr_"},
			{"contract error", "w__badout", `{}`, "contract_error", jsonrpc.CodeInternalError, "contract_error: server w broke the MCP contract"},
			{"unknown tool", "w__nope", `{}`, "", jsonrpc.CodeInvalidParams, "nope"},
			{"not allowed on its server", "b__echo", `{"text":"x"}`, "", jsonrpc.CodeInvalidParams, "b__echo"},
		}
		for _, tt := range tests {
			res, err := call(t, cs, tt.tool, tt.args)
			if tt.code != 0 {
				werr := rpcError(t, err)
				if werr.Code != tt.code || !strings.Contains(werr.Message, tt.text) {
					t.Errorf("%s: error %d %q, want %d containing %q", tt.name, werr.Code, werr.Message, tt.code, tt.text)
				}
				if tt.class != "" && errorClass(t, werr) != tt.class {
					t.Errorf("%s: error class %s, want %s", tt.name, errorClass(t, werr), tt.class)
				}
				if strings.Contains(werr.Message, "IGNORE") || strings.Contains(string(werr.Data), "IGNORE") {
					t.Errorf("%s: the server's text reached the client: %s %s", tt.name, werr.Message, werr.Data)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %v, want a result", tt.name, err)
				continue
			}
			if !res.IsError || status(res) != tt.class || !strings.Contains(resultText(res), tt.text) {
				t.Errorf("%s: result isError=%v class %q %q, want isError class %s containing %q",
					tt.name, res.IsError, status(res), resultText(res), tt.class, tt.text)
			}
		}
	})
	// Nothing was sent for a call refused before the send stage, nor for a
	// tool outside the catalog.
	for _, line := range marks(t, f.mark, "call ") {
		if !strings.HasPrefix(line, "call fail ") && !strings.HasPrefix(line, "call badout ") {
			t.Errorf("the server saw %q", line)
		}
	}
	if got := marks(t, f.markB, "call "); len(got) != 0 {
		t.Errorf("server b saw %q", got)
	}
}

// TestBusyAndTimeouts: a call that finds no slot is busy (never sent); a
// read that times out is a connection error; a write that times out has
// an unknown outcome, which the client is told not to repeat blindly.
func TestBusyAndTimeouts(t *testing.T) {
	f := start(t, "", nil)
	f.eachEra(t, func(t *testing.T, era string, cs *mcp.ClientSession) {
		seen := len(marks(t, f.markB, "call wait "))
		held := make(chan error, 1)
		go func() {
			_, err := call(t, cs, "b__wait", `{}`)
			held <- err
		}()
		waitFor(t, "the first call to reach b", func() bool { return len(marks(t, f.markB, "call wait ")) > seen })
		res, err := call(t, cs, "b__wait", `{}`)
		if err != nil || !res.IsError || status(res) != "busy" {
			t.Errorf("second call: %+v, %v; want busy", res, err)
		}
		if err := <-held; err == nil || errorClass(t, rpcError(t, err)) != "connection_error" {
			t.Errorf("the read that timed out: %v, want a connection_error", err)
		}
		res, err = call(t, cs, "b__wait_write", `{}`)
		if err != nil || !res.IsError || status(res) != "outcome_unknown" {
			t.Fatalf("write that timed out: %+v, %v; want outcome_unknown", res, err)
		}
		id, _ := res.Meta["airlock/recovery_id"].(string)
		txt := resultText(res)
		for _, want := range []string{"outcome of this call is unknown", "request_timeout", "Do not repeat the call blindly", "Recovery id: " + id} {
			if id == "" || !strings.Contains(txt, want) {
				t.Errorf("outcome_unknown text %q (recovery id %q), want it to contain %q", txt, id, want)
			}
		}
	})
}

// TestOutcomeUnknownInGatewayWords: the client of a write whose outcome
// is unknown is told so in the gateway's words, with the recovery id and
// the trace; not what the server wrote on its way out (its stderr is for
// the operator, and could be words addressed to the client's model).
func TestOutcomeUnknownInGatewayWords(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) { outcomeUnknownInGatewayWords(t, era) })
	}
}

func outcomeUnknownInGatewayWords(t *testing.T, era string) {
	cs := start(t, "", nil).connect(t, era, nil) // a fixture of its own: the call ends its server
	res, err := call(t, cs, "w__crash_write", `{}`)
	if err != nil || !res.IsError || status(res) != "outcome_unknown" {
		t.Fatalf("a write whose server died: %+v, %v; want outcome_unknown", res, err)
	}
	id, _ := res.Meta["airlock/recovery_id"].(string)
	txt := resultText(res)
	if id == "" || !strings.Contains(txt, "Recovery id: "+id) || !strings.Contains(txt, "server w") || !strings.Contains(txt, "trace ") {
		t.Errorf("outcome_unknown text %q (recovery id %q), want the server, the trace and the recovery id", txt, id)
	}
	if strings.Contains(txt, "IGNORE") || strings.Contains(txt, "stderr") {
		t.Errorf("outcome_unknown text %q repeats what the server wrote", txt)
	}
}

// TestApprovalThroughElicitation: a client that declared elicitation is
// asked, with the approval's summary and where the call goes; yes runs the
// call once, no refuses it, and neither is ever sent twice.
func TestApprovalThroughElicitation(t *testing.T) {
	f := start(t, "", nil)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			var mu sync.Mutex
			var asked []string
			answer := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
			cs := f.connect(t, era, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					defer mu.Unlock()
					asked = append(asked, req.Params.Message)
					return answer, nil
				},
			})
			before := len(marks(t, f.mark, "call note "))
			res, err := call(t, cs, "w__note", `{"text":"yes `+era+`"}`)
			if err != nil || res.IsError || resultText(res) != "noted: yes "+era {
				t.Fatalf("approved call: %+v (%q), %v; want it to run", res, resultText(res), err)
			}
			if len(asked) != 1 || !strings.Contains(asked[0], "w__note") || !strings.Contains(asked[0], "It runs on: ") || !strings.Contains(asked[0], "apr_") {
				t.Errorf("asked %q, want one question with the summary, the target and the approval id", asked)
			}
			if id, _ := res.Meta["airlock/approval_id"].(string); !strings.HasPrefix(id, "apr_") {
				t.Errorf("approval id %q, want the grant the call ran on", id)
			}

			answer = &mcp.ElicitResult{Action: "decline"}
			res, err = call(t, cs, "w__note", `{"text":"no `+era+`"}`)
			if err != nil || !res.IsError || status(res) != "denied" || !strings.Contains(resultText(res), "a person denied approval") {
				t.Errorf("declined call: %+v (%q), %v; want denied", res, resultText(res), err)
			}
			if got := len(marks(t, f.mark, "call note ")) - before; got != 1 {
				t.Errorf("the server saw %d calls of note, want 1 (the approved one, once)", got)
			}
		})
	}
}

// TestApprovalFallback: a client without elicitation is told the approval
// id and how to approve; once approved, the same call runs, once.
func TestApprovalFallback(t *testing.T) {
	f := start(t, "", nil)
	f.eachEra(t, func(t *testing.T, era string, cs *mcp.ClientSession) {
		args := `{"text":"later ` + era + `"}`
		res, err := call(t, cs, "w__note", args)
		if err != nil || !res.IsError || status(res) != "approval_required" {
			t.Fatalf("result %+v, %v; want approval_required", res, err)
		}
		id, _ := res.Meta["airlock/approval_id"].(string)
		if !strings.Contains(resultText(res), "airlock approvals approve "+id) {
			t.Errorf("text %q, want it to say how to approve %s", resultText(res), id)
		}
		if err := f.h.Decide(context.Background(), id, true, "tester", ""); err != nil {
			t.Fatal(err)
		}
		if res, err = call(t, cs, "w__note", args); err != nil || res.IsError {
			t.Fatalf("after approval: %+v, %v; want it to run", res, err)
		}
		if res, err = call(t, cs, "w__note", args); err != nil || status(res) != "approval_required" {
			t.Errorf("the grant was used twice: %+v, %v", res, err)
		}
	})
}

// askApproval makes the first round of a call that needs approval, for a
// client that answers input requests by hand, and returns the request
// state the answer must carry.
func askApproval(t *testing.T, cs *mcp.ClientSession, params *mcp.CallToolParams) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || len(res.InputRequests) != 1 || res.RequestState == "" {
		t.Fatalf("first round: %+v, %v; want one input request and a request state", res, err)
	}
	return res.RequestState
}

// TestApprovalAnswerNeitherYesNorNo: an answer to the approval form that
// is neither yes nor no (approve missing, or not a boolean) decides
// nothing: the call is approval_required, and the same call is asked
// again, not refused as denied.
func TestApprovalAnswerNeitherYesNorNo(t *testing.T) {
	f := start(t, "", nil)
	c := mcp.NewClient(&mcp.Implementation{Name: "hand", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		// Declared, so that the gateway asks; answered by hand below.
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("answered by hand")
		},
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: f.url}, &mcp.ClientSessionOptions{ProtocolVersion: stateless})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, content := range []map[string]any{{"approve": "yes"}, {}, {"zzz": true}} {
		params := &mcp.CallToolParams{Name: "w__note", Arguments: map[string]any{"text": "maybe"}}
		state := askApproval(t, cs, params)
		params.InputResponses = mcp.InputResponseMap{"airlock_approval": &mcp.ElicitResult{Action: "accept", Content: content}}
		params.RequestState = state
		res, err := cs.CallTool(context.Background(), params)
		if err != nil || !res.IsError || status(res) != "approval_required" {
			t.Errorf("answered %v: %+v (%q), %v; want approval_required, nothing decided", content, res, resultText(res), err)
		}
	}
	if got := marks(t, f.mark, "call note "); len(got) != 0 {
		t.Errorf("the server saw %q", got)
	}
}

// approveYes is the answer yes to an approval question.
var approveYes = mcp.InputResponseMap{"airlock_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}

// TestForgedApprovalAnswer: an answer whose request state the gateway did
// not sign approves nothing.
func TestForgedApprovalAnswer(t *testing.T) {
	f := start(t, "", nil)
	c := mcp.NewClient(&mcp.Implementation{Name: "forger", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		// Declared, so that the gateway asks; answered by hand below.
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: f.url}, &mcp.ClientSessionOptions{ProtocolVersion: stateless})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "w__note", Arguments: map[string]any{"text": "forged"}}
	asked := askApproval(t, cs, params)
	for _, state := range []string{"", "x.y", "e30." + strings.Repeat("A", 43), asked + "A"} {
		params.InputResponses, params.RequestState = approveYes, state
		res, err := cs.CallTool(ctx, params)
		if err != nil || !res.IsError || status(res) != "approval_required" {
			t.Errorf("state %q: %+v, %v; want approval_required, nothing approved", state, res, err)
		}
	}
	if got := marks(t, f.mark, "call note "); len(got) != 0 {
		t.Errorf("the server saw %q", got)
	}
}

// TestListChanged: when the host's catalog changes (here: the server
// restarts with a tool more), clients of both eras hear of it, and the new
// tool can be called.
func TestListChanged(t *testing.T) {
	f := start(t, "", nil)
	sessions, heard := f.listenForChanges(t)
	if err := os.WriteFile(f.mark+".extra", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	crash(t, f, sessions[session])
	for _, era := range eras {
		heard(era)
		res, err := call(t, sessions[era], "w__extra", `{}`)
		if err != nil || res.IsError || resultText(res) != "extra" {
			t.Errorf("%s: the new tool: %+v, %v", era, res, err)
		}
	}
}

// listenForChanges connects a session of each era that notes
// notifications/tools/list_changed; heard waits for one on era's session.
func (f *fixture) listenForChanges(t *testing.T) (sessions map[string]*mcp.ClientSession, heard func(era string)) {
	t.Helper()
	changed := map[string]chan struct{}{}
	sessions = map[string]*mcp.ClientSession{}
	for _, era := range eras {
		ch := make(chan struct{}, 16)
		changed[era] = ch
		sessions[era] = f.connect(t, era, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { ch <- struct{}{} },
		})
	}
	return sessions, func(era string) {
		t.Helper()
		select {
		case <-changed[era]:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: no notifications/tools/list_changed", era)
		}
	}
}

// crash makes server w exit in the middle of a call and waits until its
// supervisor has brought it back.
func crash(t *testing.T, f *fixture, cs *mcp.ClientSession) {
	t.Helper()
	restarts := f.h.Servers()[0].Restarts
	if _, err := call(t, cs, "w__crash", `{}`); err == nil || errorClass(t, rpcError(t, err)) != "connection_error" {
		t.Errorf("the call the server died in: %v, want a connection_error", err)
	}
	waitFor(t, "server w to be back", func() bool {
		st := f.h.Servers()[0]
		return st.Restarts > restarts && st.Status == airlock.StatusReady
	})
}

// TestSharedUpstream: twenty sessions, of both eras, calling at once, are
// served by one upstream process.
func TestSharedUpstream(t *testing.T) {
	f := start(t, "", nil)
	var sessions []*mcp.ClientSession
	for i := range 20 {
		sessions = append(sessions, f.connect(t, eras[i%2], nil))
	}
	inParallel(len(sessions), func(i int) {
		text := fmt.Sprintf("session %d", i)
		res, err := call(t, sessions[i], "w__echo", fmt.Sprintf(`{"text":%q}`, text))
		if err != nil || resultText(res) != text {
			t.Errorf("session %d: %+v, %v", i, res, err)
		}
	})
	if got := marks(t, f.mark, "pid "); len(got) != 1 {
		t.Errorf("upstream processes started: %q, want one", got)
	}
	if got := marks(t, f.mark, "call echo "); len(got) != 20 {
		t.Errorf("the upstream saw %d calls, want 20", len(got))
	}
}

// TestCrashMidCall: when the upstream dies under calls in flight from
// several sessions, each read ends with a connection error, each write
// with an unknown outcome (it may have happened: never sent again), and
// the next call, once the server is back, works.
func TestCrashMidCall(t *testing.T) {
	f := start(t, "", nil)
	type outcome struct {
		tool string
		res  *mcp.CallToolResult
		err  error
	}
	calls := []string{"w__wait", "w__wait", "w__wait_write", "w__wait_write"}
	results := make(chan outcome, len(calls))
	for i, tool := range calls {
		cs := f.connect(t, eras[i%2], nil)
		go func() {
			res, err := call(t, cs, tool, `{}`)
			results <- outcome{tool, res, err}
		}()
	}
	waitFor(t, "every call to reach the server", func() bool { return len(marks(t, f.mark, "call wait")) == len(calls) })
	crash(t, f, f.connect(t, session, nil))
	for range calls {
		o := <-results
		switch o.tool {
		case "w__wait":
			if o.err == nil || errorClass(t, rpcError(t, o.err)) != "connection_error" {
				t.Errorf("read in flight: %+v, %v; want a connection_error", o.res, o.err)
			}
		case "w__wait_write":
			if o.err != nil || !o.res.IsError || status(o.res) != "outcome_unknown" || o.res.Meta["airlock/recovery_id"] == nil {
				t.Errorf("write in flight: %+v, %v; want outcome_unknown with a recovery id", o.res, o.err)
			}
		}
	}
	res, err := call(t, f.connect(t, stateless, nil), "w__echo", `{"text":"back"}`)
	if err != nil || resultText(res) != "back" {
		t.Errorf("the next call: %+v, %v; want it to work", res, err)
	}
	if got := marks(t, f.mark, "call wait_write"); len(got) != 2 {
		t.Errorf("writes sent: %q, want each once", got)
	}
}

// TestApprovalClientCannotAsk: a 2025-11-25 client that declared
// elicitation but fails to ask gets the fallback text, and the request
// stays pending for a person.
func TestApprovalClientCannotAsk(t *testing.T) {
	f := start(t, "", nil)
	cs := f.connect(t, session, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("no window to show a form in")
		},
	})
	res, err := call(t, cs, "w__note", `{"text":"unasked"}`)
	if err != nil || !res.IsError || status(res) != "approval_required" {
		t.Fatalf("result %+v, %v; want approval_required", res, err)
	}
	id, _ := res.Meta["airlock/approval_id"].(string)
	if !strings.Contains(resultText(res), "airlock approvals approve "+id) || !strings.Contains(resultText(res), "could not ask") {
		t.Errorf("text %q, want it to say the client could not ask, and how to approve %s", resultText(res), id)
	}
	if err := f.h.Decide(context.Background(), id, true, "tester", ""); err != nil {
		t.Fatalf("the request is not pending: %v", err)
	}
	if res, err = call(t, cs, "w__note", `{"text":"unasked"}`); err != nil || res.IsError {
		t.Errorf("after approval: %+v, %v; want it to run", res, err)
	}
}

// TestStdioInputEndsAfterRequests: a client that sends its requests and
// closes its input (as the MCP stdio transport ends a session) gets every
// answer first: a write in flight is not cut off into an unknown outcome.
func TestStdioInputEndsAfterRequests(t *testing.T) {
	f := start(t, "", nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- f.g.ServeStdio(context.Background(), inR, outW); outW.Close() }()
	answers := map[string]map[string]any{}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["id"] != nil {
				id, _ := json.Marshal(m["id"])
				answers[string(id)] = m
			}
		}
	}()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`+"\n")
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"w__wait_write","arguments":{}}}`+"\n")
	io.WriteString(inW, `{"jsonrpc":"2.0","id":"p","method":"ping"}`+"\n")
	inW.Close()
	time.AfterFunc(300*time.Millisecond, func() { os.WriteFile(f.mark+".go", nil, 0o644) })
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("ServeStdio did not return")
	}
	<-read
	if answers[`"p"`] == nil {
		t.Errorf("the ping was not answered; answers %v", answers)
	}
	res, _ := answers["2"]["result"].(map[string]any)
	meta, _ := res["_meta"].(map[string]any)
	if meta["airlock/status"] != "ok" {
		t.Errorf("the write sent before the input ended: %v, want it answered ok", answers["2"])
	}
}
