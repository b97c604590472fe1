package oauth_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/auth/oauth"
	"github.com/airlockhq/airlock/auth/oauth/oauthtest"
	"github.com/airlockhq/airlock/auth/secrets"
	"github.com/airlockhq/airlock/internal/testenv"
)

const (
	scopeRead  = oauthtest.ScopeRead
	scopeWrite = oauthtest.ScopeWrite
)

// clock is a settable clock for token expiry.
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

// env is one test world: an authorization server, a protected MCP server
// on loopback, a secret store and the client under test.
type env struct {
	t        *testing.T
	as       *oauthtest.Server
	rs       *oauthtest.ResourceServer
	storeDir string
	store    *secrets.FileStore
	clock    *clock
	client   *oauth.Client
	srv      *oauth.Server
	who      oauth.Owner

	opens    atomic.Int64 // authorization URLs shown
	user     atomic.Value // func(ctx, authURL) error: the person
	consents atomic.Int64
}

type envOptions struct {
	as      *oauthtest.Options
	consent func(ctx context.Context, req *oauth.StepUp) (bool, error)
	// asURL, if set, replaces the authorization server named in the
	// resource metadata (for lying metadata).
	asURL func(as *oauthtest.Server) string
	// metadata, if set, edits a copy of the authorization server's
	// discovery document that the resource metadata names instead (see
	// metadataProxy).
	metadata func(self string, doc map[string]any)
	resolver *fakeResolver
	// resource configures the protected MCP server (its Issuer is set
	// here).
	resource *oauthtest.ResourceOptions
}

// freeRedirect returns a loopback redirect URI on a port that was free.
func freeRedirect(t *testing.T) string { return testenv.RedirectURI(t) }

func newEnv(t *testing.T, o *envOptions) *env {
	t.Helper()
	if o == nil {
		o = &envOptions{}
	}
	redirect := freeRedirect(t)
	asOpts := &oauthtest.Options{}
	if o.as != nil {
		asOpts = o.as
	}
	asOpts.RedirectURIs = []string{redirect}
	asOpts.Tenant = "acme"
	e := &env{t: t, clock: &clock{}, who: oauth.Owner{Tenant: "acme", User: "alice"}}
	e.as = oauthtest.New(t, asOpts)
	issuer := e.as.URL
	if o.asURL != nil {
		issuer = o.asURL(e.as)
	}
	if o.metadata != nil {
		issuer = metadataProxy(t, e.as, o.metadata)
	}
	var rsOpts oauthtest.ResourceOptions
	if o.resource != nil {
		rsOpts = *o.resource
	}
	rsOpts.Issuer = issuer
	e.rs = oauthtest.NewResourceServer(t, e.as, &rsOpts)

	tmp := t.TempDir()
	e.storeDir = filepath.Join(tmp, "store")
	store, err := secrets.OpenFileStore(e.storeDir, &secrets.FileOptions{KeyFile: filepath.Join(tmp, "secret.key"), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	e.store = store
	e.user.Store(e.playUser(oauthtest.User, oauthtest.Password, nil))
	opts := &oauth.Options{
		Store:       store,
		Development: true,
		Now:         e.clock.now,
		Open: func(ctx context.Context, authURL string) error {
			e.opens.Add(1)
			return e.user.Load().(func(context.Context, string) error)(ctx, authURL)
		},
		LoginTimeout: time.Minute,
	}
	if o.resolver != nil {
		opts.Resolver = o.resolver
	}
	if o.consent != nil {
		opts.Consent = func(ctx context.Context, req *oauth.StepUp) (bool, error) {
			e.consents.Add(1)
			return o.consent(ctx, req)
		}
	}
	e.client, err = oauth.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = &oauth.Server{
		ID:          "issues",
		URL:         e.rs.URL + "/mcp",
		Resource:    e.rs.URL,
		Scopes:      []string{scopeRead},
		RedirectURI: redirect,
		ClientID:    "airlock",
	}
	return e
}

// playUser returns the person: log in at the authorization server, then
// let the browser follow the redirect to Airlock's callback. tamper, if
// set, edits the callback URL first.
func (e *env) playUser(user, password string, tamper func(string) string) func(context.Context, string) error {
	return func(ctx context.Context, authURL string) error {
		cb, err := e.as.Authorize(ctx, authURL, user, password)
		if err != nil {
			return err
		}
		if tamper != nil {
			cb = tamper(cb)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cb, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil
	}
}

func (e *env) login() *oauth.Status {
	e.t.Helper()
	st, err := e.client.Login(context.Background(), e.srv, e.who)
	if err != nil {
		e.t.Fatalf("Login: %v", err)
	}
	return st
}

// session connects an MCP client through the OAuth transport.
func (e *env) session(who oauth.Owner) (*mcp.ClientSession, error) {
	tr, err := e.client.Transport(e.srv, who, nil)
	if err != nil {
		return nil, err
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "oauth-test", Version: "1"}, nil)
	return c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:   e.srv.URL,
		HTTPClient: &http.Client{Transport: tr, Timeout: 30 * time.Second},
	}, nil)
}

// openSession connects an MCP client for e.who through the OAuth
// transport, failing the test if it cannot; the session is closed when the
// test ends.
func (e *env) openSession() *mcp.ClientSession {
	e.t.Helper()
	cs, err := e.session(e.who)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

// call runs a tool and returns its text or the error.
func call(cs *mcp.ClientSession, tool string) (string, error) {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), nil
}

// scanForSecret fails if any file under dir contains secret in the clear.
func scanForSecret(t *testing.T, dir, secret string) {
	t.Helper()
	if len(secret) < 16 {
		t.Fatalf("secret %q is too short to scan for", secret)
	}
	testenv.NoFileHolds(t, dir, secret, secret[:16])
}

// fakeResolver answers names from a table.
type fakeResolver struct{ answers map[string][]netip.Addr }

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r.answers[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func decodeJSON(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

func writeJSON(w io.Writer, v any) { json.NewEncoder(w).Encode(v) }
