package bearer_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/auth/bearer"
	"github.com/airlockhq/airlock/auth/bearer/bearertest"
)

// TestUserClaimAndCheck: the user comes from the configured claim (sub by
// default), a token without it is refused, and CheckPrincipal refuses the
// names a resource server cannot act for, as an invalid token whose
// description keeps to RFC 6750's characters.
func TestUserClaimAndCheck(t *testing.T) {
	iss := bearertest.New(t, nil)
	md, _ := bearer.MetadataURL(resource)
	check := func(p *bearer.Principal) error {
		if strings.ContainsAny(p.User, " /") {
			return errors.New(`token user claim "email" is not a usable user name`)
		}
		return nil
	}
	v := newVerifier(t, iss, &bearer.Options{UserClaim: "email", CheckPrincipal: check})
	h := v.Middleware(&bearer.MiddlewareOptions{Required: []string{readScope, writeScope}})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := bearer.PrincipalFrom(r.Context())
		w.Write([]byte(p.Tenant + "/" + p.User + "/" + p.Subject + " " + p.UserID()))
	}))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	claims := func(email any, scopes ...string) map[string]any {
		c := iss.Claims(resource, "acme", "u-123", scopes...)
		if email != nil {
			c["email"] = email
		}
		return c
	}
	both := []string{readScope, writeScope}
	refused := func(desc string) response {
		return response{401, `Bearer resource_metadata="` + md + `", error="invalid_token", error_description="` + desc + `"`, desc}
	}
	tests := []struct {
		name  string
		token string
		want  response
	}{
		{"user from its claim", iss.Mint(t, claims("alice@acme.example", both...), nil),
			response{200, "", `acme/alice@acme.example/u-123 "acme" "alice@acme.example"`}},
		{"no user claim", iss.Mint(t, claims(nil, both...), nil), refused("token has no user claim")},
		{"user claim not a string", iss.Mint(t, claims(7, both...), nil), refused("token has no user claim")},
		{"user claim empty", iss.Mint(t, claims("", both...), nil), refused("token has no user claim")},
		{"name refused", iss.Mint(t, claims("alice smith", both...), nil), refused("token user claim email is not a usable user name")},
		{"a required scope missing", iss.Mint(t, claims("alice@acme.example", readScope), nil),
			response{403, `Bearer resource_metadata="` + md + `", scope="` + writeScope + `", error="insufficient_scope", error_description="the token lacks the scope ` + writeScope + `"`,
				"the token lacks the scope " + writeScope}},
		{"every required scope missing", iss.Mint(t, claims("alice@acme.example"), nil),
			response{403, `Bearer resource_metadata="` + md + `", scope="` + readScope + " " + writeScope + `", error="insufficient_scope", error_description="the token lacks the scope ` + readScope + " " + writeScope + `"`,
				"the token lacks the scope " + readScope + " " + writeScope}},
	}
	for _, tt := range tests {
		got := get(t, srv.URL, http.MethodGet, "Authorization", "Bearer "+tt.token)
		if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(response{})); diff != "" {
			t.Errorf("%s: response mismatch (-want +got):\n%s", tt.name, diff)
		}
	}

	// Without a user claim, the user is the subject.
	plain := newVerifier(t, iss, nil)
	p, err := plain.Verify(context.Background(), iss.Mint(t, claims("alice@acme.example"), nil))
	if err != nil || p.User != "u-123" || p.UserID() != `"acme" "u-123"` {
		t.Errorf("principal without a user claim = %+v (%v)", p, err)
	}
}

// TestHostCheck: a Host header must be a loopback name or one of the
// server's hosts; on a listener that is not loopback, LoopbackListenerOnly
// lets every Host through.
func TestHostCheck(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })
	serve := func(c bearer.HostCheck, addr net.Addr) func(host string) int {
		return func(host string) int {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Host = host
			req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, addr))
			rec := httptest.NewRecorder()
			c.Wrap(ok).ServeHTTP(rec, req)
			if rec.Code == http.StatusForbidden && !strings.HasPrefix(rec.Body.String(), "host not allowed") {
				t.Errorf("Host %q: body %q", host, rec.Body.String())
			}
			return rec.Code
		}
	}
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	public := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 8080}
	tests := []struct {
		name  string
		check bearer.HostCheck
		addr  net.Addr
		host  string
		want  int
	}{
		{"loopback name", bearer.HostCheck{}, loopback, "localhost:8080", 200},
		{"loopback IPv6", bearer.HostCheck{}, loopback, "[::1]:8080", 200},
		{"foreign name", bearer.HostCheck{}, loopback, "evil.example:8080", 403},
		{"empty", bearer.HostCheck{}, loopback, "", 403},
		{"the resource's host", bearer.HostCheck{Hosts: []string{"airlock.example.com"}}, public, "Airlock.Example.com", 200},
		{"the resource's host with a port", bearer.HostCheck{Hosts: []string{"airlock.example.com"}}, public, "airlock.example.com:8443", 200},
		{"an IPv6 resource host", bearer.HostCheck{Hosts: []string{"[2001:db8::1]"}}, public, "[2001:db8::1]:8443", 200},
		{"a look-alike", bearer.HostCheck{Hosts: []string{"airlock.example.com"}}, public, "airlock.example.com.evil.example", 403},
		{"foreign name on a public listener", bearer.HostCheck{Hosts: []string{"airlock.example.com"}}, public, "evil.example", 403},
		{"loopback listener only, public listener", bearer.HostCheck{LoopbackListenerOnly: true}, public, "evil.example", 200},
		{"loopback listener only, loopback listener", bearer.HostCheck{LoopbackListenerOnly: true}, loopback, "evil.example", 403},
	}
	for _, tt := range tests {
		if got := serve(tt.check, tt.addr)(tt.host); got != tt.want {
			t.Errorf("%s: Host %q gives %d, want %d", tt.name, tt.host, got, tt.want)
		}
	}
}

// TestOriginCheck: a web page gets in only from an allowed origin, with
// CORS for exactly it; a client that sends no Origin always does.
func TestOriginCheck(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })
	do := func(c bearer.OriginCheck, method string, headers ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "/mcp", nil)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Add(headers[i], headers[i+1])
		}
		rec := httptest.NewRecorder()
		c.Wrap(ok).ServeHTTP(rec, req)
		return rec
	}
	allow := bearer.OriginCheck{Allowed: []string{"https://app.example.com"}, Message: "origin not allowed: list it"}
	if rec := do(allow, http.MethodPost); rec.Code != 200 || rec.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("no Origin: %d, CORS %q", rec.Code, rec.Header().Get("Access-Control-Allow-Origin"))
	}
	if rec := do(allow, http.MethodPost, "Origin", "https://App.example.com"); rec.Code != 200 || rec.Header().Get("Access-Control-Allow-Origin") != "https://App.example.com" {
		t.Errorf("allowed Origin: %d, CORS %q", rec.Code, rec.Header().Get("Access-Control-Allow-Origin"))
	}
	for _, origin := range []string{"https://evil.example.com", "null"} {
		if rec := do(allow, http.MethodPost, "Origin", origin); rec.Code != 403 || !strings.HasPrefix(rec.Body.String(), "origin not allowed: list it") ||
			rec.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("Origin %s: %d %q, CORS %q", origin, rec.Code, rec.Body.String(), rec.Header().Get("Access-Control-Allow-Origin"))
		}
	}
	if rec := do(allow, http.MethodPost, "Origin", "https://app.example.com", "Origin", "https://evil.example.com"); rec.Code != 403 {
		t.Errorf("two Origin headers: %d", rec.Code)
	}
	pre := do(allow, http.MethodOptions, "Origin", "https://app.example.com", "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "authorization, mcp-session-id")
	if pre.Code >= 300 || pre.Header().Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Errorf("preflight: %d, CORS %q", pre.Code, pre.Header().Get("Access-Control-Allow-Origin"))
	}
	if rec := do(bearer.OriginCheck{}, http.MethodPost, "Origin", "https://app.example.com"); rec.Code != 403 || rec.Body.String() != "origin not allowed\n" {
		t.Errorf("no origin allowed: %d %q", rec.Code, rec.Body.String())
	}
}

// TestSameLoopbackOrigin: with SameLoopbackOrigin, a page of the very
// loopback origin a request is for gets in (and needs no CORS); a page of
// another loopback origin, another scheme, or a host that is not loopback
// does not, nor does any page without the option.
func TestSameLoopbackOrigin(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })
	for _, tt := range []struct {
		same         bool
		host, origin string
		want         int
	}{
		{true, "127.0.0.1:8080", "http://127.0.0.1:8080", 200},
		{true, "localhost:8080", "http://LOCALHOST:8080", 200},
		{true, "[::1]:8080", "http://[::1]:8080", 200},
		{true, "127.0.0.1:8080", "http://127.0.0.1:9090", 403},
		{true, "127.0.0.1:8080", "http://localhost:8080", 403},
		{true, "127.0.0.1:8080", "https://127.0.0.1:8080", 403},
		{true, "evil.example.com:8080", "http://evil.example.com:8080", 403},
		{true, "127.0.0.1:8080", "null", 403},
		{false, "127.0.0.1:8080", "http://127.0.0.1:8080", 403},
	} {
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		req.Host = tt.host
		req.Header.Set("Origin", tt.origin)
		rec := httptest.NewRecorder()
		bearer.OriginCheck{SameLoopbackOrigin: tt.same}.Wrap(ok).ServeHTTP(rec, req)
		if rec.Code != tt.want {
			t.Errorf("SameLoopbackOrigin %v, Host %s, Origin %s: %d, want %d", tt.same, tt.host, tt.origin, rec.Code, tt.want)
		}
	}
}

func TestMetadataPaths(t *testing.T) {
	tests := []struct {
		resource string
		want     []string
	}{
		{"https://mcp.example.com", []string{bearer.WellKnownPath, bearer.WellKnownPath + "/mcp"}},
		{"https://mcp.example.com/mcp", []string{bearer.WellKnownPath, bearer.WellKnownPath + "/mcp"}},
		{"https://mcp.example.com/v1/", []string{bearer.WellKnownPath, bearer.WellKnownPath + "/mcp", bearer.WellKnownPath + "/v1"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, bearer.MetadataPaths(tt.resource, "/mcp")); diff != "" {
			t.Errorf("MetadataPaths(%s) mismatch (-want +got):\n%s", tt.resource, diff)
		}
	}
}
