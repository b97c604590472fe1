package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/gateway"
	"github.com/airlockhq/airlock/internal/testenv"
)

// plainNotes serves, on loopback, an MCP server that keeps one resource
// (notes://note) clients may subscribe to; touch tells its subscribers
// the note changed, and unsubscribed counts the unsubscriptions it took.
func plainNotes(t *testing.T) (url string, touch func(), unsubscribed *atomic.Int64) {
	t.Helper()
	unsubscribed = &atomic.Int64{}
	server := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error {
			unsubscribed.Add(1)
			return nil
		},
	})
	server.AddResource(&mcp.Resource{URI: "notes://note", Name: "note", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "notes://note", MIMEType: "text/plain", Text: "note"}}}, nil
		})
	ln, base := testenv.Listen(t)
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return base + "/mcp", func() {
		server.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: "notes://note"})
	}, unsubscribed
}

// route sends a client's requests to one of two gateways: its
// resources/subscribe to the second, everything else (the initialize, its
// GET stream, its unsubscribe) to the first.
type route struct{ first, second string }

func (r route) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	target := r.first
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"resources/subscribe"`)) {
			target = r.second
		}
	}
	u, err := req.URL.Parse(target)
	if err != nil {
		return nil, err
	}
	req.URL, req.Host = u, u.Host
	return http.DefaultTransport.RoundTrip(req)
}

// TestSubscriptionAcrossReplicas: a 2025-11-25 session subscribes through
// one replica while its GET stream is held by another. The word that the
// resource changed, which reaches the replica that subscribed, goes out on
// the other's stream; the unsubscription, sent to the other replica,
// reaches the one that holds the subscription, which ends it upstream.
func TestSubscriptionAcrossReplicas(t *testing.T) {
	db := testenv.PostgresDatabase(t)
	notes, touch, unsubscribed := plainNotes(t)
	yaml := fmt.Sprintf(`development: true
servers:
  - id: notes
    transport: http
    url: %s
    allowed_hosts: [127.0.0.1]
    allowed_tools: []
    allowed_resources: ["notes://*"]
store: {url: %q, audit_key: %q}
`, notes, db, filepath.Join(t.TempDir(), "audit.key"))
	key := make([]byte, 32)
	var replicas [2]*fixture
	for i := range replicas {
		f, dir, _ := newFixture(t)
		f.serve(t, dir, yaml, &gateway.Options{StateKey: key})
		replicas[i] = f
	}
	testenv.WaitListening(t, db, "gateway", 2)

	heard := make(chan string, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "subscriber", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { heard <- req.Params.URI },
	})
	tr := &mcp.StreamableClientTransport{Endpoint: replicas[0].url,
		HTTPClient: &http.Client{Transport: route{replicas[0].url, replicas[1].url}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: session})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "notes://note"}); err != nil {
		t.Fatalf("subscribe through the second replica: %v", err)
	}
	// Touch until the word arrives: the client's GET stream may open
	// after Subscribe returns.
	got := ""
	for deadline := time.Now().Add(30 * time.Second); got == ""; {
		if time.Now().After(deadline) {
			t.Fatalf("no update heard on the first replica's stream\nfirst:\n%s\nsecond:\n%s", replicas[0].log, replicas[1].log)
		}
		touch()
		select {
		case got = <-heard:
		case <-time.After(200 * time.Millisecond):
		}
	}
	if got != "notes://note" {
		t.Errorf("heard of %q, want notes://note", got)
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "notes://note"}); err != nil {
		t.Fatalf("unsubscribe through the first replica: %v", err)
	}
	for deadline := time.Now().Add(30 * time.Second); unsubscribed.Load() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the subscription was not ended upstream\nfirst:\n%s\nsecond:\n%s", replicas[0].log, replicas[1].log)
		}
	}
	if n := strings.Count(replicas[1].log.String(), "session taken from another replica"); n != 1 {
		t.Errorf("the second replica opened %d copies of the session, want 1", n)
	}
}
