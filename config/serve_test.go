package config

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseServe(t *testing.T) {
	serve := func(src string) Serve {
		t.Helper()
		cfg, err := Parse([]byte(server+src), "airlock.yaml", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Serve
	}
	// Left out, or empty: zero, which the gateway reads as the defaults.
	if got := serve(""); !cmp.Equal(got, Serve{}) {
		t.Errorf("no serve: gives %+v, want the zero Serve", got)
	}
	if got := serve("serve: {}\n"); !cmp.Equal(got, Serve{}) {
		t.Errorf("serve: {} gives %+v, want the zero Serve", got)
	}
	got := serve("serve:\n  allowed_origins: [\"https://App.Example.com\", \"http://localhost:3000\"]\n  max_sessions: 50\n  session_idle_timeout: 5m\n  metrics_token_env: AIRLOCK_METRICS_TOKEN\n")
	want := Serve{AllowedOrigins: []string{"https://app.example.com", "http://localhost:3000"}, MaxSessions: 50, SessionIdleTimeout: 5 * time.Minute,
		MetricsTokenEnv: "AIRLOCK_METRICS_TOKEN"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Serve mismatch (-want +got):\n%s", diff)
	}

	// Inbound authentication: the user claim is sub unless given.
	got = serve("serve:\n  auth: {issuer: https://id.example.com, resource: https://airlock.example.com/mcp}\n")
	want = Serve{Auth: &ServeAuth{Issuer: "https://id.example.com", Resource: "https://airlock.example.com/mcp", UserClaim: "sub"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Serve with auth mismatch (-want +got):\n%s", diff)
	}
	got = serve("serve:\n  auth:\n    issuer: https://id.example.com/tenants/1\n    resource: https://airlock.example.com\n" +
		"    scopes: [mcp:tools, \"airlock:call\"]\n    tenant_claim: https://example.com/tenant\n    user_claim: email\n")
	want = Serve{Auth: &ServeAuth{Issuer: "https://id.example.com/tenants/1", Resource: "https://airlock.example.com",
		Scopes: []string{"mcp:tools", "airlock:call"}, TenantClaim: "https://example.com/tenant", UserClaim: "email"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Serve with every auth key mismatch (-want +got):\n%s", diff)
	}
	got = serve("serve:\n  auth: {issuer: https://id.example.com, resource: https://airlock.example.com/mcp}\n" +
		"  console: {client_id: airlock-console, operators: [acme/alice, bob]}\n")
	if c := got.Console; c == nil || c.ClientID != "airlock-console" || c.ClientSecretEnv != "" ||
		!slices.Equal(c.Operators, []ConsoleOperator{{Tenant: "acme", User: "alice"}, {User: "bob"}}) {
		t.Errorf("serve.console = %+v", c)
	}
	// In development mode, plain http to loopback with a port.
	got = serve("development: true\nserve:\n  auth: {issuer: \"http://127.0.0.1:9000\", resource: \"http://localhost:8080/mcp\"}\n")
	if a := got.Auth; a == nil || a.Issuer != "http://127.0.0.1:9000" || a.Resource != "http://localhost:8080/mcp" {
		t.Errorf("development serve.auth = %+v", a)
	}
}

func TestParseServeErrors(t *testing.T) {
	const example = "such as https://app.example.com or http://localhost:3000"
	tests := []errorCase{
		{"auth without issuer and resource", server + "serve:\n  auth: {scopes: [mcp:tools]}\n", []string{
			"airlock.yaml:6: serve.auth.issuer: is required: the authorization server whose access tokens the gateway accepts, such as https://id.example.com",
			"airlock.yaml:6: serve.auth.resource: is required: the gateway's own URL, as its clients reach it and as tokens name it in aud, such as https://airlock.example.com/mcp"}},
		{"auth keys", server + "serve:\n  auth:\n    issuer: http://id.example.com\n    resource: \"https://u:p@airlock.example.com/mcp?x=1\"\n" +
			"    scopes: [\"a b\", mcp:tools, mcp:tools]\n    tenant_claim: \"\"\n    user_claim: \" sub\"\n    audience: x\n", []string{
			`airlock.yaml:7: serve.auth.issuer: URL "http://id.example.com" must use https (plain http is allowed only to a loopback address with an explicit port, in development mode)`,
			`airlock.yaml:8: serve.auth.resource: URL "https://airlock.example.com/mcp?x=1" must not contain user information; use the server's credentials settings`,
			`airlock.yaml:9: serve.auth.scopes[0]: "a b" is not an OAuth scope: use printable ASCII without spaces, " or \`,
			`airlock.yaml:9: serve.auth.scopes[2]: "mcp:tools" is listed twice (first at line 9)`,
			`airlock.yaml:10: serve.auth.tenant_claim: must not be empty: name the token claim, such as tenant`,
			`airlock.yaml:11: serve.auth.user_claim: " sub" has leading or trailing spaces`,
			`airlock.yaml:12: serve.auth.audience: unknown key: expected one of issuer, resource, scopes, tenant_claim, user_claim`}},
		{"auth not development", server + "serve:\n  auth: {issuer: \"http://127.0.0.1:9000\", resource: not a url}\n", []string{
			"airlock.yaml:6: serve.auth.resource: must be an absolute https URL: the gateway's own URL, as its clients reach it and as tokens name it in aud, such as https://airlock.example.com/mcp",
			`airlock.yaml:6: serve.auth.issuer: URL "http://127.0.0.1:9000" must use https (plain http is allowed only to a loopback address with an explicit port, in development mode)`}},
		{"misspelt key", server + "serve: {max_session: 3}\n", []string{
			`airlock.yaml:5: serve.max_session: unknown key; did you mean "max_sessions"?`}},
		{"key of another section", server + "serve: {tenancy: {}}\n", []string{
			"airlock.yaml:5: serve.tenancy: unknown key here: it belongs at the top level"}},
		{"serve key at the top level", server + "max_sessions: 3\n", []string{
			"airlock.yaml:5: max_sessions: unknown key here: it belongs under serve:"}},
		{"not a mapping", server + "serve: yes\n", []string{
			"airlock.yaml:5: serve: must be a mapping (key: value lines), not a string"}},
		{"bad origins", server + "serve:\n  allowed_origins:\n    - \"*\"\n    - https://a.example.com/app\n    - ftp://a.example.com\n    - https://u:p@a.example.com\n    - https://a.example.com:0\n    - \"null\"\n    - https://A.example.com\n    - https://a.example.com\n", []string{
			`airlock.yaml:7: serve.allowed_origins[0]: "*" would let every web page call the gateway: list each origin, ` + example,
			`airlock.yaml:8: serve.allowed_origins[1]: "https://a.example.com/app" must not have a path, query or fragment: an origin is scheme://host[:port], ` + example,
			`airlock.yaml:9: serve.allowed_origins[2]: "ftp://a.example.com" must start with http:// or https://, ` + example,
			`airlock.yaml:10: serve.allowed_origins[3]: "https://u:p@a.example.com" must not contain user information: an origin is scheme://host[:port]`,
			`airlock.yaml:11: serve.allowed_origins[4]: "https://a.example.com:0" has an invalid port: use 1 to 65535`,
			`airlock.yaml:12: serve.allowed_origins[5]: "null" must start with http:// or https://, ` + example,
			`airlock.yaml:14: serve.allowed_origins[7]: "https://a.example.com" is listed twice (first at line 13)`}},
		{"bad numbers", server + "serve:\n  max_sessions: 0\n  session_idle_timeout: 0s\n", []string{
			"airlock.yaml:6: serve.max_sessions: must be a whole number of sessions from 1 to 1000000",
			`airlock.yaml:7: serve.session_idle_timeout: "0s" must be longer than zero`}},
		{"console without auth", server + "serve:\n  console: {client_id: c}\n", []string{
			"airlock.yaml:6: serve.console: is the console's sign-in at serve.auth.issuer: set serve.auth too, or remove serve.console (without serve.auth the console is for loopback, as whoever runs airlock)"}},
		{"console keys", server + "serve:\n  auth: {issuer: \"https://id.example.com\", resource: \"https://a.example.com/mcp\"}\n  console:\n" +
			"    client_secret_env: \"my secret\"\n    scopes: []\n    operators: [acme/, \"a b\", ok, t/u/v]\n    redirect: x\n", []string{
			"airlock.yaml:7: serve.console.client_id: is required: the console's client id, registered at serve.auth.issuer with the redirect URI https://HOST/console/callback",
			"airlock.yaml:8: serve.console.client_secret_env: is not the name of an environment variable (letters, digits and _, not starting with a digit): name the variable that holds the secret; the secret itself never goes in this file",
			"airlock.yaml:9: serve.console.scopes: must list at least one scope, such as [mcp:issues.read]",
			`airlock.yaml:10: serve.console.operators[0]: "acme/" is not an operator: give tenant/user or user, each 1 to 128 letters, digits, ., _, @, + or -`,
			`airlock.yaml:10: serve.console.operators[1]: "a b" is not an operator: give tenant/user or user, each 1 to 128 letters, digits, ., _, @, + or -`,
			`airlock.yaml:10: serve.console.operators[3]: "t/u/v" is not an operator: give tenant/user or user, each 1 to 128 letters, digits, ., _, @, + or -`,
			"airlock.yaml:11: serve.console.redirect: unknown key: expected one of client_id, client_secret_env, scopes, operators"}},
		{"bad metrics token variable", server + "serve:\n  metrics_token_env: 1TOKEN\n", []string{
			`airlock.yaml:6: serve.metrics_token_env: is not the name of an environment variable (letters, digits and _, not starting with a digit): name the variable that holds the secret; the secret itself never goes in this file`}},
	}
	checkErrors(t, tests, func(src string) (*Config, error) {
		return Parse([]byte(src), "airlock.yaml", t.TempDir())
	})
}
