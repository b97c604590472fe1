package airlock_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
)

// contentServer is an MCP server with resources, a template, prompts,
// completions and subscriptions. reads counts the resources/read requests
// it was sent, by URI.
type contentServer struct {
	*mcp.Server
	reads   map[string]*atomic.Int64
	blob    []byte
	subbed  chan string
	watched atomic.Int64 // resources subscribed to and not yet unsubscribed
	large   int          // bytes of test://static/large
	getArgs chan map[string]string
}

func newContentServer() *contentServer {
	cs := &contentServer{reads: map[string]*atomic.Int64{}, subbed: make(chan string, 4), large: 4000,
		getArgs: make(chan map[string]string, 4)}
	for i := range 256 {
		cs.blob = append(cs.blob, byte(i))
	}
	cs.Server = mcp.NewServer(&mcp.Implementation{Name: "content", Version: "1"}, &mcp.ServerOptions{
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			var values []string
			for _, v := range []string{"alice", "albert", "bob", "line\nbreak"} {
				if strings.HasPrefix(v, req.Params.Argument.Value) {
					values = append(values, v)
				}
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}, nil
		},
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			cs.watched.Add(1)
			select {
			case cs.subbed <- req.Params.URI:
			default:
			}
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error {
			cs.watched.Add(-1)
			return nil
		},
	})
	mcp.AddTool(cs.Server, &mcp.Tool{Name: "noop"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: text("ok")}, nil, nil
	})
	resource := func(uri, mime string, contents func(uri string) *mcp.ResourceContents) {
		cs.reads[uri] = &atomic.Int64{}
		cs.AddResource(&mcp.Resource{URI: uri, Name: uri[strings.LastIndex(uri, "/")+1:], MIMEType: mime},
			func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				cs.reads[uri].Add(1)
				c := contents(req.Params.URI)
				if c == nil {
					return nil, mcp.ResourceNotFoundError(req.Params.URI)
				}
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
			})
	}
	resource("test://static/text", "text/plain", func(uri string) *mcp.ResourceContents {
		return &mcp.ResourceContents{URI: uri, MIMEType: "text/plain", Text: "hello resource"}
	})
	resource("test://static/blob", "image/png", func(uri string) *mcp.ResourceContents {
		return &mcp.ResourceContents{URI: uri, MIMEType: "image/png", Blob: cs.blob}
	})
	resource("test://static/missing", "text/plain", func(string) *mcp.ResourceContents { return nil })
	resource("test://static/large", "text/plain", func(uri string) *mcp.ResourceContents {
		return &mcp.ResourceContents{URI: uri, MIMEType: "text/plain", Text: strings.Repeat("x", cs.large)}
	})
	resource("secret://hidden", "text/plain", func(uri string) *mcp.ResourceContents {
		return &mcp.ResourceContents{URI: uri, Text: "the secret"}
	})
	cs.reads["test://items/{id}"] = &atomic.Int64{}
	cs.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://items/{id}", Name: "item"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			cs.reads["test://items/{id}"].Add(1)
			id := strings.TrimPrefix(req.Params.URI, "test://items/")
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "item " + id}}}, nil
		})
	cs.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greets someone.", Arguments: []*mcp.PromptArgument{
		{Name: "name", Required: true}, {Name: "style"}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			cs.getArgs <- req.Params.Arguments
			return &mcp.GetPromptResult{Description: "a greeting", Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "Say hello to " + req.Params.Arguments["name"]}},
				{Role: "user", Content: &mcp.ImageContent{MIMEType: "image/png", Data: cs.blob}},
				{Role: "assistant", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://static/text", MIMEType: "text/plain", Text: "embedded"}}},
			}}, nil
		})
	cs.AddPrompt(&mcp.Prompt{Name: "secret_prompt"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "secret"}}}}, nil
	})
	return cs
}

// openContentHost opens a host over cs, speaking version, with cfg's
// limits and policy changed by edit.
func openContentHost(t *testing.T, cs *contentServer, version string, edit func(*config.Config), opts *airlock.Options) *airlock.Host {
	t.Helper()
	dir := t.TempDir()
	cfg := &config.Config{Dir: dir, Servers: []config.Server{{
		ID: "content", Command: "in-process", AllowedTools: []string{"*"}, ProtocolVersions: []string{version},
		AllowedResources: []string{"test://static/*", "test://items/*"}, AllowedPrompts: []string{"greet"},
		RequestTimeout: 10 * time.Second, ConnectTimeout: 10 * time.Second, ProbeTimeout: time.Second,
	}}}
	if edit != nil {
		edit(cfg)
	}
	if opts == nil {
		opts = &airlock.Options{}
	}
	opts.StateDir = dir
	opts.Dial = func(config.Server) mcp.Transport { return inMemory(t, cs.Server) }
	return openWith(t, cfg, opts)
}

func TestResourcesAndPromptsAreListedAsAllowed(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		h := openContentHost(t, newContentServer(), version, nil, nil)
		snap := h.Snapshot()
		var uris []string
		for _, r := range snap.Resources() {
			uris = append(uris, r.URI)
		}
		if got, want := strings.Join(uris, " "), "test://static/blob test://static/large test://static/missing test://static/text"; got != want {
			t.Errorf("resources = %s, want %s (secret://hidden is not allowed)", got, want)
		}
		if ts := snap.ResourceTemplates(); len(ts) != 1 || ts[0].URITemplate != "test://items/{id}" || ts[0].Server != "content" {
			t.Errorf("templates = %+v", ts)
		}
		ps := snap.Prompts()
		if len(ps) != 1 || ps[0].Name != "content__greet" || ps[0].RemoteName != "greet" || len(ps[0].Arguments) != 2 || !ps[0].Arguments[0].Required {
			t.Fatalf("prompts = %+v, want content__greet alone (secret_prompt is not allowed)", ps)
		}
	})
}

func TestReadResource(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		cs := newContentServer()
		h := openContentHost(t, cs, version, func(c *config.Config) { c.Limits.MaxResourceBytes = 2048 }, nil)
		snap := h.Snapshot()
		ctx := context.Background()

		r := h.ReadResource(ctx, snap, airlock.Read{URI: "test://static/text"})
		if r.Status != airlock.OK || len(r.Contents) != 1 || r.Contents[0].Text != "hello resource" || r.Contents[0].MIMEType != "text/plain" {
			t.Fatalf("text read = %s %+v %v", r.Status, r.Contents, r.Err)
		}

		r = h.ReadResource(ctx, snap, airlock.Read{URI: "test://static/blob"})
		if r.Status != airlock.OK || len(r.Contents) != 1 || r.Contents[0].Artifact == nil {
			t.Fatalf("blob read = %s %+v %v", r.Status, r.Contents, r.Err)
		}
		a := r.Contents[0].Artifact
		if a.MediaType != "image/png" || a.Size != 256 || r.Contents[0].Text != "" {
			t.Errorf("blob artifact = %+v", a)
		}
		if data, err := os.ReadFile(a.Path); err != nil || !bytes.Equal(data, cs.blob) {
			t.Errorf("the artifact holds %d bytes (%v), want the blob's 256", len(data), err)
		}
		if !strings.Contains(r.Content, a.ID) || strings.Contains(r.Content, "AAEC") {
			t.Errorf("the model's text = %q: want a reference to %s and no base64", r.Content, a.ID)
		}

		r = h.ReadResource(ctx, snap, airlock.Read{URI: "test://items/42"})
		if r.Status != airlock.OK || r.Contents[0].Text != "item 42" {
			t.Errorf("template read = %s %+v %v", r.Status, r.Contents, r.Err)
		}

		r = h.ReadResource(ctx, snap, airlock.Read{URI: "secret://hidden"})
		if r.Status != airlock.Denied || !strings.Contains(r.Err.Msg, "allowed_resources") {
			t.Errorf("secret read = %s %v, want denied naming allowed_resources", r.Status, r.Err)
		}
		r = h.ReadResource(ctx, snap, airlock.Read{URI: "secret://hidden", Server: "content"})
		if r.Status != airlock.Denied {
			t.Errorf("secret read naming the server = %s %v, want denied", r.Status, r.Err)
		}
		if n := cs.reads["secret://hidden"].Load(); n != 0 {
			t.Errorf("the server was sent %d reads of a resource that is not allowed", n)
		}

		r = h.ReadResource(ctx, snap, airlock.Read{URI: "test://static/missing"})
		if r.Status != airlock.ResourceNotFound || !r.Status.ModelVisible() {
			t.Errorf("missing read = %s %v, want resource_not_found", r.Status, r.Err)
		}

		r = h.ReadResource(ctx, snap, airlock.Read{URI: "test://static/large"})
		if r.Status != airlock.ContractError || !strings.Contains(r.Err.Msg, "max_resource_bytes") || len(r.Contents) != 0 {
			t.Errorf("large read = %s %v, want contract_error naming limits.max_resource_bytes", r.Status, r.Err)
		}

		for _, bad := range []string{"", "no-scheme", "test://static/a b", "test://static/\x1b[31m"} {
			r = h.ReadResource(ctx, snap, airlock.Read{URI: bad})
			if r.Status != airlock.InvalidArguments {
				t.Errorf("read of %q = %s %v, want invalid_arguments", bad, r.Status, r.Err)
			}
		}
		r = h.ReadResource(ctx, snap, airlock.Read{URI: "test://static/text", Server: "nosuch"})
		if r.Status != airlock.UnknownTool {
			t.Errorf("read from an unknown server = %s %v", r.Status, r.Err)
		}
	})
}

func TestGetPrompt(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		cs := newContentServer()
		h := openContentHost(t, cs, version, nil, nil)
		snap := h.Snapshot()
		ctx := context.Background()

		r := h.GetPrompt(ctx, snap, airlock.PromptGet{Name: "content__greet", Arguments: []byte(`{"name":"Ada"}`)})
		if r.Status != airlock.OK || r.Description != "a greeting" || len(r.Messages) != 3 {
			t.Fatalf("get = %s %q %+v %v", r.Status, r.Description, r.Messages, r.Err)
		}
		if got := <-cs.getArgs; len(got) != 1 || got["name"] != "Ada" {
			t.Errorf("the server got arguments %v", got)
		}
		if m := r.Messages[0]; m.Role != "user" || m.Content != "Say hello to Ada" {
			t.Errorf("message 0 = %+v", m)
		}
		if m := r.Messages[1]; !strings.Contains(m.Content, "image artifact") || len(r.Artifacts) != 2 {
			t.Errorf("message 1 = %+v, artifacts %+v: want the image and the embedded resource in the artifact store", m, r.Artifacts)
		}
		if m := r.Messages[2]; m.Role != "assistant" || !strings.Contains(m.Content, "resource artifact") {
			t.Errorf("message 2 = %+v", m)
		}

		for args, want := range map[string]string{
			`{}`:                          `argument "name" is required`,
			`{"name":"Ada","extra":"x"}`:  `takes no argument "extra"`,
			`{"name":42}`:                 `must be a string`,
			`{"name":"Ada","name":"Eve"}`: `duplicate`,
			`["name"]`:                    `object`,
			`{"name":"Ada","style":"` + strings.Repeat("x", 70000) + `"}`: `longer than`,
		} {
			r := h.GetPrompt(ctx, snap, airlock.PromptGet{Name: "content__greet", Arguments: []byte(args)})
			if r.Status != airlock.InvalidArguments || !strings.Contains(r.Err.Msg, want) {
				t.Errorf("get with %.40s = %s %v, want invalid_arguments with %q", args, r.Status, r.Err, want)
			}
		}
		select {
		case got := <-cs.getArgs:
			t.Errorf("a get with bad arguments reached the server: %v", got)
		default:
		}
		if r := h.GetPrompt(ctx, snap, airlock.PromptGet{Name: "content__secret_prompt"}); r.Status != airlock.UnknownTool {
			t.Errorf("a prompt not allowed = %s %v, want unknown_tool", r.Status, r.Err)
		}
	})
}

func TestComplete(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		h := openContentHost(t, newContentServer(), version, nil, nil)
		snap := h.Snapshot()
		ctx := context.Background()
		c, err := h.Complete(ctx, snap, airlock.CompleteRequest{Prompt: "content__greet", Argument: "name", Value: "al"})
		if err != nil || strings.Join(c.Values, ",") != "alice,albert" {
			t.Fatalf("complete = %+v %v", c, err)
		}
		c, err = h.Complete(ctx, snap, airlock.CompleteRequest{Prompt: "content__greet", Argument: "name", Value: ""})
		if err != nil || strings.Join(c.Values, ",") != "alice,albert,bob" {
			t.Errorf("complete = %+v %v: want the value with a line break left out", c, err)
		}
		c, err = h.Complete(ctx, snap, airlock.CompleteRequest{Template: "test://items/{id}", Argument: "id", Value: "b"})
		if err != nil || strings.Join(c.Values, ",") != "bob" {
			t.Errorf("template complete = %+v %v", c, err)
		}
		for _, bad := range []airlock.CompleteRequest{
			{Prompt: "content__greet", Argument: "nosuch"},
			{Template: "test://items/{id}", Argument: "nosuch"},
			{Argument: "name"},
			{Prompt: "content__secret_prompt", Argument: "name"},
		} {
			if _, err := h.Complete(ctx, snap, bad); err == nil {
				t.Errorf("complete %+v: no error", bad)
			}
		}
	})
}

func TestSubscribe(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		cs := newContentServer()
		updates := make(chan airlock.ResourceUpdate, 4)
		h := openContentHost(t, cs, version, nil, &airlock.Options{ResourceUpdated: func(u airlock.ResourceUpdate) { updates <- u }})
		snap := h.Snapshot()
		ctx := context.Background()
		if err := h.Subscribe(ctx, snap, airlock.Read{URI: "test://static/text"}); err != nil {
			t.Fatal(err)
		}
		if err := h.Subscribe(ctx, snap, airlock.Read{URI: "secret://hidden"}); err == nil || err.Kind != airlock.Denied {
			t.Errorf("subscribing to a resource not allowed: %v, want denied", err)
		}
		if version < "2026-07-28" {
			select {
			case uri := <-cs.subbed:
				if uri != "test://static/text" {
					t.Errorf("the server was asked to watch %s", uri)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the server was never sent resources/subscribe")
			}
		}
		deadline := time.After(10 * time.Second)
		for {
			cs.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://static/text"})
			select {
			case u := <-updates:
				if u.Server != "content" || u.URI != "test://static/text" {
					t.Fatalf("update = %+v", u)
				}
				if err := h.Unsubscribe(ctx, snap, airlock.Read{URI: "test://static/text"}); err != nil {
					t.Fatal(err)
				}
				return
			case <-time.After(100 * time.Millisecond):
			case <-deadline:
				t.Fatal("no update reached Options.ResourceUpdated")
			}
		}
	})
}

// TestUnsubscribeAtOnce: an Unsubscribe right after its Subscribe leaves
// nothing watched upstream, though a 2026-07-28 subscription's stream is
// opened in the background.
func TestUnsubscribeAtOnce(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		cs := newContentServer()
		h := openContentHost(t, cs, version, nil, nil)
		snap := h.Snapshot()
		ctx := context.Background()
		rd := airlock.Read{URI: "test://static/text"}
		for range 20 {
			if err := h.Subscribe(ctx, snap, rd); err != nil {
				t.Fatal(err)
			}
			if err := h.Unsubscribe(ctx, snap, rd); err != nil {
				t.Fatal(err)
			}
		}
		// A server may hear of the last cancellation only with the next
		// request on the connection.
		if r := h.ReadResource(ctx, snap, rd); r.Status != airlock.OK {
			t.Fatal(r.Err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for cs.watched.Load() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the server still watches %d subscriptions after every one was undone", cs.watched.Load())
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// TestResourcePolicy: policy.rules decide reads and gets like calls; ask
// binds an approval to exactly the URI (or prompt and arguments) read.
func TestResourcePolicy(t *testing.T) {
	cs := newContentServer()
	h := openContentHost(t, cs, "2025-11-25", func(c *config.Config) {
		c.Policy.Rules = []config.Rule{
			{Server: "content", Resource: "test://static/text", Decision: "ask", Source: "test:1"},
			{Server: "content", Resource: "test://items/**", Decision: "deny", Source: "test:2"},
			{Server: "content", Prompt: "greet", Decision: "ask", Source: "test:3"},
			{Server: "content", Tool: "*", ToolGiven: true, Decision: "deny", Source: "test:4"},
		}
	}, nil)
	snap := h.Snapshot()
	ctx := context.Background()

	r := h.ReadResource(ctx, snap, airlock.Read{URI: "test://static/text"})
	if r.Status != airlock.ApprovalRequired || r.ApprovalID == "" || cs.reads["test://static/text"].Load() != 0 {
		t.Fatalf("read under ask = %s %v (%d reads sent), want approval_required and nothing sent", r.Status, r.Err, cs.reads["test://static/text"].Load())
	}
	st, err := airlock.OpenStore(h.StateDir())
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.Approvals().Get(ctx, r.ApprovalID)
	st.Close()
	if err != nil || !strings.Contains(a.Summary, `read resource "test://static/text" from server "content"`) {
		t.Fatalf("approval = %+v %v", a, err)
	}
	if err := h.Decide(ctx, r.ApprovalID, true, "alice", ""); err != nil {
		t.Fatal(err)
	}
	// The grant is for that URI alone, and for one read.
	if r := h.ReadResource(ctx, snap, airlock.Read{URI: "test://static/blob"}); r.Status != airlock.OK {
		t.Errorf("a read no rule asks about = %s %v", r.Status, r.Err)
	}
	if r := h.ReadResource(ctx, snap, airlock.Read{URI: "test://static/text"}); r.Status != airlock.OK || r.Contents[0].Text != "hello resource" {
		t.Fatalf("read after the grant = %s %v", r.Status, r.Err)
	}
	if r := h.ReadResource(ctx, snap, airlock.Read{URI: "test://static/text"}); r.Status != airlock.ApprovalRequired {
		t.Errorf("a second read on one grant = %s, want approval_required", r.Status)
	}

	r = h.ReadResource(ctx, snap, airlock.Read{URI: "test://items/7"})
	if r.Status != airlock.Denied || !strings.Contains(r.Err.Msg, "policy.rules[1]") || cs.reads["test://items/{id}"].Load() != 0 {
		t.Errorf("read under deny = %s %v", r.Status, r.Err)
	}
	if _, err := h.Complete(ctx, snap, airlock.CompleteRequest{Template: "test://items/{id}", Argument: "id"}); err == nil || err.Kind != airlock.Denied {
		t.Errorf("completion for a denied template: %v, want denied", err)
	}

	r = h.GetPrompt(ctx, snap, airlock.PromptGet{Name: "content__greet", Arguments: []byte(`{"name":"Ada"}`)})
	if r.Status != airlock.ApprovalRequired {
		t.Fatalf("get under ask = %s %v", r.Status, r.Err)
	}
	h.Decide(ctx, r.ApprovalID, true, "alice", "")
	if r := h.GetPrompt(ctx, snap, airlock.PromptGet{Name: "content__greet", Arguments: []byte(`{"name":"Eve"}`)}); r.Status != airlock.ApprovalRequired {
		t.Errorf("a get with other arguments on the grant = %s, want approval_required", r.Status)
	}
	if r := h.GetPrompt(ctx, snap, airlock.PromptGet{Name: "content__greet", Arguments: []byte(`{"name":"Ada"}`)}); r.Status != airlock.OK {
		t.Errorf("the granted get = %s %v", r.Status, r.Err)
	}
	// The tool rule does not reach reads, nor the resource rules calls.
	if r := h.Call(ctx, snap, airlock.Call{Name: "content__noop"}); r.Status != airlock.Denied {
		t.Errorf("call = %s, want denied by the tool rule", r.Status)
	}
	if !auditHas(t, h, "decision", "test://static/text") {
		t.Error("no decision event names the URI read")
	}
}

// TestContentListChanged: a server's word that its resources or prompts
// changed reaches the next snapshot, at the safe point, not before.
func TestContentListChanged(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		cs := newContentServer()
		changed := make(chan struct{}, 8)
		h := openContentHost(t, cs, version, nil, &airlock.Options{CatalogChanged: func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		}})
		ctx := context.Background()
		first := h.BeginTurn(ctx)
		cs.AddResource(&mcp.Resource{URI: "test://static/new", Name: "new"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "new"}}}, nil
		})
		cs.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greets anyone."}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
		})
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatal("the list change never reached the host")
		}
		if len(first.Resources()) != 4 {
			t.Errorf("the turn's snapshot changed under it: %d resources", len(first.Resources()))
		}
		var next *airlock.Snapshot
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if next = h.BeginTurn(ctx); len(next.Resources()) == 5 && next.Prompts()[0].Description == "Greets anyone." {
				break
			}
		}
		if len(next.Resources()) != 5 || next.ID() == first.ID() || next.Generation() <= first.Generation() {
			t.Fatalf("after the change: %d resources, snapshot %s gen %d (was %s gen %d)", len(next.Resources()), next.ID(), next.Generation(), first.ID(), first.Generation())
		}
		if r := h.ReadResource(ctx, next, airlock.Read{URI: "test://static/new"}); r.Status != airlock.OK {
			t.Errorf("read of the new resource = %s %v", r.Status, r.Err)
		}
	})
}

// TestServerWithoutTools: a server of resources and prompts only is
// without tools, not broken.
func TestServerWithoutTools(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	s.AddResource(&mcp.Resource{URI: "docs://a", Name: "a"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "A"}}}, nil
	})
	for _, version := range bothVersions {
		dir := t.TempDir()
		cfg := &config.Config{Dir: dir, Servers: []config.Server{{ID: "docs", Command: "in-process", AllowedTools: []string{"*"},
			AllowedResources: []string{"docs://*"}, ProtocolVersions: []string{version},
			RequestTimeout: 10 * time.Second, ConnectTimeout: 10 * time.Second, ProbeTimeout: time.Second}}}
		h, err := airlock.Open(context.Background(), cfg, &airlock.Options{StateDir: dir, Dial: func(config.Server) mcp.Transport { return inMemory(t, s) }})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		if st := h.Servers()[0]; st.Status != airlock.StatusReady {
			t.Fatalf("%s: server = %+v %v", version, st, st.Err)
		}
		if r := h.ReadResource(context.Background(), h.Snapshot(), airlock.Read{URI: "docs://a"}); r.Status != airlock.OK || len(h.Snapshot().Tools()) != 0 {
			t.Errorf("%s: read = %s %v", version, r.Status, r.Err)
		}
	}
}
