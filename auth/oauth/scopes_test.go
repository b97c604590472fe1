package oauth_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/airlockhq/airlock/auth/oauth"
	"github.com/airlockhq/airlock/auth/oauth/oauthtest"
)

// sortScopes compares lists of scopes as the sets they are.
var sortScopes = cmpopts.SortSlices(func(a, b string) bool { return a < b })

// TestScopeSelection: scopes configured are requested as they are; left
// out, the server says which (the MCP specification's scope selection):
// the scope of its 401 challenge, else its resource metadata's
// scopes_supported. Where the authorization server lists offline_access,
// a person's login asks for it too.
func TestScopeSelection(t *testing.T) {
	all := []string{scopeRead, scopeWrite, oauthtest.ScopeAdmin}
	tests := []struct {
		name       string
		configured []string
		resource   *oauthtest.ResourceOptions
		as         *oauthtest.Options
		want       []string
	}{
		{"configured", []string{scopeWrite}, nil, nil, []string{scopeWrite, "offline_access"}},
		{"from the challenge", nil, nil, nil, []string{scopeRead, "offline_access"}},
		{"from scopes_supported", nil, &oauthtest.ResourceOptions{ChallengeScopes: []string{}}, nil, append(all, "offline_access")},
		{"configured over the challenge and scopes_supported", []string{oauthtest.ScopeAdmin}, nil, nil, []string{oauthtest.ScopeAdmin, "offline_access"}},
		{"no offline_access where it is not supported", nil, nil, &oauthtest.Options{NoOfflineAccess: true}, []string{scopeRead}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, &envOptions{resource: tt.resource, as: tt.as})
			e.srv.Scopes = tt.configured
			st := e.login()
			if diff := cmp.Diff([][]string{tt.want}, e.as.Requested(), sortScopes); diff != "" {
				t.Errorf("scopes requested (-want +got):\n%s", diff)
			}
			if !contains(st.Scopes, tt.want[0]) {
				t.Errorf("scopes granted = %q, want %s among them", st.Scopes, tt.want[0])
			}
		})
	}
}

// TestStepUpWithSelectedScopes: with no scopes configured, the first login
// asks for what the challenge names, and a step-up (consented) for the
// union of what was granted and what the server wants on top.
func TestStepUpWithSelectedScopes(t *testing.T) {
	e := newEnv(t, &envOptions{consent: func(context.Context, *oauth.StepUp) (bool, error) { return true, nil }})
	e.srv.Scopes = nil
	e.login()
	cs := e.openSession()
	if got, err := call(cs, "write"); err != nil || got != "write ok" {
		t.Fatalf("write after step-up = %q, %v", got, err)
	}
	want := [][]string{{scopeRead, "offline_access"}, {scopeRead, "offline_access", scopeWrite}}
	if diff := cmp.Diff(want, e.as.Requested(), sortScopes); diff != "" {
		t.Errorf("scopes requested (-want +got):\n%s", diff)
	}
	if e.consents.Load() != 1 {
		t.Errorf("consents asked = %d, want 1", e.consents.Load())
	}
}
