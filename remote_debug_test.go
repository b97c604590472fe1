package airlock_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/auth/bearer"
	"github.com/airlockhq/airlock/auth/oauth/oauthtest"
	"github.com/airlockhq/airlock/auth/secrets"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/testenv"
)

// envDebugChild names the instructions file of TestDebugOutputChild; it is
// set only in the process TestDebugOutputHasNoCredentials starts.
const envDebugChild = "AIRLOCK_TEST_DEBUG_CHILD"

// debugChild is what the child process is told.
type debugChild struct {
	StateDir    string // the host's state directory, with the login's credentials
	URL         string // the resource server's base URL (https, loopback)
	RedirectURI string
	ControlURL  string // a plain endpoint for the HTTP/2 control request
	Control     string // the control canary
	CAFile      string // the test server's certificate (ca_file)
}

// TestDebugOutputHasNoCredentials turns on Go's HTTP debug output
// (GODEBUG=http2debug=2: net/http has no other debug knob, and the SDK's
// MCPGODEBUG only restores old behaviours) in a host process that calls an
// OAuth-protected server over TLS on loopback with a token from a real
// login, and checks that the token shows up nowhere the process wrote.
//
// With http2debug on, net/http logs every header of an HTTP/2 request,
// Authorization included, in the clear. The host's transport speaks
// HTTP/1.1 only (egress.NewTransport), which has no debug output, so there
// is nothing to print. The test shows each part: the knob is on (a control
// request over HTTP/2 from the same process has its Authorization header
// printed, which also shows that the scan finds a header printed that
// way); the host's requests carried the token over TLS and HTTP/1.1 to a
// server that offers HTTP/2; and the token is in no output and no file.
func TestDebugOutputHasNoCredentials(t *testing.T) {
	redirect := freeRedirectURI(t)
	as := oauthtest.New(t, &oauthtest.Options{RedirectURIs: []string{redirect}, Tenant: "acme"})
	rs := newTLSResource(t, as)

	// The host trusts the test server's certificate through ca_file.
	certFile := filepath.Join(t.TempDir(), "ca.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rs.ts.Certificate().Raw})
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}

	// A real login, into the credential store the host opens by default
	// (STATE/credentials, keyed by AIRLOCK_SECRET_KEY).
	key := make([]byte, 32)
	rand.Read(key)
	secretKey := base64.StdEncoding.EncodeToString(key)
	stateDir := filepath.Join(t.TempDir(), "state")
	loginForChild(t, as, rs, stateDir, secretKey, redirect, certFile)
	// The login asked the server for its challenge without a token; what
	// the host sends comes after.
	beforeHost := len(rs.seen())

	control := "CONTROL-" + rand.Text()
	in := debugChild{StateDir: stateDir, URL: rs.url, RedirectURI: redirect, ControlURL: rs.url + "/control", Control: control, CAFile: certFile}
	inFile := filepath.Join(t.TempDir(), "child.json")
	b, _ := json.Marshal(in)
	if err := os.WriteFile(inFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDebugOutputChild$", "-test.count=1", "-test.v")
	cmd.Env = append(envWithout(os.Environ(), "GODEBUG", "SSL_CERT_FILE", "SSL_CERT_DIR", secrets.DefaultKeyEnv, envMode),
		"GODEBUG=http2debug=2",
		// No system root trusts the server: only ca_file does.
		"SSL_CERT_FILE="+filepath.Join(t.TempDir(), "none.pem"),
		"SSL_CERT_DIR="+t.TempDir(),
		secrets.DefaultKeyEnv+"="+secretKey,
		envDebugChild+"="+inFile,
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "--- PASS: TestDebugOutputChild") {
		t.Fatalf("the child did not run its test:\n%s", stdout.String())
	}

	// The host's requests: over TLS, HTTP/1.1 although HTTP/2 was offered,
	// each with the login's token.
	seen := rs.seen()[beforeHost:]
	var token string
	mcpRequests := 0
	for _, r := range seen {
		if r.path != "/mcp" {
			continue
		}
		mcpRequests++
		if !r.tls || r.protoMajor != 1 {
			t.Errorf("host request %s %s: TLS %v, HTTP/%d; want TLS and HTTP/1.1", r.method, r.path, r.tls, r.protoMajor)
		}
		if r.token == "" || (token != "" && r.token != token) {
			t.Errorf("host request %s %s carried token %.10q…, want the login's", r.method, r.path, r.token)
		}
		token = r.token
	}
	if mcpRequests == 0 || token == "" {
		t.Fatalf("the host sent no authorized MCP request (saw %d requests)", len(seen))
	}
	if !strings.Contains(stderr.String(), "server ready") {
		t.Errorf("the host's debug log did not reach stderr:\n%s", stderr.String())
	}

	// The knob was on: the control request went over HTTP/2, and its
	// Authorization header was printed in the clear.
	controlled := false
	for _, r := range seen {
		if r.path == "/control" && r.protoMajor == 2 && r.token == control {
			controlled = true
		}
	}
	if !controlled {
		t.Fatalf("the control request did not arrive over HTTP/2 with its token: %+v", seen)
	}
	if want := `"authorization" = "Bearer ` + control + `"`; !strings.Contains(stderr.String(), want) {
		t.Fatalf("stderr lacks %s: http2debug was not on, or does not print headers:\n%s", want, stderr.String())
	}

	// The token (and its signature alone) is nowhere.
	sig := token[strings.LastIndex(token, ".")+1:]
	for _, s := range []string{token, sig} {
		if strings.Contains(stdout.String(), s) || strings.Contains(stderr.String(), s) {
			t.Errorf("the child's output contains the access token")
		}
		noFileContains(t, stateDir, s)
	}
}

// TestDebugOutputChild is the host process of
// TestDebugOutputHasNoCredentials; run on its own it does nothing.
func TestDebugOutputChild(t *testing.T) {
	path := os.Getenv(envDebugChild)
	if path == "" {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var in debugChild
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}

	srv := remote("secure", in.URL+"/mcp")
	srv.Resource = in.URL
	srv.Scopes = []string{oauthtest.ScopeRead}
	srv.OAuth = &config.OAuth{ClientID: "airlock", RedirectURI: in.RedirectURI}
	srv.CAFile = in.CAFile
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := airlock.Open(ctx, devConfig(t, srv), &airlock.Options{
		StateDir:  in.StateDir,
		Principal: airlock.Principal{Tenant: "acme", User: "alice"},
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})),
		StopGrace: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer h.Close()
	if st := h.Servers()[0]; st.Status != airlock.StatusReady {
		t.Fatalf("server = %+v: %v", st, st.Err)
	}
	r := call(t, h, "secure__ping", `{}`)
	wantStatus(t, r, airlock.OK)
	if r.Content != "pong" {
		t.Errorf("ping = %q, want pong", r.Content)
	}
	if err := h.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}

	// The control: an HTTP/2 request with a bearer header of its own, which
	// http2debug prints.
	caPEM, err := os.ReadFile(in.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	tr := &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: roots}}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, in.ControlURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+in.Control)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("control request: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Errorf("control request went over %s, want HTTP/2", resp.Proto)
	}
}

// loginForChild logs alice in to rs for the host's partition (tenant acme, user
// alice, server "secure"), storing the tokens where a host with stateDir
// and secretKey finds them.
func loginForChild(t *testing.T, as *oauthtest.Server, rs *tlsResource, stateDir, secretKey, redirect, certFile string) {
	t.Helper()
	store, err := secrets.OpenFileStore(filepath.Join(stateDir, "credentials"), &secrets.FileOptions{
		Getenv: func(name string) string {
			if name == secrets.DefaultKeyEnv {
				return secretKey
			}
			return ""
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The login reads the server's metadata over TLS, trusting the
	// server's certificate through ca_file only.
	srv := remote("secure", rs.url+"/mcp")
	srv.Resource = rs.url
	srv.Scopes = []string{oauthtest.ScopeRead}
	srv.OAuth = &config.OAuth{ClientID: "airlock", RedirectURI: redirect}
	srv.CAFile = certFile
	creds := airlock.OpenCredentials(devConfig(t, srv), &airlock.Options{
		StateDir:  stateDir,
		Principal: airlock.Principal{Tenant: "acme", User: "alice"},
		Auth: airlock.AuthOptions{
			Store: store,
			Open: func(ctx context.Context, authURL string) error {
				// The person: log in, then let the browser follow the
				// redirect to the login's callback.
				cb, err := as.Authorize(ctx, authURL, oauthtest.User, oauthtest.Password)
				if err != nil {
					return err
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, cb, nil)
				if err != nil {
					return err
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return err
				}
				io.Copy(io.Discard, resp.Body)
				return resp.Body.Close()
			},
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := creds.Login(ctx, "secure"); err != nil {
		t.Fatalf("Login: %v", err)
	}
}

// tlsResource is an OAuth-protected MCP server over TLS on loopback that
// offers HTTP/2: RFC 9728 metadata naming the authorization server, a
// bearer check with its verifier, and one tool, "ping", answering "pong".
// It records every request's protocol and token. /control answers any
// request, recording the same.
type tlsResource struct {
	url string
	ts  *httptest.Server

	mu       sync.Mutex
	requests []seenRequest
}

type seenRequest struct {
	method, path string
	tls          bool
	protoMajor   int
	token        string // the bearer token, if any
}

func newTLSResource(t *testing.T, as *oauthtest.Server) *tlsResource {
	t.Helper()
	rs := &tlsResource{}
	mux := http.NewServeMux()
	rs.ts = httptest.NewUnstartedServer(mux)
	rs.ts.EnableHTTP2 = true
	rs.ts.StartTLS()
	t.Cleanup(rs.ts.Close)
	rs.url = rs.ts.URL

	metadataURL, err := bearer.MetadataURL(rs.url)
	if err != nil {
		t.Fatal(err)
	}
	challenge := bearer.Challenge{ResourceMetadata: metadataURL, Scopes: []string{oauthtest.ScopeRead}}
	mux.Handle("/.well-known/oauth-protected-resource", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:             rs.url,
		AuthorizationServers: []string{as.URL},
		ScopesSupported:      []string{oauthtest.ScopeRead},
	}))

	server := mcp.NewServer(&mcp.Implementation{Name: "secure", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := rs.record(r)
		if _, err := as.Verify(r.Context(), token, rs.url); err != nil {
			w.Header().Set("WWW-Authenticate", challenge.Header("invalid_token", "", nil))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	mux.Handle("/control", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.record(r)
		w.WriteHeader(http.StatusNoContent)
	}))
	return rs
}

// record notes r and returns its bearer token.
func (rs *tlsResource) record(r *http.Request) string {
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.requests = append(rs.requests, seenRequest{method: r.Method, path: r.URL.Path, tls: r.TLS != nil, protoMajor: r.ProtoMajor, token: token})
	return token
}

func (rs *tlsResource) seen() []seenRequest {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]seenRequest(nil), rs.requests...)
}

// freeRedirectURI returns a loopback redirect URI on a port that was free.
func freeRedirectURI(t *testing.T) string { return testenv.RedirectURI(t) }

// envWithout returns env without the variables named.
func envWithout(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, n := range names {
			if name == n {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}
