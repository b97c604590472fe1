package oauth

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/oauth2"

	"github.com/airlockhq/airlock/auth/bearer"
)

// FuzzInsufficientScope feeds arbitrary WWW-Authenticate headers (a remote
// server's words) to the step-up trigger: it must not panic, and every
// scope it returns must be a valid scope token.
func FuzzInsufficientScope(f *testing.F) {
	f.Add(`Bearer error="insufficient_scope", scope="mcp:read mcp:write", resource_metadata="https://x/.well-known/oauth-protected-resource"`)
	f.Add(`Bearer error="invalid_token"`)
	f.Add(`Basic realm="x", Bearer error=insufficient_scope, scope="a\"b c"`)
	f.Add(`Bearer scope="` + strings.Repeat("a ", 100) + `", error="insufficient_scope"`)
	f.Add(`Bearer error="insufficient_scope", scope="ok bad\x01scope"`)
	f.Fuzz(func(t *testing.T, header string) {
		scopes, _, ok := insufficientScope(http.Header{"Www-Authenticate": {header}})
		if !ok && len(scopes) != 0 {
			t.Fatalf("scopes %q without insufficient_scope", scopes)
		}
		for _, s := range scopes {
			if !bearer.IsScopeToken(s) {
				t.Fatalf("invalid scope %q from %q", s, header)
			}
		}
	})
}

func TestInsufficientScope(t *testing.T) {
	h := http.Header{"Www-Authenticate": {`Bearer resource_metadata="https://m", scope="a b", error="insufficient_scope"`}}
	scopes, md, ok := insufficientScope(h)
	if !ok || strings.Join(scopes, ",") != "a,b" || md != "https://m" {
		t.Errorf("insufficientScope = %q, %q, %v", scopes, md, ok)
	}
	if _, _, ok := insufficientScope(http.Header{"Www-Authenticate": {`Bearer error="invalid_token"`}}); ok {
		t.Error("invalid_token taken for insufficient_scope")
	}
}

// A token response's scope is kept as scope tokens only: what is not one
// (a control character, a quote) grants nothing and is never shown.
func TestGrantedScopesAreTokens(t *testing.T) {
	tok := (&oauth2.Token{AccessToken: "x"}).WithExtra(map[string]any{"scope": "mcp:read evil\x1b[31mRED\x1b]0;pwned\x07scope mcp:read say\"hi"})
	if got := grantedScopes(tok, nil); !slices.Equal(got, []string{"mcp:read"}) {
		t.Errorf("grantedScopes = %q, want [mcp:read]", got)
	}
}

// TestPlainHTTPMetadataIsNotFetched: an authorization server's metadata
// names the token endpoint a client secret goes to, so it is never read
// over plain http from a host that is not loopback (a client credentials
// login fetches it without the SDK, which refuses such a URL itself).
func TestPlainHTTPMetadataIsNotFetched(t *testing.T) {
	var sent atomic.Int64
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent.Add(1)
		return &http.Response{StatusCode: http.StatusNotFound, Body: http.NoBody, Request: r}, nil
	})}
	_, err := fetchAuthServerMetadata(context.Background(), "http://as.example.com", hc)
	if err == nil || !strings.Contains(err.Error(), "does not use https") || sent.Load() != 0 {
		t.Errorf("fetchAuthServerMetadata(http://as.example.com) = %v after %d requests; want a refusal before any request", err, sent.Load())
	}
	if _, err := fetchAuthServerMetadata(context.Background(), "http://127.0.0.1:9", hc); err != nil {
		t.Errorf("fetchAuthServerMetadata(loopback) = %v, want nil (every URL answered 404)", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
