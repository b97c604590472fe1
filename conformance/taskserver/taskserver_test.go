package main

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMain runs the test binary as the server itself when asked to, so that
// the tests can start it as a real process over stdio.
func TestMain(m *testing.M) {
	if os.Getenv("TASKSERVER_TEST_SERVE") == "1" {
		if err := run(context.Background(), ""); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// answer plays the user: it answers each question the tools ask the way
// the conformance suite does.
func answer(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	switch msg := req.Params.Message; {
	case strings.HasPrefix(msg, "Delete "):
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
	case msg == "What is the first name?":
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "partial-1", "confirm": true}}, nil
	case msg == "What is the second name?":
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "partial-2", "confirm": true}}, nil
	case msg == "What is your name?":
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Alice"}}, nil
	}
	return nil, errors.New("unexpected question " + req.Params.Message)
}

func newClient(opts *mcp.ClientOptions) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "taskserver-test", Version: "1.0.0"}, opts)
}

// connectProcess starts the server as a process of its own, speaking
// stdio, and connects to it at the given protocol version.
func connectProcess(t *testing.T, version string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "TASKSERVER_TEST_SERVE=1")
	cmd.Stderr = os.Stderr
	cs, err := newClient(&mcp.ClientOptions{ElicitationHandler: answer}).Connect(context.Background(),
		&mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting to the server process: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated protocol version %q, want %q", got, version)
	}
	return cs
}

// connectHTTP serves the server over stateless Streamable HTTP, as -http
// does, and connects to it.
func connectHTTP(t *testing.T) *mcp.ClientSession {
	t.Helper()
	srv := httptest.NewServer(newHTTPHandler(newServer()))
	t.Cleanup(srv.Close)
	cs, err := newClient(&mcp.ClientOptions{ElicitationHandler: answer}).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatalf("connecting over HTTP: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// connectMemory connects over in-memory transports, with the
// multi-round-trip retries left to the test.
func connectMemory(t *testing.T) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := newServer().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := newClient(&mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}).
		Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// A call is one tools/call and the result the tasks scenarios expect of it
// once every question has been answered.
type call struct {
	tool     string
	args     map[string]any
	text     string        // the first content's text
	isError  bool          // the result's isError
	wireCode int64         // when non-zero, a JSON-RPC error with this code instead of a result
	atLeast  time.Duration // how long the tool works before it answers
}

var calls = []call{
	{tool: "greet", args: map[string]any{"name": "sep-2243"}, text: "Hello, sep-2243!"},
	{tool: "slow_compute", args: map[string]any{"seconds": 0, "label": "instant"}, text: `Computed "instant" in 0s: 42.`},
	{tool: "slow_compute", args: map[string]any{"seconds": 1, "label": "wire-fields"}, text: `Computed "wire-fields" in 1s: 42.`, atLeast: time.Second},
	{tool: "failing_job", args: map[string]any{}, text: "failing_job failed, as it always does.", isError: true, atLeast: busy},
	{tool: "protocol_error_job", args: map[string]any{}, wireCode: jsonrpc.CodeInternalError, atLeast: busy},
	{tool: "confirm_delete", args: map[string]any{"filename": "mrtr-input.txt"}, text: "Deleted mrtr-input.txt.", atLeast: busy},
	{tool: "multi_input", args: map[string]any{}, text: "Received first=partial-1 and second=partial-2.", atLeast: busy},
	{tool: "test_tool_with_task", args: map[string]any{}, text: "Hello, Alice! The work you asked for is done.", atLeast: busy},
}

// TestTools calls every tool, over each way the server is reached, with the
// client answering the tools' questions: over stdio at 2025-11-25 the SDK
// asks through elicitation/create requests of the server's own, at
// 2026-07-28 and over HTTP through input-required results and retries.
func TestTools(t *testing.T) {
	connections := []struct {
		name    string
		connect func(*testing.T) *mcp.ClientSession
	}{
		{"stdio 2025-11-25", func(t *testing.T) *mcp.ClientSession { return connectProcess(t, "2025-11-25") }},
		{"stdio 2026-07-28", func(t *testing.T) *mcp.ClientSession { return connectProcess(t, "2026-07-28") }},
		{"http", connectHTTP},
	}
	for _, conn := range connections {
		t.Run(conn.name, func(t *testing.T) {
			t.Parallel()
			cs := conn.connect(t)

			tools, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			slices.Sort(names)
			want := []string{"confirm_delete", "failing_job", "greet", "multi_input", "protocol_error_job", "slow_compute", "test_tool_with_task"}
			if diff := cmp.Diff(want, names); diff != "" {
				t.Errorf("tools/list (-want +got):\n%s", diff)
			}

			for _, c := range calls {
				t.Run(c.tool, func(t *testing.T) {
					t.Parallel()
					start := time.Now()
					res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
					took := time.Since(start)
					if took < c.atLeast {
						t.Errorf("%s answered after %v, want at least %v", c.tool, took, c.atLeast)
					}
					if c.wireCode != 0 {
						var werr *jsonrpc.Error
						if !errors.As(err, &werr) || werr.Code != c.wireCode {
							t.Fatalf("%s: got result %v, error %v; want a JSON-RPC error with code %d", c.tool, res, err, c.wireCode)
						}
						return
					}
					if err != nil {
						t.Fatalf("%s: %v", c.tool, err)
					}
					if got := firstText(res); got != c.text {
						t.Errorf("%s text: got %q, want %q", c.tool, got, c.text)
					}
					if res.IsError != c.isError {
						t.Errorf("%s isError: got %v, want %v", c.tool, res.IsError, c.isError)
					}
				})
			}
		})
	}
}

// TestSlowComputeCancelled checks that a cancelled slow_compute stops
// working rather than sleeping out its seconds.
func TestSlowComputeCancelled(t *testing.T) {
	cs := connectProcess(t, "2026-07-28")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow_compute", Arguments: map[string]any{"seconds": 60, "label": "lifecycle-cancel"}})
	if err == nil {
		t.Fatal("a cancelled slow_compute returned a result")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the cancelled call returned after %v", took)
	}

	// The handler itself returns as soon as its context ends.
	hctx, hcancel := context.WithCancel(context.Background())
	hcancel()
	start = time.Now()
	if _, _, err := slowCompute(hctx, nil, slowComputeArgs{Seconds: 60}); !errors.Is(err, context.Canceled) {
		t.Errorf("slowCompute with a cancelled context: got %v, want %v", err, context.Canceled)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("slowCompute with a cancelled context returned after %v", took)
	}
}

// TestRounds walks the tools that ask for input through their rounds by
// hand, as a server in front of them does: what each round asks, how long
// it takes to ask, and what the retry carrying the answers returns.
func TestRounds(t *testing.T) {
	cs := connectMemory(t)
	accept := func(content map[string]any) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: content}
	}

	t.Run("confirm_delete", func(t *testing.T) {
		t.Parallel()
		args := map[string]any{"filename": "rt.txt"}
		start := time.Now()
		res := callTool(t, cs, &mcp.CallToolParams{Name: "confirm_delete", Arguments: args})
		if took := time.Since(start); took < busy {
			t.Errorf("confirm_delete asked after %v, want at least %v", took, busy)
		}
		wantQuestions(t, res, map[string]string{confirmKey: "Delete rt.txt?"})

		res = callTool(t, cs, &mcp.CallToolParams{Name: "confirm_delete", Arguments: args,
			InputResponses: mcp.InputResponseMap{confirmKey: accept(map[string]any{"confirm": true})}})
		if got, want := firstText(res), "Deleted rt.txt."; got != want {
			t.Errorf("confirmed: got %q, want %q", got, want)
		}

		res = callTool(t, cs, &mcp.CallToolParams{Name: "confirm_delete", Arguments: args,
			InputResponses: mcp.InputResponseMap{confirmKey: &mcp.ElicitResult{Action: "decline"}}})
		if got, want := firstText(res), "Kept rt.txt: the deletion was not confirmed."; got != want {
			t.Errorf("declined: got %q, want %q", got, want)
		}
	})

	t.Run("multi_input", func(t *testing.T) {
		t.Parallel()
		res := callTool(t, cs, &mcp.CallToolParams{Name: "multi_input", Arguments: map[string]any{}})
		wantQuestions(t, res, map[string]string{firstKey: "What is the first name?", secondKey: "What is the second name?"})

		// One answer: the other question is asked again, alone.
		res = callTool(t, cs, &mcp.CallToolParams{Name: "multi_input", Arguments: map[string]any{},
			InputResponses: mcp.InputResponseMap{firstKey: accept(map[string]any{"name": "partial-1", "confirm": true})}})
		wantQuestions(t, res, map[string]string{secondKey: "What is the second name?"})
		if res.RequestState == "" {
			t.Fatal("a partly answered multi_input carries no request state")
		}

		res = callTool(t, cs, &mcp.CallToolParams{Name: "multi_input", Arguments: map[string]any{},
			RequestState:   res.RequestState,
			InputResponses: mcp.InputResponseMap{secondKey: accept(map[string]any{"name": "partial-2", "confirm": true})}})
		if got, want := firstText(res), "Received first=partial-1 and second=partial-2."; got != want {
			t.Errorf("both answered: got %q, want %q", got, want)
		}
	})

	t.Run("test_tool_with_task", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		res := callTool(t, cs, &mcp.CallToolParams{Name: "test_tool_with_task", Arguments: map[string]any{}})
		if took := time.Since(start); took >= busy {
			t.Errorf("test_tool_with_task asked after %v, want at once", took)
		}
		wantQuestions(t, res, map[string]string{userNameKey: "What is your name?"})

		start = time.Now()
		res = callTool(t, cs, &mcp.CallToolParams{Name: "test_tool_with_task", Arguments: map[string]any{},
			InputResponses: mcp.InputResponseMap{userNameKey: accept(map[string]any{"name": "Alice"})}})
		if took := time.Since(start); took < busy {
			t.Errorf("the answered round returned after %v, want at least %v", took, busy)
		}
		if got := firstText(res); !strings.Contains(got, "Alice") {
			t.Errorf("the answered round: got %q, want the name Alice in it", got)
		}
	})
}

func callTool(t *testing.T, cs *mcp.ClientSession, params *mcp.CallToolParams) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), params)
	if err != nil {
		t.Fatalf("%s: %v", params.Name, err)
	}
	return res
}

// wantQuestions checks that res asks exactly the given elicitation
// questions, by input request key.
func wantQuestions(t *testing.T, res *mcp.CallToolResult, want map[string]string) {
	t.Helper()
	if !res.NeedsInput() {
		t.Fatalf("got a complete result %q, want input requests", firstText(res))
	}
	got := map[string]string{}
	for key, ir := range res.InputRequests {
		p, ok := ir.(*mcp.ElicitParams)
		if !ok {
			t.Fatalf("input request %q is a %T, want elicitation", key, ir)
		}
		got[key] = p.Message
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("questions (-want +got):\n%s", diff)
	}
}

func firstText(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}
