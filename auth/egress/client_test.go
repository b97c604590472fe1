package egress_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/auth/egress"
)

func devClient(t *testing.T, opts *egress.ClientOptions) *http.Client {
	t.Helper()
	c, err := egress.NewClient(egress.New(&egress.Options{AllowLoopback: true}), opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRedirectNotFollowed: a 307 must never re-send a body or a bearer token
// to another host.
func TestRedirectNotFollowed(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
	}))
	defer other.Close()
	for _, status := range []int{301, 302, 303, 307, 308} {
		first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/steal", status)
		}))
		req, _ := http.NewRequest(http.MethodPost, first.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","method":"tools/call"}`))
		req.Header.Set("Authorization", "Bearer canary-token")
		resp, err := devClient(t, nil).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		if !errors.Is(err, egress.ErrRedirect) {
			t.Errorf("status %d: Do = %v, want ErrRedirect", status, err)
		}
		first.Close()
	}
	if got := elsewhere.Load(); got != 0 {
		t.Errorf("requests that reached the redirect target = %d, want 0", got)
	}
}

func TestLoopbackRefusedOutsideDevelopment(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	c, err := egress.NewClient(egress.New(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(srv.URL)
	if err == nil {
		resp.Body.Close()
	}
	if !errors.Is(err, egress.ErrRefused) {
		t.Errorf("Get = %v, want refused", err)
	}
	if hits.Load() != 0 {
		t.Error("the request reached the server")
	}
}

// TestPostNotReplayed: when a reused connection breaks after a POST was
// written, net/http would send it again if it carried an Idempotency-Key;
// the client removes that header, so the server sees the POST once.
func TestPostNotReplayed(t *testing.T) {
	var mu sync.Mutex
	var seen []string // Idempotency-Key values received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		seen = append(seen, r.Header.Get("Idempotency-Key"))
		n := len(seen)
		mu.Unlock()
		if n == 1 {
			return // keep the connection for reuse
		}
		// Break the connection after reading the request.
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	c := devClient(t, nil)
	post := func() error {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("create_issue"))
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	if err := post(); err != nil {
		t.Fatal(err)
	}
	if err := post(); err == nil {
		t.Fatal("second POST succeeded although the server broke the connection")
	}
	mu.Lock()
	defer mu.Unlock()
	if got, want := len(seen), 2; got != want {
		t.Errorf("POSTs received = %d, want %d (the broken one was replayed)", got, want)
	}
	for _, k := range seen {
		if k != "" {
			t.Errorf("server saw Idempotency-Key %q", k)
		}
	}
}

func TestResponseHeaderTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c := devClient(t, &egress.ClientOptions{ResponseHeaderTimeout: 50 * time.Millisecond})
	resp, err := c.Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatal("Get succeeded although the server never answered")
	}
	if !strings.Contains(err.Error(), "timeout awaiting response headers") {
		t.Errorf("Get = %v, want a response header timeout", err)
	}
}

// TestProxy: behind a proxy the guard checks the proxy's address, names are
// left to the proxy, and IP-literal destinations are still checked.
func TestProxy(t *testing.T) {
	var mu sync.Mutex
	var proxied []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		proxied = append(proxied, r.Method+" "+r.RequestURI)
		mu.Unlock()
		io.WriteString(w, "via proxy")
	}))
	defer proxy.Close()
	res := newResolver(nil)

	// The proxy is on loopback: refused unless loopback is allowed.
	strict, err := egress.NewClient(egress.New(&egress.Options{Resolver: res}), &egress.ClientOptions{Proxy: proxy.URL})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := strict.Get("http://issues.example.test/x"); err == nil {
		resp.Body.Close()
		t.Error("request through a loopback proxy succeeded without AllowLoopback")
	} else if !errors.Is(err, egress.ErrRefused) {
		t.Errorf("Get = %v, want refused", err)
	}

	c, err := egress.NewClient(egress.New(&egress.Options{Resolver: res, AllowLoopback: true}), &egress.ClientOptions{Proxy: proxy.URL})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get("http://issues.example.test/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "via proxy" {
		t.Errorf("body = %q", body)
	}
	if n := res.count("issues.example.test"); n != 0 {
		t.Errorf("the host resolved the destination %d times; the proxy should", n)
	}
	// An IP-literal destination in a refused range never reaches the proxy.
	if resp, err := c.Get("http://10.0.0.1/x"); err == nil {
		resp.Body.Close()
		t.Error("request to 10.0.0.1 through the proxy succeeded")
	} else if !errors.Is(err, egress.ErrRefused) {
		t.Errorf("Get 10.0.0.1 = %v, want refused", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(proxied) != 1 || proxied[0] != "GET http://issues.example.test/x" {
		t.Errorf("proxy saw %q, want one GET of the absolute URL", proxied)
	}

	if _, err := egress.NewClient(egress.New(nil), &egress.ClientOptions{Proxy: "socks5://127.0.0.1:1080"}); err == nil {
		t.Error("a socks5 proxy was accepted")
	}
}

// TestConnectTimeout: the connect timeout bounds a dial even when the
// caller's context has none. A listener whose backlog is never accepted on
// a loopback address keeps completing handshakes, so the slow part is
// simulated by a resolver that blocks until its context ends.
func TestConnectTimeout(t *testing.T) {
	g := egress.New(&egress.Options{Resolver: blockingResolver{}, AllowLoopback: true})
	c, err := egress.NewClient(g, &egress.ClientOptions{ConnectTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://slow.test:8080/", nil)
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("request succeeded")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Do = %v, want the connect deadline", err)
	}
	if ctx.Err() != nil {
		t.Error("the caller's context ended first")
	}
}

type blockingResolver struct{}

func (blockingResolver) LookupNetIP(ctx context.Context, _, _ string) ([]netip.Addr, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
