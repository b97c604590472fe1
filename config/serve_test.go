package config

import (
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
	got := serve("serve:\n  allowed_origins: [\"https://App.Example.com\", \"http://localhost:3000\"]\n  max_sessions: 50\n  session_idle_timeout: 5m\n")
	want := Serve{AllowedOrigins: []string{"https://app.example.com", "http://localhost:3000"}, MaxSessions: 50, SessionIdleTimeout: 5 * time.Minute}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Serve mismatch (-want +got):\n%s", diff)
	}
}

func TestParseServeErrors(t *testing.T) {
	const example = "such as https://app.example.com or http://localhost:3000"
	tests := []errorCase{
		{"auth is for a later version", server + "serve:\n  auth: {issuer: https://id.example.com}\n", []string{
			"airlock.yaml:6: serve.auth: inbound authentication is not supported by this version of Airlock: remove serve.auth, and serve HTTP on a loopback address only (airlock serve --http 127.0.0.1:PORT)"}},
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
	}
	checkErrors(t, tests, func(src string) (*Config, error) {
		return Parse([]byte(src), "airlock.yaml", t.TempDir())
	})
}
