package oauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/auth/oauth"
)

// tokenProxy is a hostile token endpoint: it passes each token request on
// to the real authorization server's token endpoint and answers with what
// its edit function makes of the real answer.
type tokenProxy struct {
	URL       string
	real      string       // the real token endpoint
	refreshes atomic.Int64 // refresh requests received

	mu   sync.Mutex
	edit func(grant string, answer map[string]any) (status int, out map[string]any)
}

// stall is an edit result status: send the headers and part of the body,
// then nothing more.
const stall = -1

func newTokenProxy(t *testing.T) *tokenProxy {
	t.Helper()
	p := &tokenProxy{}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		grant := form.Get("grant_type")
		if grant == "refresh_token" {
			p.refreshes.Add(1)
		}
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, p.real, bytes.NewReader(body))
		req.Header.Set("Content-Type", r.Header.Get("Content-Type"))
		if a := r.Header.Get("Authorization"); a != "" {
			req.Header.Set("Authorization", a)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		var answer map[string]any
		json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		status := resp.StatusCode
		p.mu.Lock()
		edit := p.edit
		p.mu.Unlock()
		if edit != nil {
			status, answer = edit(grant, answer)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if status == stall {
			stallAfter(w, r, `{"access_token":`, release)
			return
		}
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(func() {
		close(release)
		srv.Close()
	})
	p.URL = srv.URL + "/token"
	return p
}

func (p *tokenProxy) setEdit(edit func(grant string, answer map[string]any) (int, map[string]any)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.edit = edit
}

// envWithTokenProxy is a test world whose authorization server metadata
// names p as the token endpoint.
func envWithTokenProxy(t *testing.T, o *envOptions) (*env, *tokenProxy) {
	t.Helper()
	p := newTokenProxy(t)
	if o == nil {
		o = &envOptions{}
	}
	o.metadata = func(self string, doc map[string]any) {
		doc["issuer"] = self
		p.real = doc["token_endpoint"].(string)
		doc["token_endpoint"] = p.URL
	}
	return newEnv(t, o), p
}

// TestHostileTokenResponses: a token endpoint that answers a login, or a
// refresh, with a token that cannot be used as it is (a CR/LF in it, a
// lifetime that is negative or absurd) is refused with a message naming
// the mistake, and nothing of the answer is stored.
func TestHostileTokenResponses(t *testing.T) {
	tests := []struct {
		name string
		edit func(a map[string]any)
		want string
	}{
		{"access token with CR LF", func(a map[string]any) {
			a["access_token"] = a["access_token"].(string) + "\r\nX-Injected: 1"
		}, "not an RFC 6750 bearer token (b64token): it contains the byte 0x0d"},
		{"access token with a space", func(a map[string]any) {
			a["access_token"] = "abc def"
		}, "not an RFC 6750 bearer token (b64token): it contains the byte 0x20"},
		{"access token with padding inside", func(a map[string]any) {
			a["access_token"] = "abc=def"
		}, "it contains the byte 0x3d"},
		{"huge access token", func(a map[string]any) {
			a["access_token"] = strings.Repeat("a", 20000)
		}, "an access token of 20000 bytes"},
		{"refresh token with LF", func(a map[string]any) {
			a["refresh_token"] = "rt-\nabc"
		}, "a refresh token that is not RFC 6749 text (VSCHAR): it contains the byte 0x0a"},
		{"negative expires_in", func(a map[string]any) {
			a["expires_in"] = -3600
		}, "expires_in -3600, not a whole number of seconds from 1 to 31536000"},
		{"zero expires_in", func(a map[string]any) {
			a["expires_in"] = 0
		}, "expires_in 0, not a whole number"},
		{"absurd expires_in", func(a map[string]any) {
			a["expires_in"] = 1e15
		}, "expires_in 1e+15, not a whole number"},
		{"string expires_in", func(a map[string]any) {
			a["expires_in"] = "3600"
		}, `expires_in as a string ("3600"), not a number`},
		{"fractional expires_in", func(a map[string]any) {
			a["expires_in"] = 3600.5
		}, "a token response that does not decode (a member of the wrong type, such as an expires_in that is not a whole number"},
		{"no token_type", func(a map[string]any) {
			delete(a, "token_type")
		}, "token response has no token_type"},
	}
	for _, tt := range tests {
		t.Run("login/"+tt.name, func(t *testing.T) {
			e, p := envWithTokenProxy(t, nil)
			var sent string
			p.setEdit(func(_ string, a map[string]any) (int, map[string]any) {
				tt.edit(a)
				sent, _ = a["access_token"].(string)
				return http.StatusOK, a
			})
			_, err := e.client.Login(context.Background(), e.srv, e.who)
			var oe *oauth.Error
			if !errors.As(err, &oe) || oe.Kind != oauth.KindRefused || !strings.Contains(err.Error(), tt.want) ||
				!strings.Contains(err.Error(), "nothing was stored") {
				t.Fatalf("Login = %v, want KindRefused saying %q and that nothing was stored", err, tt.want)
			}
			if strings.Contains(err.Error(), sent) {
				t.Errorf("the error quotes the token: %v", err)
			}
			if st, err := e.client.Status(context.Background(), e.srv, e.who); err != nil || st.LoggedIn {
				t.Errorf("Status after a refused login = %+v, %v; want not logged in", st, err)
			}
			if len(sent) >= 16 {
				scanForSecret(t, e.storeDir, sent)
			}
		})
		t.Run("refresh/"+tt.name, func(t *testing.T) {
			e, p := envWithTokenProxy(t, nil)
			before := e.login()
			p.setEdit(func(grant string, a map[string]any) (int, map[string]any) {
				if grant == "refresh_token" {
					tt.edit(a)
				}
				return http.StatusOK, a
			})
			e.clock.advance(10 * time.Minute)
			tr, err := e.client.Transport(e.srv, e.who, nil)
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodPost, e.rs.URL+"/echo", strings.NewReader("ping"))
			_, err = tr.RoundTrip(req)
			var oe *oauth.Error
			if !errors.As(err, &oe) || oe.Kind != oauth.KindRefused || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("call needing a refresh = %v, want KindRefused saying %q", err, tt.want)
			}
			// The record is the one the login stored.
			after, err := e.client.Status(context.Background(), e.srv, e.who)
			if err != nil || !after.Expiry.Equal(before.Expiry) || !after.Refreshable {
				t.Errorf("Status after a refused refresh = %+v, %v; want the login's record (expiry %v)", after, err, before.Expiry)
			}
			if n := len(e.rs.Seen()); n != 0 {
				t.Errorf("the server saw %d tokens", n)
			}
		})
	}
}

// TestRefreshInvalidGrant: once the authorization server answers a refresh
// with invalid_grant, the refresh token is dead: it is never sent again (by
// this client or another on the same store), calls say to log in, and the
// status says why. A new login starts afresh.
func TestRefreshInvalidGrant(t *testing.T) {
	for _, path := range []string{"expired", "refused by the server"} {
		t.Run(path, func(t *testing.T) {
			e, p := envWithTokenProxy(t, nil)
			e.login()
			p.setEdit(func(grant string, a map[string]any) (int, map[string]any) {
				if grant == "refresh_token" {
					return http.StatusBadRequest, map[string]any{"error": "invalid_grant", "error_description": "grant revoked"}
				}
				return http.StatusOK, a
			})
			cs := e.openSession()
			if path == "expired" {
				e.clock.advance(10 * time.Minute)
			} else {
				e.as.RevokeAccessTokens()
			}
			other, err := oauth.New(&oauth.Options{Store: e.store, Development: true, Now: e.clock.now})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				_, err := call(cs, "read")
				var oe *oauth.Error
				if !errors.As(err, &oe) || oe.Kind != oauth.KindAuthRequired ||
					!strings.Contains(err.Error(), "refused the refresh token") || !strings.Contains(err.Error(), "run airlock auth login issues") {
					t.Fatalf("call %d = %v, want KindAuthRequired saying to log in", i, err)
				}
				// Another process on the same store.
				tr, _ := other.Transport(e.srv, e.who, nil)
				req, _ := http.NewRequest(http.MethodPost, e.rs.URL+"/echo", strings.NewReader("ping"))
				if _, err := tr.RoundTrip(req); !errors.Is(err, oauth.ErrAuthRequired) {
					t.Fatalf("the other client's call %d = %v, want ErrAuthRequired", i, err)
				}
			}
			if n := p.refreshes.Load(); n != 1 {
				t.Errorf("refresh requests = %d, want 1: a refused refresh token is never sent again", n)
			}
			st, err := e.client.Status(context.Background(), e.srv, e.who)
			if err != nil || st.LoggedIn || !st.LoginAgain || st.Refreshable || st.Issuer == "" || len(st.Scopes) == 0 {
				t.Errorf("Status = %+v, %v; want login_again, not logged in, not refreshable, issuer and scopes kept", st, err)
			}

			// A new login replaces the dead record.
			p.setEdit(nil)
			if st := e.login(); !st.LoggedIn || st.LoginAgain || !st.Refreshable {
				t.Errorf("Status after a new login = %+v", st)
			}
			if got, err := call(cs, "read"); err != nil || got != "read ok" {
				t.Errorf("call after a new login = %q, %v", got, err)
			}
		})
	}
}

// stallAfter answers 200 with the start of a body, then sends nothing more
// until the client gives up or release is closed.
func stallAfter(w http.ResponseWriter, r *http.Request, start string, release <-chan struct{}) {
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, start)
	w.(http.Flusher).Flush()
	select {
	case <-r.Context().Done():
	case <-release:
	}
}

// stallingServer is a resource server whose metadata documents are named
// by path: each is served, stalls after its headers, or is too large.
func stallingServer(t *testing.T, stallPath, hugePath string) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case stallPath:
			stallAfter(w, r, `{"resource":`, release)
		case hugePath:
			io.WriteString(w, `{"resource":"`+srv.URL+`","x":"`)
			for range 2048 {
				io.WriteString(w, strings.Repeat("x", 1024))
			}
			io.WriteString(w, `"}`)
		case "/.well-known/oauth-protected-resource":
			writeJSON(w, map[string]any{"resource": srv.URL, "authorization_servers": []string{srv.URL}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(func() {
		close(release)
		srv.Close()
	})
	return srv
}

// TestDiscoveryDeadline: a metadata endpoint or a token endpoint that sends
// its headers and then stalls ends the login within the fetch timeout, with
// an error naming what was fetched; one that sends too much is refused.
func TestDiscoveryDeadline(t *testing.T) {
	const timeout = 300 * time.Millisecond
	tests := []struct {
		name       string
		stall      string // the path that stalls
		huge       string // the path that is too large
		want       string
		wantKind   oauth.Kind
		tokenStall bool
	}{
		{name: "protected resource metadata stalls", stall: "/.well-known/oauth-protected-resource",
			want: "cannot fetch the protected resource metadata: http://%s/.well-known/oauth-protected-resource did not answer in full within 300ms", wantKind: oauth.KindUnavailable},
		{name: "authorization server metadata stalls", stall: "/.well-known/oauth-authorization-server",
			want: "cannot fetch the authorization server's metadata: http://%s/.well-known/oauth-authorization-server did not answer in full within 300ms", wantKind: oauth.KindUnavailable},
		{name: "protected resource metadata too large", huge: "/.well-known/oauth-protected-resource",
			want: "cannot use the protected resource metadata: http://%s/.well-known/oauth-protected-resource answered with more than 1048576 bytes", wantKind: oauth.KindRefused},
		{name: "token endpoint stalls", tokenStall: true,
			want: "cannot fetch an answer of the authorization server: http://%s/token did not answer in full within 300ms", wantKind: oauth.KindUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, p := envWithTokenProxy(t, nil)
			host := ""
			if tt.tokenStall {
				p.setEdit(func(string, map[string]any) (int, map[string]any) { return stall, nil })
				host = strings.TrimPrefix(strings.TrimSuffix(p.URL, "/token"), "http://")
			} else {
				hostile := stallingServer(t, tt.stall, tt.huge)
				e.srv.URL, e.srv.Resource = hostile.URL+"/mcp", hostile.URL
				host = strings.TrimPrefix(hostile.URL, "http://")
			}
			c, err := oauth.New(&oauth.Options{Store: e.store, Development: true, FetchTimeout: timeout,
				Open: func(ctx context.Context, u string) error {
					e.opens.Add(1)
					return e.user.Load().(func(context.Context, string) error)(ctx, u)
				}})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = c.Login(context.Background(), e.srv, e.who)
			took := time.Since(start)
			want := strings.Replace(tt.want, "%s", host, 1)
			var oe *oauth.Error
			if !errors.As(err, &oe) || oe.Kind != tt.wantKind || !strings.Contains(err.Error(), want) {
				t.Fatalf("Login = %v, want kind %d containing %q", err, tt.wantKind, want)
			}
			if took > 10*time.Second {
				t.Errorf("Login took %s with a %s fetch timeout", took, timeout)
			}
			if !tt.tokenStall && e.opens.Load() != 0 {
				t.Error("the person was sent to log in although discovery failed")
			}
			if st, _ := c.Status(context.Background(), e.srv, e.who); st.LoggedIn {
				t.Error("logged in")
			}
		})
	}
}

// TestRefreshTokenSentOnce: an authorization server whose metadata names
// no token_endpoint_auth_methods_supported (or only "none", as one that
// serves public clients does) gets each refresh token once. A refresh
// whose answer is lost (a 502 from a proxy after the authorization server
// rotated the token) must not be followed by the same refresh token in
// another form: a rotating authorization server takes that for a stolen
// token and revokes the grant.
func TestRefreshTokenSentOnce(t *testing.T) {
	for _, methods := range [][]string{nil, {"none"}} {
		t.Run(fmt.Sprint(methods), func(t *testing.T) {
			p := newTokenProxy(t)
			e := newEnv(t, &envOptions{metadata: func(self string, doc map[string]any) {
				doc["issuer"] = self
				p.real = doc["token_endpoint"].(string)
				doc["token_endpoint"] = p.URL
				if methods == nil {
					delete(doc, "token_endpoint_auth_methods_supported")
				} else {
					doc["token_endpoint_auth_methods_supported"] = methods
				}
			}})
			e.login()
			p.setEdit(func(grant string, a map[string]any) (int, map[string]any) {
				if grant == "refresh_token" {
					return http.StatusBadGateway, map[string]any{}
				}
				return http.StatusOK, a
			})
			cs := e.openSession()
			e.clock.advance(10 * time.Minute)
			call(cs, "read")
			if n := p.refreshes.Load(); n != 1 {
				t.Errorf("refresh requests = %d, want 1: a refresh token is sent once per refresh", n)
			}
		})
	}
}

// TestTokenErrorCodeIsNotEchoed: an authorization server that puts what it
// was sent (here a canary standing for the refresh token) into its error
// code does not get it into the error, which reaches logs, the terminal
// and a model's tool result.
func TestTokenErrorCodeIsNotEchoed(t *testing.T) {
	const canary = "rt-CANARY-4f2a9c"
	e, p := envWithTokenProxy(t, nil)
	e.login()
	p.setEdit(func(grant string, a map[string]any) (int, map[string]any) {
		if grant == "refresh_token" {
			return http.StatusBadRequest, map[string]any{"error": "invalid " + canary}
		}
		return http.StatusOK, a
	})
	cs := e.openSession()
	e.clock.advance(10 * time.Minute)
	_, err := call(cs, "read")
	if err == nil || strings.Contains(err.Error(), canary) || !strings.Contains(err.Error(), "answered 400") {
		t.Errorf("call = %v; want the refresh refused, naming the status and not the echoed text", err)
	}
}
