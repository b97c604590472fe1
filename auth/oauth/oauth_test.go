package oauth_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/auth/egress"
	"github.com/airlockhq/airlock/auth/oauth"
	"github.com/airlockhq/airlock/auth/oauth/oauthtest"
)

func TestLoginAndCall(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()

	// Before a login, a call needs one, and says how to get it.
	if _, err := e.session(e.who); !errors.Is(err, oauth.ErrAuthRequired) || !strings.Contains(err.Error(), "run airlock auth login issues") {
		t.Fatalf("session before login = %v, want ErrAuthRequired naming the command", err)
	}

	st := e.login()
	want := &oauth.Status{
		Server: "issues", LoggedIn: true, Issuer: e.as.URL, Partition: st.Partition,
		Scopes: []string{scopeRead, "offline_access"}, Expiry: st.Expiry, Refreshable: true, Registration: "preregistered",
	}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("status after login mismatch (-want +got):\n%s", diff)
	}
	if got, err := e.client.Status(ctx, e.srv, e.who); err != nil || !cmp.Equal(got, st) {
		t.Errorf("Status = %+v, %v; want %+v", got, err, st)
	}

	cs := e.openSession()
	if got, err := call(cs, "read"); err != nil || got != "read ok" {
		t.Fatalf("call read = %q, %v", got, err)
	}

	// The token was issued for the configured resource, and every
	// authorization and token request named it.
	tokens := e.rs.Seen()
	if len(tokens) == 0 {
		t.Fatal("the server saw no token")
	}
	claims, err := e.as.Verify(ctx, tokens[0], e.rs.URL)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{e.rs.URL}, claims.Audience); diff != "" {
		t.Errorf("audience mismatch (-want +got):\n%s", diff)
	}
	if got := e.as.Stats(); got.MissingResource != 0 || got.CodeExchanges != 1 {
		t.Errorf("authorization server stats = %+v, want one code exchange and no request without resource", got)
	}

	// The store holds no token in the clear.
	scanForSecret(t, e.storeDir, tokens[0])

	// Another user of the same tenant has no credentials.
	if _, err := e.session(oauth.Owner{Tenant: "acme", User: "bob"}); !errors.Is(err, oauth.ErrAuthRequired) {
		t.Errorf("bob's session = %v, want ErrAuthRequired", err)
	}

	// Logout forgets the tokens.
	if err := e.client.Logout(ctx, e.srv, e.who); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.client.Status(ctx, e.srv, e.who); st.LoggedIn {
		t.Error("still logged in after Logout")
	}
	if _, err := call(cs, "read"); !errors.Is(err, oauth.ErrAuthRequired) {
		t.Errorf("call after logout = %v, want ErrAuthRequired", err)
	}
}

func TestPartitionKey(t *testing.T) {
	base := oauth.Partition{Tenant: "acme", User: "alice", Server: "issues", Resource: "https://mcp.example.com", Issuer: "https://auth.example.com"}
	seen := map[string]oauth.Partition{base.Key(): base}
	variants := []oauth.Partition{
		{Tenant: "acme2", User: "alice", Server: "issues", Resource: base.Resource, Issuer: base.Issuer},
		{Tenant: "acme", User: "bob", Server: "issues", Resource: base.Resource, Issuer: base.Issuer},
		{Tenant: "acme", User: "alice", Server: "issues2", Resource: base.Resource, Issuer: base.Issuer},
		{Tenant: "acme", User: "alice", Server: "issues", Resource: base.Resource + "/v2", Issuer: base.Issuer},
		{Tenant: "acme", User: "alice", Server: "issues", Resource: base.Resource, Issuer: "https://evil.example.com"},
		{Tenant: "acmea", User: "lice", Server: "issues", Resource: base.Resource, Issuer: base.Issuer},
	}
	for _, p := range variants {
		k := p.Key()
		if prev, ok := seen[k]; ok {
			t.Errorf("%+v and %+v share the key %s", p, prev, k)
		}
		seen[k] = p
		if strings.Contains(k, "alice") || len(k) != 64 {
			t.Errorf("key %q is not an opaque hash", k)
		}
	}
	// Stored tokens are found by this key: a change of the hash would
	// strand every login on every machine.
	if got, want := base.Key(), "e6b9aaaec3f00b55d90bdf07c5f8922ff35616c78e53b4a6968b163278cd118e"; got != want {
		t.Errorf("Key() = %s, want %s, as every earlier version computed it", got, want)
	}
}

func TestRefreshOnExpiry(t *testing.T) {
	e := newEnv(t, nil)
	e.login()
	cs := e.openSession()
	if _, err := call(cs, "read"); err != nil {
		t.Fatal(err)
	}
	// Past the first token's expiry; later tokens live long enough.
	e.as.SetAccessTokenTTL(time.Hour)
	e.clock.advance(10 * time.Minute)
	if got, err := call(cs, "read"); err != nil || got != "read ok" {
		t.Fatalf("call after expiry = %q, %v", got, err)
	}
	st := e.as.Stats()
	if st.Refreshes != 1 || st.MissingResource != 0 {
		t.Errorf("stats = %+v, want one refresh, with the resource", st)
	}
	tokens := e.rs.Seen()
	if tokens[0] == tokens[len(tokens)-1] {
		t.Error("the call after expiry used the old token")
	}
	if e.opens.Load() != 1 {
		t.Errorf("authorization URLs shown = %d, want 1 (refresh needs no person)", e.opens.Load())
	}
}

// TestRefreshRace: ten calls that find the token expired at once cause one
// refresh; the authorization server rotates refresh tokens, so a second
// refresh with the old one would fail and lose the login.
func TestRefreshRace(t *testing.T) {
	e := newEnv(t, nil)
	e.login()
	e.as.SetAccessTokenTTL(time.Hour)
	e.clock.advance(10 * time.Minute)
	echoAtOnce(t, e, e.client)
	st := e.as.Stats()
	if st.Refreshes != 1 || st.ReusedRefreshTokens != 0 {
		t.Errorf("stats = %+v, want exactly one refresh and no reused refresh token", st)
	}
	// The rotated refresh token was saved: a later expiry refreshes again.
	e.as.SetAccessTokenTTL(5 * time.Hour)
	e.clock.advance(2 * time.Hour)
	tr, _ := e.client.Transport(e.srv, e.who, nil)
	req, _ := http.NewRequest(http.MethodPost, e.rs.URL+"/echo", strings.NewReader("again"))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if st := e.as.Stats(); st.Refreshes != 2 || st.ReusedRefreshTokens != 0 {
		t.Errorf("stats = %+v, want a second good refresh", st)
	}
}

func TestUnauthorizedRefreshesOnce(t *testing.T) {
	e := newEnv(t, nil)
	e.login()
	cs := e.openSession()

	// The server stops accepting the token before it expires: one refresh,
	// and the call goes through.
	e.as.RevokeAccessTokens()
	if got, err := call(cs, "read"); err != nil || got != "read ok" {
		t.Fatalf("call after revocation = %q, %v", got, err)
	}
	if st := e.as.Stats(); st.Refreshes != 1 {
		t.Errorf("refreshes = %d, want 1", st.Refreshes)
	}

	// A server that refuses every token: one refresh, then auth_required.
	e.rs.SetRefuse(true)
	_, err := call(cs, "read")
	var oe *oauth.Error
	if !errors.As(err, &oe) || oe.Kind != oauth.KindAuthRequired || !strings.Contains(err.Error(), "run airlock auth login issues") {
		t.Errorf("call against a refusing server = %v, want KindAuthRequired", err)
	}
	if st := e.as.Stats(); st.Refreshes != 2 {
		t.Errorf("refreshes = %d, want 2 (one per call)", st.Refreshes)
	}
	for _, tok := range e.rs.Seen() {
		if strings.Contains(err.Error(), tok[:16]) {
			t.Errorf("the error quotes a token: %v", err)
		}
	}
}

func TestStepUp(t *testing.T) {
	var asked []*oauth.StepUp
	var mu sync.Mutex
	decision := true
	e := newEnv(t, &envOptions{consent: func(_ context.Context, req *oauth.StepUp) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, req)
		return decision, nil
	}})
	e.login()
	cs := e.openSession()

	// Declined: no login, a clear error.
	decision = false
	_, err := call(cs, "write")
	var oe *oauth.Error
	if !errors.As(err, &oe) || oe.Kind != oauth.KindInsufficientScope || !errors.Is(err, oauth.ErrAuthRequired) {
		t.Fatalf("write with consent declined = %v, want KindInsufficientScope", err)
	}
	if e.opens.Load() != 1 {
		t.Errorf("a login ran although consent was declined")
	}

	// Granted: one login for the union of the scopes, and the call works.
	decision = true
	if got, err := call(cs, "write"); err != nil || got != "write ok" {
		t.Fatalf("write after step-up = %q, %v", got, err)
	}
	if e.opens.Load() != 2 {
		t.Errorf("authorization URLs shown = %d, want 2", e.opens.Load())
	}
	mu.Lock()
	last := asked[len(asked)-1]
	mu.Unlock()
	wantAsk := &oauth.StepUp{Server: "issues", Granted: []string{scopeRead, "offline_access"}, Added: []string{scopeWrite}, Requested: []string{scopeRead, "offline_access", scopeWrite}}
	if diff := cmp.Diff(wantAsk, last); diff != "" {
		t.Errorf("consent request mismatch (-want +got):\n%s", diff)
	}
	st, _ := e.client.Status(context.Background(), e.srv, e.who)
	for _, s := range []string{scopeRead, scopeWrite} {
		if !contains(st.Scopes, s) {
			t.Errorf("scopes after step-up = %q, missing %s", st.Scopes, s)
		}
	}
	// Reads still work with the new token, without another login.
	if _, err := call(cs, "read"); err != nil {
		t.Fatal(err)
	}
	if e.opens.Load() != 2 || len(asked) != 2 {
		t.Errorf("opens = %d, consents = %d; want 2 and 2", e.opens.Load(), len(asked))
	}
}

func TestStepUpWithoutConsentFunction(t *testing.T) {
	e := newEnv(t, nil)
	e.login()
	cs := e.openSession()
	_, err := call(cs, "write")
	var oe *oauth.Error
	if !errors.As(err, &oe) || oe.Kind != oauth.KindInsufficientScope || !cmp.Equal(oe.Scopes, []string{scopeWrite}) {
		t.Errorf("write = %v, want KindInsufficientScope for %s", err, scopeWrite)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestIssuerMismatchInCallback(t *testing.T) {
	e := newEnv(t, nil)
	// A mix-up attack: the answer claims to come from another issuer.
	e.user.Store(e.playUser(oauthtest.User, oauthtest.Password, func(cb string) string {
		return cb + "&iss=" + url.QueryEscape("https://evil.example.com")
	}))
	_, err := e.client.Login(context.Background(), e.srv, e.who)
	if err == nil || !strings.Contains(err.Error(), "issuer") {
		t.Fatalf("Login with a foreign iss = %v, want an issuer mismatch", err)
	}
	if st := e.as.Stats(); st.CodeExchanges != 0 {
		t.Errorf("the code was exchanged despite the issuer mismatch")
	}
	if st, _ := e.client.Status(context.Background(), e.srv, e.who); st.LoggedIn {
		t.Error("logged in despite the issuer mismatch")
	}
}

// metadataProxy serves a copy of the authorization server's discovery
// document, edited by edit, under its own URL.
func metadataProxy(t *testing.T, as *oauthtest.Server, edit func(self string, doc map[string]any)) string {
	t.Helper()
	resp, err := http.Get(as.URL + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := decodeJSON(resp.Body, &doc); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	edit(srv.URL, doc)
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		writeJSON(w, doc)
	})
	return srv.URL
}

func TestRefusedAuthorizationServers(t *testing.T) {
	empty := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(empty.Close)
	tests := []struct {
		name   string
		opts   *envOptions
		want   string
		wantIs error // if set, an error the chain must hold
	}{
		{
			name: "issuer mismatch in metadata",
			// The document keeps naming the real issuer.
			opts: &envOptions{metadata: func(string, map[string]any) {}},
			want: "does not match issuer",
		},
		{
			name: "no PKCE",
			opts: &envOptions{as: &oauthtest.Options{NoPKCE: true}},
			want: "PKCE",
		},
		{
			name: "PKCE plain only",
			opts: &envOptions{metadata: func(self string, doc map[string]any) {
				doc["issuer"] = self
				doc["code_challenge_methods_supported"] = []string{"plain"}
			}},
			want: "does not advertise PKCE with S256",
		},
		{
			name: "token endpoint on a private address",
			opts: &envOptions{
				resolver: &fakeResolver{answers: map[string][]netip.Addr{"tokens.internal.test": {netip.MustParseAddr("10.0.0.7")}}},
				metadata: func(self string, doc map[string]any) {
					doc["issuer"] = self
					doc["token_endpoint"] = "https://tokens.internal.test/token"
				},
			},
			want:   "egress policy",
			wantIs: egress.ErrRefused,
		},
		{
			name: "token endpoint on a literal private address",
			opts: &envOptions{metadata: func(self string, doc map[string]any) {
				doc["issuer"] = self
				doc["token_endpoint"] = "https://169.254.169.254/token"
			}},
			want: "metadata",
		},
		{
			name: "no metadata at all",
			opts: &envOptions{asURL: func(*oauthtest.Server) string { return empty.URL }},
			want: "publishes no metadata",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.opts)
			_, err := e.client.Login(context.Background(), e.srv, e.who)
			var oe *oauth.Error
			if !errors.As(err, &oe) || oe.Kind != oauth.KindRefused || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Login = %v, want KindRefused containing %q", err, tt.want)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Login = %v, want %v in the chain", err, tt.wantIs)
			}
			if e.opens.Load() != 0 {
				t.Error("the person was sent to log in at a refused authorization server")
			}
		})
	}
}

func TestResourceMismatch(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.Resource = e.rs.URL + "/other"
	_, err := e.client.Login(context.Background(), e.srv, e.who)
	var oe *oauth.Error
	if !errors.As(err, &oe) || oe.Kind != oauth.KindRefused || !strings.Contains(err.Error(), "names the resource") {
		t.Errorf("Login with another resource = %v, want KindRefused", err)
	}
}

// TestRedirectNotFollowed: a server that redirects a call elsewhere never
// gets the body or the token sent there.
func TestRedirectNotFollowed(t *testing.T) {
	e := newEnv(t, nil)
	e.login()
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	srv := *e.srv
	srv.URL = redirector.URL + "/mcp"
	srv.Resource = e.srv.Resource // same partition, another endpoint
	tr, err := e.client.Transport(&srv, e.who, nil)
	if err != nil {
		t.Fatal(err)
	}

	// Even an http.Client that follows redirects cannot carry the token
	// to another origin through this transport.
	for _, c := range []*http.Client{{Transport: tr}, {Transport: tr, CheckRedirect: egress.RefuseRedirect}} {
		resp, err := c.Post(srv.URL, "application/json", strings.NewReader(`{"method":"tools/call"}`))
		if err == nil {
			resp.Body.Close()
			t.Error("the redirected call succeeded")
		}
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("requests at the redirect target = %d, want 0", n)
	}
}

func TestConcurrentLoginsAreSerialised(t *testing.T) {
	e := newEnv(t, nil)
	var inFlight, maxInFlight atomic.Int64
	person := e.playUser(oauthtest.User, oauthtest.Password, nil)
	e.user.Store(func(ctx context.Context, u string) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := maxInFlight.Load()
			if n <= m || maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		return person(ctx, u)
	})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if _, err := e.client.Login(context.Background(), e.srv, e.who); err != nil {
				t.Errorf("Login: %v", err)
			}
		})
	}
	wg.Wait()
	if got := maxInFlight.Load(); got != 1 {
		t.Errorf("logins in flight at once = %d, want 1", got)
	}
	if got := e.opens.Load(); got != 3 {
		t.Errorf("logins = %d, want 3", got)
	}
}

func TestCallbackIgnoresStrangers(t *testing.T) {
	e := newEnv(t, nil)
	person := e.playUser(oauthtest.User, oauthtest.Password, nil)
	var strangerStatus int
	e.user.Store(func(ctx context.Context, authURL string) error {
		// Someone else hits the redirect URI first, with a guessed state.
		resp, err := http.Get(e.srv.RedirectURI + "?code=stolen&state=guess")
		if err != nil {
			return err
		}
		resp.Body.Close()
		strangerStatus = resp.StatusCode
		return person(ctx, authURL)
	})
	e.login()
	if strangerStatus != http.StatusBadRequest {
		t.Errorf("stranger got %d, want 400", strangerStatus)
	}
}

func TestLoginRefusedByPerson(t *testing.T) {
	e := newEnv(t, nil)
	e.user.Store(e.playUser(oauthtest.User, "wrong password", nil))
	if _, err := e.client.Login(context.Background(), e.srv, e.who); err == nil {
		t.Fatal("login with a wrong password succeeded")
	}
	// The redirect port is free again for the next login.
	e.user.Store(e.playUser(oauthtest.User, oauthtest.Password, nil))
	e.login()
}

func TestLoginExpires(t *testing.T) {
	e := newEnv(t, nil)
	e.user.Store(func(context.Context, string) error { return nil }) // the person never comes back
	c, err := oauth.New(&oauth.Options{Store: e.store, Development: true, LoginTimeout: 100 * time.Millisecond,
		Open: func(ctx context.Context, u string) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Login(context.Background(), e.srv, e.who)
	var oe *oauth.Error
	if !errors.As(err, &oe) || oe.Kind != oauth.KindLogin {
		t.Errorf("Login = %v, want KindLogin", err)
	}
}

func TestServerValidation(t *testing.T) {
	e := newEnv(t, nil)
	good := *e.srv
	tests := []struct {
		name string
		edit func(s *oauth.Server)
		want string
	}{
		{"unknown grant", func(s *oauth.Server) { s.Grant = "implicit" }, `grant "implicit" is not one airlock uses`},
		{"client credentials without client id", func(s *oauth.Server) {
			s.Grant, s.ClientID, s.ClientSecret = oauth.GrantClientCredentials, "", "s3cret-for-the-test"
		}, "needs oauth.client_id for the client credentials grant"},
		{"client credentials without secret or key", func(s *oauth.Server) { s.Grant = oauth.GrantClientCredentials },
			"needs exactly one of oauth.client_secret_env and oauth.private_key_file"},
		{"bad scope", func(s *oauth.Server) { s.Scopes = []string{`a"b`} }, "not a valid OAuth scope"},
		{"no client", func(s *oauth.Server) { s.ClientID = "" }, "client_id"},
		{"redirect not loopback", func(s *oauth.Server) { s.RedirectURI = "http://example.com:8765/cb" }, "redirect_uri"},
		{"redirect https", func(s *oauth.Server) { s.RedirectURI = "https://127.0.0.1:8765/cb" }, "redirect_uri"},
		{"redirect without port", func(s *oauth.Server) { s.RedirectURI = "http://127.0.0.1/cb" }, "redirect_uri"},
		{"redirect localhost", func(s *oauth.Server) { s.RedirectURI = "http://localhost:8765/cb" }, "redirect_uri"},
		{"no resource", func(s *oauth.Server) { s.Resource = "" }, "resource"},
	}
	for _, tt := range tests {
		s := good
		tt.edit(&s)
		_, err := e.client.Login(context.Background(), &s, e.who)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Login = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

// TestRefreshRaceAcrossProcesses: two clients on one store stand for two
// airlock processes of the same person (a shell and a one-shot call). When
// the token expires under both, the store's lock makes one of them refresh
// and the other use what it stored: the rotating refresh token is spent
// once, never twice.
func TestRefreshRaceAcrossProcesses(t *testing.T) {
	e := newEnv(t, nil)
	e.login()
	other, err := oauth.New(&oauth.Options{Store: e.store, Development: true, Now: e.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	e.as.SetAccessTokenTTL(time.Hour)
	e.clock.advance(10 * time.Minute)
	echoAtOnce(t, e, e.client, other)
	if st := e.as.Stats(); st.Refreshes != 1 || st.ReusedRefreshTokens != 0 {
		t.Errorf("stats = %+v, want exactly one refresh and no reused refresh token", st)
	}
}

// echoAtOnce makes ten calls to the protected echo endpoint at once, each
// on a transport of its own (like separate connections of one partition),
// taking turns among clients.
func echoAtOnce(t *testing.T, e *env, clients ...*oauth.Client) {
	t.Helper()
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := range 10 {
		tr, err := clients[i%len(clients)].Transport(e.srv, e.who, nil)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			<-start
			req, _ := http.NewRequest(http.MethodPost, e.rs.URL+"/echo", strings.NewReader("ping"))
			resp, err := tr.RoundTrip(req)
			if err != nil {
				errs <- err
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != "ping" {
				errs <- errors.New(resp.Status + " " + string(body))
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("call: %v", err)
	}
}

// TestFutileStepUp: the server asks for a scope the authorization server
// never grants. One consented step-up is tried; when the server still
// refuses, the call fails naming the scope, and later calls do not send the
// person to log in again for it.
func TestFutileStepUp(t *testing.T) {
	e := newEnv(t, &envOptions{
		as:      &oauthtest.Options{Withhold: []string{oauthtest.ScopeAdmin}},
		consent: func(context.Context, *oauth.StepUp) (bool, error) { return true, nil },
	})
	e.login()
	cs := e.openSession()
	for i := range 3 {
		_, err := call(cs, "admin")
		var oe *oauth.Error
		if !errors.As(err, &oe) || oe.Kind != oauth.KindInsufficientScope || !contains(oe.Scopes, oauthtest.ScopeAdmin) {
			t.Fatalf("admin call %d = %v, want KindInsufficientScope naming %s", i, err, oauthtest.ScopeAdmin)
		}
	}
	if opens, consents := e.opens.Load(), e.consents.Load(); opens != 2 || consents != 1 {
		t.Errorf("logins = %d, consents = %d; want the first login and one step-up", opens, consents)
	}
	if n := e.rs.Calls("admin"); n != 0 {
		t.Errorf("admin ran %d times", n)
	}
	// Other tools are unaffected.
	if got, err := call(cs, "read"); err != nil || got != "read ok" {
		t.Errorf("read = %q, %v", got, err)
	}
}
