package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// remoteServer is a valid remote server entry that cases extend.
const remoteServer = `servers:
  - id: r
    transport: http
    url: https://mcp.example.com/mcp
    allowed_hosts: [mcp.example.com]
    allowed_tools: [t]
`

// withOAuth extends remoteServer into a valid OAuth server.
const withOAuth = remoteServer + `    resource: https://mcp.example.com
    scopes: [mcp:issues.read]
    oauth: {client_id: airlock}
`

func TestParseRemote(t *testing.T) {
	dir := t.TempDir()
	base := func() Server {
		s := newServer(dir, "airlock.yaml:2")
		s.makeRemote()
		s.ID = "r"
		s.URL = "https://mcp.example.com/mcp"
		s.AllowedHosts = []string{"mcp.example.com"}
		s.AllowedTools = []string{"t"}
		return s
	}
	oauth := func(s *Server) {
		s.Resource = "https://mcp.example.com"
		s.Scopes = []string{"mcp:issues.read"}
		s.OAuth = &OAuth{ClientID: "airlock", RedirectURI: "http://127.0.0.1:8765/callback"}
	}
	tests := []struct {
		name string
		src  string
		want func(*Server)
	}{
		{"defaults", remoteServer, func(s *Server) {}},
		{"every remote key", `servers:
  - id: r
    transport: http
    scope: host
    url: https://MCP.example.com:8443/v1/mcp
    resource: https://auth-rs.example.com/
    allowed_hosts: [MCP.Example.com, auth-rs.example.com, 192.0.2.1, "[2001:db8::1]", under_score.internal]
    allow_private_networks: true
    scopes: [mcp:issues.read, "mcp:issues.write", "a!#[]~"]
    oauth:
      client_id: "id with spaces inside"
      client_metadata_url: https://airlock.example.com/client.json
      dynamic_registration: true
      redirect_uri: "http://[::1]:9000/oauth/cb"
    stream_read_timeout: 30s
    terminate_on_close: false
    request_timeout: 30s
    connect_timeout: 1s
    queue_timeout: 1m
    max_concurrency: 10000
    allowed_tools: [t]
`, func(s *Server) {
			s.URL = "https://MCP.example.com:8443/v1/mcp"
			s.Resource = "https://auth-rs.example.com/"
			s.AllowedHosts = []string{"mcp.example.com", "auth-rs.example.com", "192.0.2.1", "2001:db8::1", "under_score.internal"}
			s.AllowPrivateNetworks = true
			s.Scopes = []string{"mcp:issues.read", "mcp:issues.write", "a!#[]~"}
			s.OAuth = &OAuth{ClientID: "id with spaces inside", ClientMetadataURL: "https://airlock.example.com/client.json",
				DynamicRegistration: true, RedirectURI: "http://[::1]:9000/oauth/cb"}
			s.StreamReadTimeout = 30 * time.Second
			s.TerminateOnClose = false
			// A remote server's probe is bounded by request_timeout, not
			// by connect_timeout.
			s.ConnectTimeout = time.Second
			s.QueueTimeout = time.Minute
			s.MaxConcurrency = 10000
		}},
		{"oauth with client_id", withOAuth, oauth},
		{"oauth with empty strings", remoteServer + `    resource: https://mcp.example.com
    scopes: [mcp:issues.read]
    oauth: {client_id: "", client_metadata_url: "", dynamic_registration: true}
`, func(s *Server) {
			oauth(s)
			s.OAuth = &OAuth{DynamicRegistration: true, RedirectURI: "http://127.0.0.1:8765/callback"}
		}},
		{"development comes after servers", strings.NewReplacer("https://mcp.example.com/mcp", "http://127.0.0.1:8080/mcp",
			"[mcp.example.com]", "[127.0.0.1]").Replace(remoteServer) + "development: true\n", func(s *Server) {
			s.URL = "http://127.0.0.1:8080/mcp"
			s.AllowedHosts = []string{"127.0.0.1"}
		}},
		{"development allows localhost", `development: true
servers:
  - id: r
    transport: http
    url: http://localhost:3000/mcp
    resource: http://localhost:3000
    scopes: [s]
    oauth: {dynamic_registration: true}
    allowed_hosts: [localhost]
    allowed_tools: [t]
`, func(s *Server) {
			s.Source = "airlock.yaml:3"
			s.URL, s.Resource = "http://localhost:3000/mcp", "http://localhost:3000"
			s.AllowedHosts = []string{"localhost"}
			s.Scopes = []string{"s"}
			s.OAuth = &OAuth{DynamicRegistration: true, RedirectURI: "http://127.0.0.1:8765/callback"}
		}},
		{"oauth without scopes", strings.Replace(withOAuth, "    scopes: [mcp:issues.read]\n", "", 1), func(s *Server) {
			oauth(s)
			s.Scopes = nil
		}},
		{"oauth with the grant named", strings.Replace(withOAuth, "{client_id: airlock}", "{client_id: airlock, grant: authorization_code}", 1), func(s *Server) {
			oauth(s)
			s.OAuth.Grant = GrantAuthorizationCode
		}},
		{"a long request_timeout lengthens stream_read_timeout", remoteServer + "    request_timeout: 10m\n", func(s *Server) {
			s.RequestTimeout = 10 * time.Minute
			s.StreamReadTimeout = 10 * time.Minute
		}},
		{"a short request_timeout shortens the probe", remoteServer + "    request_timeout: 1s\n", func(s *Server) {
			s.RequestTimeout = time.Second
			s.ProbeTimeout = time.Second
		}},
		{"stream_read_timeout equal to request_timeout", remoteServer + "    request_timeout: 1m\n    stream_read_timeout: 1m\n", func(s *Server) {
			s.RequestTimeout = time.Minute
			s.StreamReadTimeout = time.Minute
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseYAML([]byte(tt.src), "airlock.yaml", dir, noEnv)
			if err != nil {
				t.Fatal(err)
			}
			want := base()
			tt.want(&want)
			if diff := cmp.Diff([]Server{want}, cfg.Servers); diff != "" {
				t.Errorf("Servers mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServerTimeouts(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		remote bool
		start  time.Duration
	}{
		{"stdio", server, false, 30 * time.Second},
		{"stdio connect_timeout", server + "    connect_timeout: 1m\n    request_timeout: 5s\n", false, time.Minute},
		{"http", remoteServer, true, 5*time.Second + 60*time.Second},
		{"http timeouts", remoteServer + "    connect_timeout: 2s\n    request_timeout: 10s\n", true, 22 * time.Second},
	}
	for _, tt := range tests {
		cfg, err := parseYAML([]byte(tt.src), "airlock.yaml", t.TempDir(), noEnv)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		s := cfg.Servers[0]
		if got := s.Remote(); got != tt.remote {
			t.Errorf("%s: Remote() = %v, want %v", tt.name, got, tt.remote)
		}
		if got := s.StartTimeout(); got != tt.start {
			t.Errorf("%s: StartTimeout() = %v, want %v", tt.name, got, tt.start)
		}
	}
}

func TestParseRemoteErrors(t *testing.T) {
	// url replaces the URL of remoteServer.
	url := func(u string) string {
		return strings.Replace(remoteServer, "https://mcp.example.com/mcp", u, 1)
	}
	// hosts replaces the allowed_hosts of remoteServer.
	hosts := func(h string) string {
		return strings.Replace(remoteServer, "[mcp.example.com]", h, 1)
	}
	// oauth replaces the oauth of withOAuth.
	oauth := func(o string) string {
		return strings.Replace(withOAuth, "{client_id: airlock}", o, 1)
	}
	const redirectRule = "use http://127.0.0.1:PORT/PATH, on which airlock listens for the login's answer"
	tests := []errorCase{
		// url.
		{"url missing", "servers:\n  - id: r\n    transport: http\n    allowed_hosts: [h]\n    allowed_tools: []\n", []string{
			"airlock.yaml:2: servers[0].url: is required for transport: http: give the server's MCP endpoint, such as https://mcp.example.com/mcp"}},
		{"url empty", url(`""`), []string{
			"airlock.yaml:4: servers[0].url: must not be empty: give an https URL, such as https://mcp.example.com/mcp"}},
		{"url list", url("[a]"), []string{
			"airlock.yaml:4: servers[0].url: must be a string, not a list"}},
		{"url plain http", url("http://mcp.example.com/mcp"), []string{
			`airlock.yaml:4: servers[0].url: URL "http://mcp.example.com/mcp" must use https (plain http is allowed only to a loopback address with an explicit port, in development mode)`}},
		{"url loopback http outside development", strings.Replace(url("http://127.0.0.1:8080/mcp"), "[mcp.example.com]", "[127.0.0.1]", 1) + "development: false\n", []string{
			`airlock.yaml:4: servers[0].url: URL "http://127.0.0.1:8080/mcp" must use https (plain http is allowed only to a loopback address with an explicit port, in development mode)`}},
		{"url loopback http without a port", strings.Replace(url("http://localhost/mcp"), "[mcp.example.com]", "[localhost]", 1) + "development: true\n", []string{
			`airlock.yaml:4: servers[0].url: URL "http://localhost/mcp" must use https (plain http is allowed only to a loopback address with an explicit port, in development mode)`}},
		{"url other scheme", url("ws://mcp.example.com/mcp"), []string{
			`airlock.yaml:4: servers[0].url: URL "ws://mcp.example.com/mcp" must use https`}},
		{"url host not allowed", url("https://evil.example.com/mcp"), []string{
			`airlock.yaml:4: servers[0].url: URL "https://evil.example.com/mcp" names host "evil.example.com", which is not in allowed_hosts`}},
		{"url user information", url("https://user:hunter2@mcp.example.com/mcp"), []string{
			`airlock.yaml:4: servers[0].url: URL "https://mcp.example.com/mcp" must not contain user information; use the server's credentials settings`}},
		{"url query", url("https://mcp.example.com/mcp?key=1"), []string{
			`airlock.yaml:4: servers[0].url: URL "https://mcp.example.com/mcp?key=1" must not contain a query`}},
		{"url fragment", url("https://mcp.example.com/mcp#x"), []string{
			`airlock.yaml:4: servers[0].url: URL "https://mcp.example.com/mcp#x" must not contain a fragment`}},
		{"url relative", url("/mcp"), []string{
			`airlock.yaml:4: servers[0].url: URL "/mcp" must use https`}},

		// allowed_hosts.
		{"allowed_hosts missing", strings.Replace(remoteServer, "    allowed_hosts: [mcp.example.com]\n", "", 1), []string{
			"airlock.yaml:2: servers[0].allowed_hosts: is required for transport: http: list the hosts url and resource may name, such as [mcp.example.com]"}},
		{"allowed_hosts empty", hosts("[]"), []string{
			"airlock.yaml:5: servers[0].allowed_hosts: must list at least one host, such as [mcp.example.com]: an empty list allows nothing"}},
		{"allowed_hosts string", hosts("mcp.example.com"), []string{
			"airlock.yaml:5: servers[0].allowed_hosts: must be a list such as [a, b], not a string"}},
		{"allowed_hosts entries", hosts(`
      - mcp.example.com
      - MCP.example.com
      - https://mcp.example.com
      - mcp.example.com:443
      - mcp.example.com/mcp
      - "*.example.com"
      - ""
      - example.com.
      - "bad host"
      - "bücher.example"
      - 999.1.1.1
      - "fe80::1%eth0"
      - -x.example.com
      - {a: b}`), []string{
			`airlock.yaml:7: servers[0].allowed_hosts[1]: "MCP.example.com" is listed twice (first at line 6)`,
			`airlock.yaml:8: servers[0].allowed_hosts[2]: "https://mcp.example.com" is a URL: give the host name alone, such as mcp.example.com`,
			`airlock.yaml:9: servers[0].allowed_hosts[3]: "mcp.example.com:443" has a port: give the host name alone, such as mcp.example.com (the port is part of url)`,
			`airlock.yaml:10: servers[0].allowed_hosts[4]: "mcp.example.com/mcp" is not a host name: give the host name alone, such as mcp.example.com`,
			`airlock.yaml:11: servers[0].allowed_hosts[5]: "*.example.com": patterns are not supported: list each host`,
			"airlock.yaml:12: servers[0].allowed_hosts[6]: must not be empty: give the host name alone, such as mcp.example.com",
			`airlock.yaml:13: servers[0].allowed_hosts[7]: "example.com." ends in a dot: write it without, as in the URL`,
			`airlock.yaml:14: servers[0].allowed_hosts[8]: "bad host" is not a valid host name: use letters, digits, - and . (the ASCII form of an international name)`,
			`airlock.yaml:15: servers[0].allowed_hosts[9]: "bücher.example" is not a valid host name: use letters, digits, - and . (the ASCII form of an international name)`,
			`airlock.yaml:16: servers[0].allowed_hosts[10]: "999.1.1.1" is neither an IP address nor a host name`,
			`airlock.yaml:17: servers[0].allowed_hosts[11]: "fe80::1%eth0" has an IPv6 zone, which a URL cannot name: remove it`,
			`airlock.yaml:18: servers[0].allowed_hosts[12]: "-x.example.com" is not a valid host name: use letters, digits, - and . (the ASCII form of an international name)`,
			"airlock.yaml:19: servers[0].allowed_hosts[13]: must be a string, not a mapping"}},
		// A refused allowlist does not also fail every URL.
		{"allowed_hosts refused, url not checked", strings.Replace(url("https://other.example.com/mcp"), "[mcp.example.com]", "[\"mcp.example.com:1\"]", 1), []string{
			`airlock.yaml:5: servers[0].allowed_hosts[0]: "mcp.example.com:1" has a port: give the host name alone, such as mcp.example.com (the port is part of url)`}},

		// The keys of a remote server.
		{"scope task", remoteServer + "    scope: task\n", []string{
			"airlock.yaml:7: servers[0].scope: a transport: http server is shared by every task: remove scope: task"}},
		{"every stdio key", remoteServer + "    command: x\n    args: []\n    cwd: .\n    env: {}\n    secret_env: {}\n", []string{
			"airlock.yaml:7: servers[0].command: is only for transport: stdio (a transport: http server is reached at its url): remove it",
			"airlock.yaml:8: servers[0].args: is only for transport: stdio (a transport: http server is reached at its url): remove it",
			"airlock.yaml:9: servers[0].cwd: is only for transport: stdio (a transport: http server is reached at its url): remove it",
			"airlock.yaml:10: servers[0].env: is only for transport: stdio (a transport: http server is reached at its url): remove it",
			"airlock.yaml:11: servers[0].secret_env: is only for transport: stdio (a transport: http server is reached at its url): remove it"}},
		{"misspelt remote key", remoteServer + "    urll: x\n    allowed_host: []\n", []string{
			`airlock.yaml:7: servers[0].urll: unknown key; did you mean "url"?`,
			`airlock.yaml:8: servers[0].allowed_host: unknown key; did you mean "allowed_hosts"?`}},
		{"oauth key in the server", remoteServer + "    client_id: x\n", []string{
			"airlock.yaml:7: servers[0].client_id: unknown key here: it belongs under oauth:"}},
		{"booleans", remoteServer + "    allow_private_networks: yes\n    terminate_on_close: 1\n", []string{
			"airlock.yaml:7: servers[0].allow_private_networks: must be true or false",
			"airlock.yaml:8: servers[0].terminate_on_close: must be true or false"}},
		{"stream_read_timeout shorter than request_timeout", remoteServer + "    request_timeout: 1m\n    stream_read_timeout: 30s\n", []string{
			"airlock.yaml:8: servers[0].stream_read_timeout: 30s is shorter than request_timeout (1m): a stream may go quiet at least as long as a request may take"}},
		{"stream_read_timeout shorter than the default request_timeout", remoteServer + "    stream_read_timeout: 10s\n", []string{
			"airlock.yaml:7: servers[0].stream_read_timeout: 10s is shorter than request_timeout (30s): a stream may go quiet at least as long as a request may take"}},
		{"stream_read_timeout not a duration", remoteServer + "    stream_read_timeout: 300\n", []string{
			`airlock.yaml:7: servers[0].stream_read_timeout: "300" has no unit: write a duration such as 30s or 2m`}},
		{"probe longer than request_timeout", remoteServer + "    request_timeout: 2s\n    probe_timeout: 3s\n", []string{
			"airlock.yaml:8: servers[0].probe_timeout: 3s is longer than request_timeout (2s): the probe is part of connecting"}},

		// OAuth.
		{"resource without oauth", remoteServer + "    resource: https://mcp.example.com\n", []string{
			"airlock.yaml:7: servers[0].resource: is only used with OAuth: set oauth: to use resource, or remove it"}},
		{"scopes without oauth", remoteServer + "    scopes: [a]\n", []string{
			"airlock.yaml:7: servers[0].scopes: is only used with OAuth: set oauth: to use scopes, or remove it"}},
		// Scopes may be left out: the server says which it needs.
		{"oauth without resource", remoteServer + "    oauth: {client_id: a}\n", []string{
			"airlock.yaml:7: servers[0].resource: is required with oauth: give the OAuth resource of the server, such as https://mcp.example.com; it is never guessed from url, which may differ"}},
		{"oauth empty", oauth("{}"), []string{
			"airlock.yaml:9: servers[0].oauth: says nothing about how airlock identifies itself to the authorization server: set client_id, client_metadata_url or dynamic_registration: true"}},
		{"oauth empty strings", oauth(`{client_id: "", client_metadata_url: "", dynamic_registration: false}`), []string{
			"airlock.yaml:9: servers[0].oauth: says nothing about how airlock identifies itself to the authorization server: set client_id, client_metadata_url or dynamic_registration: true"}},
		{"oauth null", oauth(""), []string{
			"airlock.yaml:9: servers[0].oauth: has no value: give key: value lines, or remove the key"}},
		{"oauth misspelt key", oauth("{clientid: a}"), []string{
			`airlock.yaml:9: servers[0].oauth.clientid: unknown key; did you mean "client_id"?`}},
		{"oauth values", oauth(`
      client_id: "a\x01b"
      client_metadata_url: http://airlock.example.com/client.json
      dynamic_registration: "true"
      redirect_uri: https://127.0.0.1:8765/callback`), []string{
			"airlock.yaml:10: servers[0].oauth.client_id: must be printable ASCII (RFC 6749)",
			"airlock.yaml:11: servers[0].oauth.client_metadata_url: must use https: it is fetched by the authorization server, such as https://airlock.example.com/client.json",
			"airlock.yaml:12: servers[0].oauth.dynamic_registration: must be true or false",
			"airlock.yaml:13: servers[0].oauth.redirect_uri: must use plain http (the answer never leaves this machine): " + redirectRule}},
		{"client_id spaces", oauth(`{client_id: " a"}`), []string{
			`airlock.yaml:9: servers[0].oauth.client_id: " a" has leading or trailing spaces`}},
		{"client_metadata_url root", oauth("{client_metadata_url: https://airlock.example.com/}"), []string{
			`airlock.yaml:9: servers[0].oauth.client_metadata_url: URL "https://airlock.example.com/" must have a path: the root of a site is not accepted as a client id, such as https://airlock.example.com/client.json`}},
		{"client_metadata_url query", oauth(`{client_metadata_url: "https://airlock.example.com/c?v=1"}`), []string{
			`airlock.yaml:9: servers[0].oauth.client_metadata_url: URL "https://airlock.example.com/c?v=1" must not contain a query`}},
		{"client_metadata_url user", oauth(`{client_metadata_url: "https://u:hunter2@airlock.example.com/c"}`), []string{
			`airlock.yaml:9: servers[0].oauth.client_metadata_url: URL "https://airlock.example.com/c" must not contain user information; use the server's credentials settings`}},
		{"client_metadata_url not a URL", oauth(`{client_metadata_url: "client.json"}`), []string{
			"airlock.yaml:9: servers[0].oauth.client_metadata_url: must be an absolute https URL with a path, such as https://airlock.example.com/client.json"}},
		{"redirect_uri default is not localhost", oauth(`{client_id: a, redirect_uri: "http://localhost:8765/callback"}`), []string{
			"airlock.yaml:9: servers[0].oauth.redirect_uri: must name a loopback IP address, not a host name (a name could lead elsewhere): " + redirectRule}},
		{"redirect_uri checks", oauth(`
      client_id: a
      redirect_uri: http://10.0.0.1:8765/callback`) + redirectServers(
			`"http://127.0.0.1/callback"`, `"http://127.0.0.1:0/callback"`, `"http://127.0.0.1:8765/cb?x=1"`,
			`"http://u:hunter2@127.0.0.1:8765/cb"`, `"http://127.0.0.1:8765/cb#f"`, `""`), []string{
			"airlock.yaml:11: servers[0].oauth.redirect_uri: must name a loopback address: " + redirectRule,
			"airlock.yaml:19: servers[1].oauth.redirect_uri: needs an explicit port: " + redirectRule,
			"airlock.yaml:27: servers[2].oauth.redirect_uri: has an invalid port: " + redirectRule,
			"airlock.yaml:35: servers[3].oauth.redirect_uri: must not contain a query: " + redirectRule,
			"airlock.yaml:43: servers[4].oauth.redirect_uri: must not contain user information: " + redirectRule,
			"airlock.yaml:51: servers[5].oauth.redirect_uri: must not contain a fragment: " + redirectRule,
			"airlock.yaml:59: servers[6].oauth.redirect_uri: is not an absolute URL: " + redirectRule}},
		{"resource checks", strings.Replace(withOAuth, "https://mcp.example.com\n", "http://auth.example.com\n", 1), []string{
			`airlock.yaml:7: servers[0].resource: URL "http://auth.example.com" names host "auth.example.com", which is not in allowed_hosts`}},
		{"resource empty", strings.Replace(withOAuth, "https://mcp.example.com\n", "\"\"\n", 1), []string{
			"airlock.yaml:7: servers[0].resource: must not be empty: give an https URL, such as https://mcp.example.com/mcp"}},
		{"scopes", strings.Replace(withOAuth, "[mcp:issues.read]", `[a, "a b", "q\"", 'back\slash', a, "", "é"]`, 1), []string{
			`airlock.yaml:8: servers[0].scopes[1]: "a b" is not an OAuth scope: use printable ASCII without spaces, " or \`,
			`airlock.yaml:8: servers[0].scopes[2]: "q\"" is not an OAuth scope: use printable ASCII without spaces, " or \`,
			`airlock.yaml:8: servers[0].scopes[3]: "back\\slash" is not an OAuth scope: use printable ASCII without spaces, " or \`,
			`airlock.yaml:8: servers[0].scopes[4]: "a" is listed twice (first at line 8)`,
			`airlock.yaml:8: servers[0].scopes[5]: "" is not an OAuth scope: use printable ASCII without spaces, " or \`,
			`airlock.yaml:8: servers[0].scopes[6]: "é" is not an OAuth scope: use printable ASCII without spaces, " or \`}},
		{"scopes empty", strings.Replace(withOAuth, "[mcp:issues.read]", "[]", 1), []string{
			"airlock.yaml:8: servers[0].scopes: must list at least one scope, such as [mcp:issues.read]"}},

		// Every transport.
		{"queue and concurrency", server + "    queue_timeout: 0s\n    max_concurrency: 0\n  - id: b\n    command: x\n    allowed_tools: []\n    max_concurrency: 10001\n", []string{
			`airlock.yaml:5: servers[0].queue_timeout: "0s" must be longer than zero`,
			"airlock.yaml:6: servers[0].max_concurrency: must be a whole number of calls from 1 to 10000",
			"airlock.yaml:10: servers[1].max_concurrency: must be a whole number of calls from 1 to 10000"}},

		// All at once, in line order, URL checks included.
		{"several", `servers:
  - id: r
    transport: http
    url: http://mcp.example.com/mcp
    allowed_hosts: [mcp.example.com]
    command: x
    scopes: [a]
    allowed_tools: []
  - id: s
    command: x
    url: https://x
    allowed_tools: []
limits: {max_calls_per_turn: 0}
`, []string{
			`airlock.yaml:4: servers[0].url: URL "http://mcp.example.com/mcp" must use https (plain http is allowed only to a loopback address with an explicit port, in development mode)`,
			"airlock.yaml:6: servers[0].command: is only for transport: stdio (a transport: http server is reached at its url): remove it",
			"airlock.yaml:7: servers[0].scopes: is only used with OAuth: set oauth: to use scopes, or remove it",
			"airlock.yaml:11: servers[1].url: is only for transport: http: set transport: http, or remove it",
			"airlock.yaml:13: limits.max_calls_per_turn: must be a whole number of calls from 1 to 100000"}},
	}
	checkErrors(t, tests, func(src string) (*Config, error) {
		return parseYAML([]byte(src), "airlock.yaml", t.TempDir(), noEnv)
	}, "hunter2")
}

func TestCheckHost(t *testing.T) {
	tests := []struct{ in, want string }{
		{"mcp.example.com", "mcp.example.com"},
		{"MCP.Example.COM", "mcp.example.com"},
		{"localhost", "localhost"},
		{"127.0.0.1", "127.0.0.1"},
		{"::1", "::1"},
		{"[::1]", "::1"},
		{"[2001:DB8::1]", "2001:db8::1"},
		{"a-b.c_d.example", "a-b.c_d.example"},
		{"xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"1.example", "1.example"},
		{strings.Repeat("a", 63) + ".example", strings.Repeat("a", 63) + ".example"},
	}
	for _, tt := range tests {
		got, msg := checkHost(tt.in)
		if got != tt.want || msg != "" {
			t.Errorf("checkHost(%q) = %q, %q; want %q", tt.in, got, msg, tt.want)
		}
	}
	for _, bad := range []string{"", "a..b", "a.-b", strings.Repeat("a", 64) + ".example",
		strings.Repeat("a.", 127) + "ab", "1.2.3", "[mcp.example.com]", "@host", "host?"} {
		if got, msg := checkHost(bad); msg == "" {
			t.Errorf("checkHost(%q) = %q, want a refusal", bad, got)
		}
	}
}

func TestOAuthClientSecretEnv(t *testing.T) {
	env := mapEnv(map[string]string{"ISSUES_SECRET": "s3cr3t-value", "EMPTY": ""})
	src := func(o string) string { return strings.Replace(withOAuth, "{client_id: airlock}", o, 1) }
	cfg, err := parseYAML([]byte(src("{client_id: airlock, client_secret_env: ISSUES_SECRET}")), "airlock.yaml", t.TempDir(), env)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers[0].OAuth.ClientSecretEnv; got != "ISSUES_SECRET" {
		t.Errorf("ClientSecretEnv = %q", got)
	}
	for _, tt := range []struct {
		oauth, want string
	}{
		{"{client_id: airlock, client_secret_env: NOPE}", "servers[0].oauth.client_secret_env: the host variable NOPE is not set"},
		{"{client_id: airlock, client_secret_env: EMPTY}", "servers[0].oauth.client_secret_env: the host variable EMPTY is empty"},
		{"{client_id: airlock, client_secret_env: 1BAD}", "servers[0].oauth.client_secret_env:"},
		{"{dynamic_registration: true, client_secret_env: ISSUES_SECRET}", "servers[0].oauth.client_secret_env: is only used with client_id"},
	} {
		_, err := parseYAML([]byte(src(tt.oauth)), "airlock.yaml", t.TempDir(), env)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("oauth %s: error %v, want %q", tt.oauth, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t-value") {
			t.Errorf("oauth %s: the error shows the secret", tt.oauth)
		}
	}
}

func TestCAFile(t *testing.T) {
	dir := t.TempDir()
	// Any certificate will do: this one is a test server's.
	pemCert := "-----BEGIN CERTIFICATE-----\nMIIBhTCCASugAwIBAgIQIRi6zePL6mKjOipn+dNuaTAKBggqhkjOPQQDAjASMRAw\nDgYDVQQKEwdBY21lIENvMB4XDTE3MTAyMDE5NDMwNloXDTE4MTAyMDE5NDMwNlow\nEjEQMA4GA1UEChMHQWNtZSBDbzBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABD0d\n7VNhbWvZLWPuj/RtHFjvtJBEwOkhbN/BnnE8rnZR8+sbwnc/KhCk3FhnpHZnQz7B\n5aETbbIgmuvewdjvSBSjYzBhMA4GA1UdDwEB/wQEAwICpDATBgNVHSUEDDAKBggr\nBgEFBQcDATAPBgNVHRMBAf8EBTADAQH/MCkGA1UdEQQiMCCCDmxvY2FsaG9zdDo1\nNDUzgg4xMjcuMC4wLjE6NTQ1MzAKBggqhkjOPQQDAgNIADBFAiEA2zpJEPQyz6/l\nWf86aX6PepsntZv2GYlA5UpabfT2EZICICpJ5h/iI+i341gBmLiAFQOyTDT+/wQc\n6MF9+Yw1Yy0t\n-----END CERTIFICATE-----\n"
	writeFiles(t, dir, map[string]string{"ca.pem": pemCert, "junk.pem": "not a certificate\n"})
	src := func(v string) string { return remoteServer + "    ca_file: " + v + "\n" }
	cfg, err := parseYAML([]byte(src("ca.pem")), "airlock.yaml", dir, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers[0].CAFile; got != dir+"/ca.pem" {
		t.Errorf("CAFile = %q, want the file beside the configuration", got)
	}
	for _, tt := range []struct{ src, want string }{
		{src("missing.pem"), `servers[0].ca_file: cannot read "missing.pem": no such file or directory`},
		{src("junk.pem"), `servers[0].ca_file: "junk.pem" holds no PEM certificate`},
		{src(`""`), "servers[0].ca_file: must not be empty"},
		{"servers:\n  - id: s\n    command: x\n    allowed_tools: []\n    ca_file: ca.pem\n", "servers[0].ca_file"},
	} {
		_, err := parseYAML([]byte(tt.src), "airlock.yaml", dir, noEnv)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.src, err, tt.want)
		}
	}
}

// redirectServers returns entries r2, r3, ... of servers:, remote servers
// with OAuth that differ only in their redirect_uri, one for each of uris.
func redirectServers(uris ...string) string {
	var b strings.Builder
	for i, uri := range uris {
		fmt.Fprintf(&b, `  - id: r%d
    transport: http
    url: https://mcp.example.com/mcp
    allowed_hosts: [mcp.example.com]
    allowed_tools: []
    resource: https://mcp.example.com
    scopes: [s]
    oauth: {client_id: a, redirect_uri: %s}
`, i+2, uri)
	}
	return b.String()
}

// TestOAuthClientCredentials: grant: client_credentials takes a client id
// and one way to prove it (a secret in a host variable, or a private key
// file only its owner may read), and refuses the keys of a person's login.
func TestOAuthClientCredentials(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"key.pem": "-----BEGIN PRIVATE KEY-----\nnot checked here\n-----END PRIVATE KEY-----\n", "open.pem": "x"})
	if err := os.Chmod(filepath.Join(dir, "key.pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "open.pem"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := mapEnv(map[string]string{"CI_SECRET": "s3cr3t-value"})
	src := func(o string) string {
		return strings.Replace(strings.Replace(withOAuth, "    scopes: [mcp:issues.read]\n", "", 1), "{client_id: airlock}", o, 1)
	}
	for _, tt := range []struct {
		oauth string
		want  OAuth
	}{
		{"{grant: client_credentials, client_id: ci, client_secret_env: CI_SECRET}",
			OAuth{Grant: GrantClientCredentials, ClientID: "ci", ClientSecretEnv: "CI_SECRET", RedirectURI: defaultRedirectURI}},
		{"{grant: client_credentials, client_id: ci, private_key_file: key.pem}",
			OAuth{Grant: GrantClientCredentials, ClientID: "ci", PrivateKeyFile: filepath.Join(dir, "key.pem"), RedirectURI: defaultRedirectURI}},
	} {
		cfg, err := parseYAML([]byte(src(tt.oauth)), "airlock.yaml", dir, env)
		if err != nil {
			t.Fatalf("%s: %v", tt.oauth, err)
		}
		o := cfg.Servers[0].OAuth
		if diff := cmp.Diff(&tt.want, o); diff != "" {
			t.Errorf("%s: OAuth mismatch (-want +got):\n%s", tt.oauth, diff)
		}
		if !o.ClientCredentials() {
			t.Errorf("%s: ClientCredentials() = false", tt.oauth)
		}
	}
	for _, tt := range []struct{ oauth, want string }{
		{"{grant: password, client_id: ci}", `servers[0].oauth.grant: "password" is not a grant airlock uses: give authorization_code (a person logs in, the default) or client_credentials`},
		{"{grant: client_credentials, client_secret_env: CI_SECRET}", "servers[0].oauth.client_id: is required with grant: client_credentials"},
		{"{grant: client_credentials, client_id: ci}", "servers[0].oauth: needs client_secret_env (the host variable that holds the client secret: client_secret_basic) or private_key_file"},
		{"{grant: client_credentials, client_id: ci, client_secret_env: CI_SECRET, private_key_file: key.pem}", "servers[0].oauth: has both client_secret_env and private_key_file"},
		{"{grant: client_credentials, client_id: ci, client_secret_env: CI_SECRET, dynamic_registration: true}", "servers[0].oauth.dynamic_registration: is not used with grant: client_credentials"},
		{"{grant: client_credentials, client_id: ci, client_secret_env: CI_SECRET, client_metadata_url: https://a.example.com/c.json}", "servers[0].oauth.client_metadata_url: is not used with grant: client_credentials"},
		{`{grant: client_credentials, client_id: ci, client_secret_env: CI_SECRET, redirect_uri: "http://127.0.0.1:9/cb"}`, "servers[0].oauth.redirect_uri: is not used with grant: client_credentials"},
		{"{grant: client_credentials, client_id: ci, private_key_file: open.pem}", `servers[0].oauth.private_key_file: "open.pem" may be read or written by others (mode 0644): make it readable only by its owner (chmod 600)`},
		{"{grant: client_credentials, client_id: ci, private_key_file: missing.pem}", `servers[0].oauth.private_key_file: file "missing.pem" does not exist`},
		{"{grant: client_credentials, client_id: ci, private_key_file: .}", `servers[0].oauth.private_key_file: "." is not a regular file`},
		{"{client_id: ci, private_key_file: key.pem}", "servers[0].oauth.private_key_file: is only used with grant: client_credentials"},
	} {
		_, err := parseYAML([]byte(src(tt.oauth)), "airlock.yaml", dir, env)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("oauth %s: error %v, want %q", tt.oauth, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t-value") {
			t.Errorf("oauth %s: the error shows the secret", tt.oauth)
		}
	}
}
