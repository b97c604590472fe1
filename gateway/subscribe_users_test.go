package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/auth/bearer"
	"github.com/airlockhq/airlock/auth/bearer/bearertest"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/gateway"
	"github.com/airlockhq/airlock/internal/testenv"
)

// protectedNotes serves, on loopback, an MCP server that keeps one
// resource (notes://note) clients may subscribe to, behind a bearer check
// with iss's tokens for base; touch tells its subscribers the note
// changed.
func protectedNotes(t *testing.T, iss *bearertest.Issuer) (base string, touch func()) {
	t.Helper()
	ln, base := testenv.Listen(t)
	v, err := bearer.NewVerifier(iss.URL, base, &bearer.Options{TenantClaim: "tenant"})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	server.AddResource(&mcp.Resource{URI: "notes://note", Name: "note", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "notes://note", MIMEType: "text/plain", Text: "note"}}}, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "ping", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
		})
	mux := http.NewServeMux()
	md := auth.ProtectedResourceMetadataHandler(v.Metadata("notes", []string{"notes"}))
	for _, p := range bearer.MetadataPaths(base, "/mcp") {
		mux.Handle(p, md)
	}
	mux.Handle("/mcp", v.Middleware(nil)(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)))
	hs := &http.Server{Handler: mux}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return base, func() {
		server.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: "notes://note"})
	}
}

// TestSubscriptionsOfTwoUsers: two people subscribe through one gateway
// to a resource of a server that keeps credentials per user. Each one's
// subscription is made on their own connection to it, and the word that
// it changed reaches each of them once, for their own subscription, never
// for the other's; one unsubscribing leaves the other's subscription.
func TestSubscriptionsOfTwoUsers(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) { testSubscriptionsOfTwoUsers(t, era) })
	}
}

func testSubscriptionsOfTwoUsers(t *testing.T, era string) {
	t.Setenv("AIRLOCK_SECRET_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	upAS := bearertest.New(t, nil)
	base, touch := protectedNotes(t, upAS)
	idp := bearertest.New(t, nil)
	redirect := testenv.RedirectURI(t)
	upAS.AllowClient("airlock", redirect)
	yaml := fmt.Sprintf(`development: true
tenancy: {tenant: ops, user: gateway}
servers:
  - id: notes
    transport: http
    url: %s/mcp
    allowed_hosts: [127.0.0.1]
    resource: %s
    scopes: [notes]
    oauth: {client_id: airlock, redirect_uri: %q}
    allowed_tools: [ping]
    allowed_resources: ["notes://*"]
serve:
  auth: {issuer: %q, resource: %s, scopes: [%s], tenant_claim: tenant}
`, base, base, redirect, idp.URL, gatewayResource, scopeTools)
	cfg, err := config.Parse([]byte(yaml), "airlock.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	browser := logInAll(t, cfg, upAS, "notes")
	v, err := gateway.NewVerifier(cfg.Serve.Auth, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{log: &testenv.Buffer{}}
	f.open(t, cfg, &gateway.Options{Serve: cfg.Serve, Verifier: v}, &airlock.Options{Auth: browser})

	var mu sync.Mutex
	heard := map[string]int{}
	listen := func(who string) *mcp.ClientOptions {
		return &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			mu.Lock()
			defer mu.Unlock()
			heard[who]++
		}}
	}
	alice := f.connectAs(t, era, token(t, idp, "acme", "alice"), listen("alice"))
	bob := f.connectAs(t, era, token(t, idp, "globex", "bob"), listen("bob"))
	for _, cs := range []*mcp.ClientSession{alice, bob} {
		if err := cs.Subscribe(ctxT(t), &mcp.SubscribeParams{URI: "notes://note"}); err != nil {
			t.Fatal(err)
		}
	}
	// Touch until both heard of it (a 2026-07-28 subscription is a stream
	// that may open after Subscribe returns), then once more.
	count := func() (a, b int) {
		mu.Lock()
		defer mu.Unlock()
		return heard["alice"], heard["bob"]
	}
	deadline := time.Now().Add(20 * time.Second)
	for a, b := count(); a == 0 || b == 0; a, b = count() {
		if time.Now().After(deadline) {
			t.Fatalf("updates heard: alice %d, bob %d; want both to hear\n%s", a, b, f.log)
		}
		touch()
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	a0, b0 := count()
	touch()
	waitFor(t, "both to hear the update", func() bool { a, b := count(); return a > a0 && b > b0 })
	time.Sleep(300 * time.Millisecond)
	if a, b := count(); a != a0+1 || b != b0+1 {
		t.Errorf("one update: alice heard %d, bob %d; want one each (an update is for its own principal's sessions)", a-a0, b-b0)
	}

	// Bob unsubscribes; alice still hears.
	if err := bob.Unsubscribe(ctxT(t), &mcp.UnsubscribeParams{URI: "notes://note"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	a0, b0 = count()
	touch()
	waitFor(t, "alice to hear the update", func() bool { a, _ := count(); return a > a0 })
	time.Sleep(300 * time.Millisecond)
	if a, b := count(); a != a0+1 || b != b0 {
		t.Errorf("after bob unsubscribed: alice heard %d, bob %d; want 1 and 0", a-a0, b-b0)
	}
}
