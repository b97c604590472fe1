package upstream

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/config"
)

// askingServer is an older (2025-11-25) server whose tool "ask" holds (see
// holds), then asks its client a question and answers with the action.
func askingServer(hold *holds) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "asks", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Who string }
			json.Unmarshal(req.Params.Arguments, &in)
			if hold != nil {
				hold.entered <- in.Who
				<-hold.talk
			}
			action := "error"
			if r, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "who?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}); err == nil {
				action = r.Action
			}
			if hold != nil {
				hold.talked <- in.Who
				<-hold.end
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: action}}}, nil
		})
	return s
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
		st, ct := mcp.NewInMemoryTransports()
		if _, err := askingServer(hold).Connect(context.Background(), st, nil); err != nil {
			t.Fatal(err)
		}
		srv := &config.Server{ID: "asks", ProtocolVersions: []string{"2025-11-25"}, RequestTimeout: 10 * time.Second,
			ConnectTimeout: 10 * time.Second, ProbeTimeout: time.Second}
		c, err := Dial(context.Background(), srv, ct, &Options{Elicitation: true})
		if err != nil {
			t.Fatal(err)
		}
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
