//lint:file-ignore SA1019 the server under test asks for its client's roots, which protocol version 2026-07-28 deprecates (SEP-2577).

package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// askingServer is an older (2025-11-25) server whose tool "ask" holds (see
// holds), then asks its client a question and answers with the action.
func askingServer(hold *holds) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "asks", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			action := "error"
			hold.held(req, func() {
				if r, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "who?",
					RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}); err == nil {
					action = r.Action
				}
			})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: action}}}, nil
		})
	return s
}

// dialOlder connects to s, in memory, speaking 2025-11-25, with opts.
func dialOlder(t *testing.T, s *mcp.Server, opts *Options) *Conn {
	t.Helper()
	return dialMemory(t, s, "asks", "2025-11-25", opts)
}

// TestAskGoesToItsCall: a server's elicitation/create names no call; it
// goes to the only call in flight, and with two in flight to neither of
// them: it is declined, and no caller is asked another's question.
func TestAskGoesToItsCall(t *testing.T) {
	for _, together := range []bool{false, true} {
		var hold *holds
		if together {
			hold = newHolds()
		}
		c := dialOlder(t, askingServer(hold), &Options{Elicitation: true})
		var mu sync.Mutex
		asked := 0
		ctx := WithAsker(context.Background(), &Asker{Elicit: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked++
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		}})
		answers := make(chan string, 2)
		callers := []string{"a"}
		if together {
			callers = append(callers, "b")
			go hold.together()
		}
		for _, who := range callers {
			go func() {
				args, _ := json.Marshal(map[string]string{"who": who})
				res, err := c.Session().CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: args})
				if err != nil {
					answers <- err.Error()
					return
				}
				answers <- res.Content[0].(*mcp.TextContent).Text
			}()
		}
		want, wantAsked := "accept", 1
		if together {
			want, wantAsked = "decline", 0
		}
		for range callers {
			if got := <-answers; got != want {
				t.Errorf("together %v: the server was answered %q, want %q", together, got, want)
			}
		}
		mu.Lock()
		if asked != wantAsked {
			t.Errorf("together %v: the Asker was asked %d times, want %d", together, asked, wantAsked)
		}
		mu.Unlock()
		c.Close()
	}
}

// TestRoots: roots are declared (without listChanged) only with
// Options.Roots; then a roots/list during a call goes to the call's Asker,
// and one outside any call is refused (CodeRootsRefused); without it, a
// roots/list is "method not found".
func TestRoots(t *testing.T) {
	for _, declared := range []bool{true, false} {
		outside := make(chan error, 1)
		s := mcp.NewServer(&mcp.Implementation{Name: "roots", Version: "1"}, &mcp.ServerOptions{
			InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
				go func() {
					_, err := req.Session.ListRoots(context.Background(), nil)
					outside <- err
				}()
			}})
		var heard *mcp.ClientCapabilities
		s.AddTool(&mcp.Tool{Name: "roots", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				heard = req.Session.InitializeParams().Capabilities
				r, err := req.Session.ListRoots(ctx, nil)
				if err != nil {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: rpcCodeOf(err)}}}, nil
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.Roots[0].URI}}}, nil
			})
		c := dialOlder(t, s, &Options{Roots: declared})
		// The server asks as soon as the session starts, before any call.
		wantOutside := strconv.Itoa(CodeRootsRefused)
		if !declared {
			wantOutside = strconv.Itoa(jsonrpc.CodeMethodNotFound)
		}
		if got := rpcCodeOf(<-outside); got != wantOutside {
			t.Errorf("declared %v: a roots/list outside any call got %s, want %s", declared, got, wantOutside)
		}
		ctx := WithAsker(context.Background(), &Asker{Roots: func(context.Context, *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
			return &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///project"}}}, nil
		}, Undeclared: func(string) {}})
		res, err := c.Session().CallTool(ctx, &mcp.CallToolParams{Name: "roots", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		want := "file:///project"
		if !declared {
			want = strconv.Itoa(jsonrpc.CodeMethodNotFound)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != want {
			t.Errorf("declared %v: the server got %q during the call, want %q", declared, got, want)
		}
		if declared && (heard.RootsV2 == nil || heard.Roots.ListChanged) || !declared && heard.RootsV2 != nil {
			t.Errorf("declared %v: the server heard roots %+v", declared, heard.RootsV2)
		}
		c.Close()
	}
}

func rpcCodeOf(err error) string {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		return strconv.FormatInt(werr.Code, 10)
	}
	return fmt.Sprint(err)
}
