package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/gateway"
)

// The upstream's resources, templates and prompts, for startContent (the
// server w; v lists test://shared only):
//
//	test://static-text      text
//	test://static-binary    a blob, image/png
//	test://missing          listed, but not found when read
//	test://watched          subscribable: updated every 50ms while subscribed
//	test://shared           text naming the server (w and v both list it)
//	test://shared/{id}      a template of w and v both: the URI and the server
//	test://template/{id}/data  a template: text with the id
//	greet(name)             "Hello, NAME"
//	ask_context             asks for "user_context" (an input_required result), then "Context: …"
//
// Completions of greet's name: the values of [alpha alpine beta] that
// start with what was typed.
var pngBytes = []byte("\x89PNG\r\n\x1a\nnot really")

func contentOptions(server func() *mcp.Server) *mcp.ServerOptions {
	var mu sync.Mutex
	watching := map[string]context.CancelFunc{}
	return &mcp.ServerOptions{
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			var vs []string
			for _, v := range []string{"alpha", "alpine", "beta"} {
				if strings.HasPrefix(v, req.Params.Argument.Value) {
					vs = append(vs, v)
				}
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: vs, Total: len(vs)}}, nil
		},
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			uri := req.Params.URI
			mark("subscribe " + uri)
			mu.Lock()
			defer mu.Unlock()
			if watching[uri] != nil {
				return nil
			}
			ctx, cancel := context.WithCancel(context.Background())
			watching[uri] = cancel
			go func() {
				for {
					select {
					case <-ctx.Done():
						return
					case <-time.After(50 * time.Millisecond):
						server().ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
					}
				}
			}()
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			mark("unsubscribe " + req.Params.URI)
			mu.Lock()
			defer mu.Unlock()
			if cancel := watching[req.Params.URI]; cancel != nil {
				cancel()
				delete(watching, req.Params.URI)
			}
			return nil
		},
	}
}

func addContent(s *mcp.Server) {
	textOf := func(text string) mcp.ResourceHandler {
		return func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
		}
	}
	s.AddResource(&mcp.Resource{URI: "test://static-text", Name: "static-text", MIMEType: "text/plain"}, textOf("static text"))
	s.AddResource(&mcp.Resource{URI: "test://static-binary", Name: "static-binary", MIMEType: "image/png"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "image/png", Blob: pngBytes}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "test://missing", Name: "missing"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	})
	s.AddResource(&mcp.Resource{URI: "test://watched", Name: "watched"}, textOf("watched"))
	addShared(s)
	if _, err := os.Stat(os.Getenv(envMark) + ".extra"); err == nil {
		// A server that gained a resource and a prompt since it last ran.
		s.AddResource(&mcp.Resource{URI: "test://extra", Name: "extra"}, textOf("extra"))
		s.AddPrompt(&mcp.Prompt{Name: "extra"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "extra"}}}}, nil
		})
	}
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://template/{id}/data", Name: "template", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "data of " + req.Params.URI}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greet someone.", Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			mark("get greet " + req.Params.Arguments["name"])
			return &mcp.GetPromptResult{Description: "a greeting", Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "Hello, " + req.Params.Arguments["name"]}}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "ask_context", Description: "Ask for context first."},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if r, ok := req.Params.InputResponses["user_context"].(*mcp.ElicitResult); ok && r.Action == "accept" {
				c, _ := r.Content["context"].(string)
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Context: " + c}}}}, nil
			}
			return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{"user_context": &mcp.ElicitParams{Message: "Please provide context",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"context": map[string]any{"type": "string"}},
					"required": []any{"context"}}}}}, nil
		})
}

func addShared(s *mcp.Server) {
	who := os.Getenv(envServerID)
	shared := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: req.Params.URI + " by " + who}}}, nil
	}
	s.AddResource(&mcp.Resource{URI: "test://shared", Name: "shared", MIMEType: "text/plain"}, shared)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://shared/{id}", Name: "shared"}, shared)
}

// envServerID names the upstream to itself.
const envServerID = "AIRLOCK_GATEWAY_TEST_ID"

// startContent serves a gateway in front of w (the content above, with
// the echo tool) and v (test://shared), every resource and prompt allowed;
// rules are more policy rules (YAML list items).
func startContent(t *testing.T, rules string) *fixture {
	t.Helper()
	f, dir, exe := newFixture(t)
	cfg, err := config.Parse(fmt.Appendf(nil, `servers:
  - id: w
    command: %q
    env: {%s: content, %s: %q, %s: w}
    allowed_tools: [echo, crash]
    allowed_resources: ["*"]
    allowed_prompts: ["*"]
  - id: v
    command: %q
    env: {%s: shared, %s: %q, %s: v}
    allowed_tools: [echo]
    allowed_resources: ["*"]
    allowed_prompts: ["*"]
policy:
  tools:
    - {server: w, tool: crash, effect: read}
  rules:
%s`, exe, envUpstream, envMark, f.mark, envServerID, exe, envUpstream, envMark, f.markB+"v", envServerID, rules+"    - {server: \"*\", tool: \"*\", decision: allow}\n"), "airlock.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	f.open(t, cfg, nil, &airlock.Options{Elicit: func(context.Context, *airlock.InputRequest) (*airlock.InputAnswer, error) { return nil, nil }})
	return f
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestContentListed(t *testing.T) {
	f := startContent(t, "")
	f.eachEra(t, func(t *testing.T, era string, cs *mcp.ClientSession) {
		ctx := ctxT(t)
		rs, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var uris []string
		for _, r := range rs.Resources {
			uris = append(uris, r.URI)
		}
		want := []string{"airlock://v/test://shared", "airlock://w/test://shared", "test://missing", "test://static-binary", "test://static-text", "test://watched"}
		slices.Sort(uris)
		if !slices.Equal(uris, want) {
			t.Errorf("resources %q, want %q (test://shared qualified: two servers list it)", uris, want)
		}
		ts, err := cs.ListResourceTemplates(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var tmpls []string
		for _, t := range ts.ResourceTemplates {
			tmpls = append(tmpls, t.URITemplate)
		}
		slices.Sort(tmpls)
		if want := []string{"airlock://v/test://shared/{id}", "airlock://w/test://shared/{id}", "test://template/{id}/data"}; !slices.Equal(tmpls, want) {
			t.Errorf("templates %q, want %q (test://shared/{id} qualified: two servers list it)", tmpls, want)
		}
		ps, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range ps.Prompts {
			names = append(names, p.Name)
			if p.Name == "w__greet" && (len(p.Arguments) != 1 || p.Arguments[0].Name != "name" || !p.Arguments[0].Required) {
				t.Errorf("w__greet's arguments %+v, want name, required", p.Arguments)
			}
		}
		if !slices.Equal(names, []string{"w__ask_context", "w__greet"}) {
			t.Errorf("prompts %q, want w__ask_context, w__greet", names)
		}
		caps := cs.InitializeResult().Capabilities
		if caps.Completions == nil || caps.Resources == nil || !caps.Resources.Subscribe || !caps.Resources.ListChanged || caps.Prompts == nil {
			t.Errorf("capabilities %+v, want completions, resources with subscribe and listChanged, prompts", caps)
		}
	})
}

func TestReadResource(t *testing.T) {
	f := startContent(t, "")
	f.eachEra(t, func(t *testing.T, era string, cs *mcp.ClientSession) {
		ctx := ctxT(t)
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"})
		if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "static text" || res.Contents[0].MIMEType != "text/plain" {
			t.Errorf("text: %+v, %v; want static text", res, err)
		}
		res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-binary"})
		if err != nil || len(res.Contents) != 1 || !bytes.Equal(res.Contents[0].Blob, pngBytes) || res.Contents[0].MIMEType != "image/png" {
			t.Errorf("blob: %+v, %v; want the bytes, image/png", res, err)
		}
		res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/42/data"})
		if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "data of test://template/42/data" {
			t.Errorf("template: %+v, %v; want the expansion read", res, err)
		}

		_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://missing"})
		werr := rpcError(t, err)
		var data struct{ URI string }
		json.Unmarshal(werr.Data, &data)
		if werr.Code != jsonrpc.CodeInvalidParams || data.URI != "test://missing" {
			t.Errorf("not found: %d %s %s, want -32602 with data.uri (SEP-2164)", werr.Code, werr.Message, werr.Data)
		}

		_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://shared"})
		werr = rpcError(t, err)
		if werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "airlock://v/test://shared, airlock://w/test://shared") {
			t.Errorf("unqualified shared: %d %q, want -32602 naming the qualified URIs", werr.Code, werr.Message)
		}
		_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://shared/9"})
		werr = rpcError(t, err)
		if werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "airlock://v/test://shared/9, airlock://w/test://shared/9") {
			t.Errorf("unqualified expansion of a shared template: %d %q, want -32602 naming the qualified URIs", werr.Code, werr.Message)
		}
		for _, s := range []string{"v", "w"} {
			for _, uri := range []string{"test://shared", "test://shared/9"} {
				qualified := "airlock://" + s + "/" + uri
				res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: qualified})
				if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != uri+" by "+s || res.Contents[0].URI != qualified {
					t.Errorf("%s: %+v, %v; want %s of %s", qualified, res, err, uri, s)
				}
			}
		}
		// Every read says how it may be cached, however it was routed: a
		// URI qualified though one server lists it is not in the list.
		for _, uri := range []string{"test://static-text", "airlock://w/test://static-text", "airlock://v/test://shared"} {
			res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			if err != nil || res.CacheScope != "public" || res.TTLMs != 0 {
				t.Errorf("%s: %+v, %v; want cacheScope public, ttlMs 0", uri, res, err)
			}
		}
	})
}

func TestReadDenied(t *testing.T) {
	f := startContent(t, `    - {server: w, resource: "test://static-text", decision: deny}
`)
	f.eachEra(t, func(t *testing.T, era string, cs *mcp.ClientSession) {
		_, err := cs.ReadResource(ctxT(t), &mcp.ReadResourceParams{URI: "test://static-text"})
		werr := rpcError(t, err)
		if werr.Code != gateway.CodeRefused || errorClass(t, werr) != "denied" || !strings.Contains(werr.Message, "refused") {
			t.Errorf("denied read: %d %q %s, want CodeRefused, class denied", werr.Code, werr.Message, werr.Data)
		}
	})
}

func TestGetPrompt(t *testing.T) {
	f := startContent(t, "")
	f.eachEra(t, func(t *testing.T, era string, cs *mcp.ClientSession) {
		ctx := ctxT(t)
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "w__greet", Arguments: map[string]string{"name": "Ada"}})
		if err != nil || len(res.Messages) != 1 || res.Description != "a greeting" {
			t.Fatalf("get: %+v, %v; want one message", res, err)
		}
		if tc, ok := res.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "Hello, Ada" || res.Messages[0].Role != "user" {
			t.Errorf("message %+v, want user: Hello, Ada", res.Messages[0])
		}
		_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "w__greet"})
		if werr := rpcError(t, err); werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, `argument "name" is required`) {
			t.Errorf("without its argument: %d %q, want -32602 saying it is required", werr.Code, werr.Message)
		}
	})
}

func TestComplete(t *testing.T) {
	f := startContent(t, "")
	f.eachEra(t, func(t *testing.T, era string, cs *mcp.ClientSession) {
		res, err := cs.Complete(ctxT(t), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "w__greet"},
			Argument: mcp.CompleteParamsArgument{Name: "name", Value: "al"}})
		if err != nil || !slices.Equal(res.Completion.Values, []string{"alpha", "alpine"}) {
			t.Errorf("completion: %+v, %v; want alpha, alpine", res, err)
		}
		// A qualified template names its server.
		res, err = cs.Complete(ctxT(t), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "airlock://w/test://shared/{id}"},
			Argument: mcp.CompleteParamsArgument{Name: "id", Value: "b"}})
		if err != nil || !slices.Equal(res.Completion.Values, []string{"beta"}) {
			t.Errorf("completion of a qualified template: %+v, %v; want beta", res, err)
		}
	})
}

func TestSubscribe(t *testing.T) {
	f := startContent(t, "")
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			updated := make(chan string, 16)
			cs := f.connect(t, era, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
				select {
				case updated <- req.Params.URI:
				default:
				}
			}})
			if err := cs.Subscribe(ctxT(t), &mcp.SubscribeParams{URI: "test://watched"}); err != nil {
				t.Fatal(err)
			}
			select {
			case uri := <-updated:
				if uri != "test://watched" {
					t.Errorf("updated %q, want test://watched", uri)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("no notifications/resources/updated")
			}
			if err := cs.Unsubscribe(ctxT(t), &mcp.UnsubscribeParams{URI: "test://watched"}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the server to be unsubscribed", func() bool {
				return len(marks(t, f.mark, "unsubscribe test://watched")) > 0
			})

			// A session that ends unsubscribes.
			before, subscribed := len(marks(t, f.mark, "unsubscribe test://watched")), len(marks(t, f.mark, "subscribe test://watched"))
			other := f.connect(t, era, nil)
			if err := other.Subscribe(ctxT(t), &mcp.SubscribeParams{URI: "test://watched"}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the server to be subscribed", func() bool {
				return len(marks(t, f.mark, "subscribe test://watched")) > subscribed
			})
			other.Close()
			waitFor(t, "the ended session's subscription to end", func() bool {
				return len(marks(t, f.mark, "unsubscribe test://watched")) > before
			})
		})
	}
}

// TestPromptApproval: a get that policy wants approved asks the person at
// the client, through elicitation, in both eras, as a tool call does.
func TestPromptApproval(t *testing.T) {
	f := startContent(t, `    - {server: w, prompt: greet, decision: ask}
`)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			var asked []string
			approve := true
			cs := f.connect(t, era, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, req.Params.Message)
					if approve {
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
					}
					return &mcp.ElicitResult{Action: "decline"}, nil
				},
			})
			res, err := cs.GetPrompt(ctxT(t), &mcp.GetPromptParams{Name: "w__greet", Arguments: map[string]string{"name": "yes " + era}})
			if err != nil || len(res.Messages) != 1 {
				t.Fatalf("approved get: %+v, %v; want the prompt", res, err)
			}
			if len(asked) != 1 || !strings.Contains(asked[0], "Approve this prompt?") || !strings.Contains(asked[0], "apr_") {
				t.Errorf("asked %q, want one question with the approval id", asked)
			}
			approve = false
			_, err = cs.GetPrompt(ctxT(t), &mcp.GetPromptParams{Name: "w__greet", Arguments: map[string]string{"name": "no " + era}})
			if werr := rpcError(t, err); werr.Code != gateway.CodeRefused || errorClass(t, werr) != "denied" || !strings.Contains(werr.Message, "a person denied approval") {
				t.Errorf("declined get: %d %q, want CodeRefused, denied", werr.Code, werr.Message)
			}
			if got := marks(t, f.mark, "get greet "); !slices.Contains(got, "get greet yes "+era) || slices.Contains(got, "get greet no "+era) {
				t.Errorf("the server saw %q, want the approved get only", got)
			}
		})
	}
}

// TestPromptInputRequired: a server's question during a get reaches the
// client, as during a tool call.
func TestPromptInputRequired(t *testing.T) {
	f := startContent(t, "")
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			cs := f.connect(t, era, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"context": "from " + era}}, nil
				},
			})
			res, err := cs.GetPrompt(ctxT(t), &mcp.GetPromptParams{Name: "w__ask_context"})
			if err != nil || len(res.Messages) != 1 {
				t.Fatalf("get: %+v, %v; want the prompt", res, err)
			}
			if tc, ok := res.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "Context: from "+era {
				t.Errorf("message %+v, want the answer", res.Messages[0].Content)
			}
		})
	}
}

// TestContentListChanged: when a server comes back with another resource
// and prompt, clients of both eras hear that the lists changed, and find
// them.
func TestContentListChanged(t *testing.T) {
	f := startContent(t, "")
	type heard struct{ resources, prompts chan struct{} }
	sessions, ears := map[string]*mcp.ClientSession{}, map[string]heard{}
	for _, era := range eras {
		h := heard{make(chan struct{}, 16), make(chan struct{}, 16)}
		ears[era] = h
		sessions[era] = f.connect(t, era, &mcp.ClientOptions{
			ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { h.resources <- struct{}{} },
			PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { h.prompts <- struct{}{} },
		})
	}
	if err := os.WriteFile(f.mark+".extra", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	crash(t, f, sessions[session])
	for _, era := range eras {
		for what, ch := range map[string]chan struct{}{"resources": ears[era].resources, "prompts": ears[era].prompts} {
			select {
			case <-ch:
			case <-time.After(20 * time.Second):
				t.Fatalf("%s: no notifications/%s/list_changed", era, what)
			}
		}
		res, err := sessions[era].ReadResource(ctxT(t), &mcp.ReadResourceParams{URI: "test://extra"})
		if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "extra" {
			t.Errorf("%s: the new resource: %+v, %v", era, res, err)
		}
		if _, err := sessions[era].GetPrompt(ctxT(t), &mcp.GetPromptParams{Name: "w__extra"}); err != nil {
			t.Errorf("%s: the new prompt: %v", era, err)
		}
	}
}

// TestReadApproval: a read that policy wants approved asks the person at
// the client, as a tool call does; a client that cannot be asked is told
// the approval id and how to approve it.
func TestReadApproval(t *testing.T) {
	f := startContent(t, `    - {server: w, resource: "test://*", decision: ask}
`)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			var asked []string
			cs := f.connect(t, era, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, req.Params.Message)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
				},
			})
			res, err := cs.ReadResource(ctxT(t), &mcp.ReadResourceParams{URI: "test://static-text"})
			if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "static text" {
				t.Fatalf("approved read: %+v, %v; want the text", res, err)
			}
			if len(asked) != 1 || !strings.Contains(asked[0], "Approve this resource read?") {
				t.Errorf("asked %q, want one question", asked)
			}

			plain := f.connect(t, era, nil)
			_, err = plain.ReadResource(ctxT(t), &mcp.ReadResourceParams{URI: "test://watched"})
			werr := rpcError(t, err)
			var data struct {
				Class      string
				ApprovalID string `json:"approval_id"`
			}
			json.Unmarshal(werr.Data, &data)
			if werr.Code != gateway.CodeRefused || data.Class != "approval_required" || !strings.HasPrefix(data.ApprovalID, "apr_") ||
				!strings.Contains(werr.Message, "airlock approvals approve "+data.ApprovalID+", then read test://watched again") {
				t.Errorf("read without elicitation: %d %q %s, want approval_required with the id and how to approve", werr.Code, werr.Message, werr.Data)
			}
		})
	}
}

// TestPromptApprovalClientCannotAsk: a 2025-11-25 client that declared
// elicitation but fails to ask gets approval_required, with the id and how
// to approve it, and the request stays pending for a person.
func TestPromptApprovalClientCannotAsk(t *testing.T) {
	f := startContent(t, `    - {server: w, prompt: greet, decision: ask}
`)
	cs := f.connect(t, session, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("no window to show a form in")
		},
	})
	get := func() (*mcp.GetPromptResult, error) {
		return cs.GetPrompt(ctxT(t), &mcp.GetPromptParams{Name: "w__greet", Arguments: map[string]string{"name": "unasked"}})
	}
	_, err := get()
	werr := rpcError(t, err)
	var data struct {
		Class      string
		ApprovalID string `json:"approval_id"`
	}
	json.Unmarshal(werr.Data, &data)
	if werr.Code != gateway.CodeRefused || data.Class != "approval_required" ||
		!strings.Contains(werr.Message, "could not ask") || !strings.Contains(werr.Message, "airlock approvals approve "+data.ApprovalID+", then get the prompt again") {
		t.Fatalf("get: %d %q %s, want approval_required saying the client could not ask, and how to approve", werr.Code, werr.Message, werr.Data)
	}
	if err := f.h.Decide(context.Background(), data.ApprovalID, true, "tester", ""); err != nil {
		t.Fatalf("the request is not pending: %v", err)
	}
	if res, err := get(); err != nil || len(res.Messages) != 1 {
		t.Errorf("after approval: %+v, %v; want the prompt", res, err)
	}
}

// TestReadUnlisted: a URI the gateway lists no resource or template for
// (a resource link a tool returned, say) is read from the server whose
// allowed_resources match it, never guessed between two.
func TestReadUnlisted(t *testing.T) {
	f := startContent(t, "")
	f.eachEra(t, func(t *testing.T, era string, cs *mcp.ClientSession) {
		ctx := ctxT(t)
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://unlisted"})
		werr := rpcError(t, err)
		if werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "servers v, w") {
			t.Errorf("unlisted URI both servers allow: %d %q, want -32602 naming both", werr.Code, werr.Message)
		}
		_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "airlock://w/test://unlisted"})
		werr = rpcError(t, err)
		var data struct{ URI string }
		json.Unmarshal(werr.Data, &data)
		if werr.Code != jsonrpc.CodeInvalidParams || data.URI != "airlock://w/test://unlisted" {
			t.Errorf("qualified unlisted URI: %d %q %s, want w's not found", werr.Code, werr.Message, werr.Data)
		}
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "airlock://w/test://static-text"})
		if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "static text" {
			t.Errorf("a listed resource named by its qualified form: %+v %v", res, err)
		}
	})
}
