package config

import (
	"errors"
	"os/user"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTenancy(t *testing.T) {
	tests := []struct {
		name string
		src  string
		env  map[string]string
		want Tenancy
	}{
		{"defaults", server, map[string]string{"USER": "alice"}, Tenancy{Tenant: "default", User: "alice"}},
		{"empty mapping", server + "tenancy: {}\n", map[string]string{"USER": "alice"}, Tenancy{Tenant: "default", User: "alice"}},
		{"given", server + "tenancy: {tenant: acme, user: bob}\n", map[string]string{"USER": "alice"}, Tenancy{Tenant: "acme", User: "bob"}},
		{"expanded", server + "tenancy: {tenant: \"${TENANT:-acme}\", user: \"${USER}\"}\n", map[string]string{"USER": "alice"}, Tenancy{Tenant: "acme", User: "alice"}},
		{"every character", server + "tenancy:\n  tenant: A-Z.a_z+0@9\n  user: \"" + strings.Repeat("u", 128) + "\"\n", nil,
			Tenancy{Tenant: "A-Z.a_z+0@9", User: strings.Repeat("u", 128)}},
		{"a user given needs no $USER", server + "tenancy: {user: carol}\n", map[string]string{"USER": "not valid"}, Tenancy{Tenant: "default", User: "carol"}},
	}
	// Where USER is unset (cron, containers, services), ${USER} is the
	// account's name, as the default user is, unless the reference gives
	// its own default.
	if u, err := user.Current(); err == nil && partitionPattern.MatchString(u.Username) {
		tests = append(tests,
			struct {
				name string
				src  string
				env  map[string]string
				want Tenancy
			}{"${USER} without USER", server + "tenancy: {tenant: \"t-${USER}\", user: \"${USER}\"}\n", nil, Tenancy{Tenant: "t-" + u.Username, User: u.Username}},
			struct {
				name string
				src  string
				env  map[string]string
				want Tenancy
			}{"${USER} with USER empty", server + "tenancy: {user: \"${USER}\"}\n", map[string]string{"USER": ""}, Tenancy{Tenant: "default", User: u.Username}},
			struct {
				name string
				src  string
				env  map[string]string
				want Tenancy
			}{"${USER:-x} without USER", server + "tenancy: {user: \"${USER:-x}\"}\n", nil, Tenancy{Tenant: "default", User: "x"}},
		)
	}
	for _, tt := range tests {
		cfg, err := parseYAML([]byte(tt.src), "airlock.yaml", t.TempDir(), mapEnv(tt.env))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, cfg.Tenancy); diff != "" {
			t.Errorf("%s: Tenancy mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestParseTenancyErrors(t *testing.T) {
	const rule = "use 1 to 128 letters, digits, ., _, @, + or -"
	tests := []struct {
		name string
		src  string
		env  map[string]string
		want []string
	}{
		{"not a mapping", server + "tenancy: acme\n", map[string]string{"USER": "alice"}, []string{
			"airlock.yaml:5: tenancy: must be a mapping (key: value lines), not a string"}},
		{"misspelt key", server + "tenancy: {tenent: acme}\n", map[string]string{"USER": "alice"}, []string{
			`airlock.yaml:5: tenancy.tenent: unknown key; did you mean "tenant"?`}},
		{"tenancy key in a server", server + "    user: x\n", map[string]string{"USER": "alice"}, []string{
			`airlock.yaml:5: servers[0].user: unknown key: expected one of ` + strings.Join(serverKeys.known, ", ")}},
		{"invalid values", server + "tenancy:\n  tenant: \"a b\"\n  user: \"" + strings.Repeat("u", 129) + "\"\n", nil, []string{
			`airlock.yaml:6: tenancy.tenant: "a b" is not a valid tenant: ` + rule,
			`airlock.yaml:7: tenancy.user: "` + strings.Repeat("u", 64) + `"… is not a valid user: ` + rule}},
		{"empty", server + "tenancy: {tenant: \"\", user: ~}\n", map[string]string{"USER": "alice"}, []string{
			`airlock.yaml:5: tenancy.tenant: "" is not a valid tenant: ` + rule,
			"airlock.yaml:5: tenancy.user: has no value: give one, or remove the key"}},
		{"not a string", server + "tenancy: {tenant: [a]}\n", map[string]string{"USER": "alice"}, []string{
			"airlock.yaml:5: tenancy.tenant: must be a string, not a list"}},
		{"unset variable", server + "tenancy: {user: \"${AIRLOCK_USER}\"}\n", nil, []string{
			"airlock.yaml:5: tenancy.user: ${AIRLOCK_USER} is not set in the environment and has no default: set AIRLOCK_USER, or write ${AIRLOCK_USER:-default}"}},
		// The expanded value came from the environment and is not shown.
		{"expands to an invalid value", server + "tenancy: {user: \"${AIRLOCK_USER}\", tenant: \"${EMPTY}\"}\n", map[string]string{"AIRLOCK_USER": "canary value", "EMPTY": ""}, []string{
			`airlock.yaml:5: tenancy.tenant: "${EMPTY}" does not expand to a valid tenant: ` + rule,
			`airlock.yaml:5: tenancy.user: "${AIRLOCK_USER}" does not expand to a valid user: ` + rule}},
		{"default user invalid", server, map[string]string{"USER": "canary value"}, []string{
			"airlock.yaml: tenancy.user: the user name of $USER is not a valid user (" + rule + "): set tenancy.user in an airlock.yaml"}},
		{"default user invalid with tenancy", server + "tenancy: {tenant: acme}\n", map[string]string{"USER": "a/b"}, []string{
			"airlock.yaml:5: tenancy.user: the user name of $USER is not a valid user (" + rule + "): set tenancy.user in an airlock.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseYAML([]byte(tt.src), "airlock.yaml", t.TempDir(), mapEnv(tt.env))
			if err == nil {
				t.Fatalf("Parse succeeded with %+v, want errors:\n%s", cfg.Tenancy, strings.Join(tt.want, "\n"))
			}
			if diff := cmp.Diff(tt.want, errLines(err)); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s", diff)
			}
			if strings.Contains(err.Error(), "canary") {
				t.Errorf("error shows a value from the environment: %v", err)
			}
		})
	}
}

func TestDefaultUser(t *testing.T) {
	account := func(name string) func() (*user.User, error) {
		return func() (*user.User, error) { return &user.User{Username: name}, nil }
	}
	noAccount := func() (*user.User, error) { return nil, errors.New("no passwd entry") }
	tests := []struct {
		name    string
		env     map[string]string
		current func() (*user.User, error)
		want    string
		bad     bool
	}{
		{"$USER", map[string]string{"USER": "alice"}, account("root"), "alice", false},
		{"$USER unset", nil, account("root"), "root", false},
		{"$USER empty", map[string]string{"USER": ""}, account("root"), "root", false},
		{"no account", nil, noAccount, "default", false},
		{"account without a name", nil, account(""), "default", false},
		{"$USER invalid", map[string]string{"USER": "a b"}, account("root"), "", true},
		{"account name invalid", nil, account(`DOMAIN\alice`), "", true},
	}
	for _, tt := range tests {
		got, msg := defaultUser(mapEnv(tt.env), tt.current)
		if got != tt.want || (msg != "") != tt.bad {
			t.Errorf("%s: defaultUser() = %q, %q; want %q, refused %v", tt.name, got, msg, tt.want, tt.bad)
		}
	}
}

func TestParseMCPServersDefaultUser(t *testing.T) {
	src := []byte(`{"mcpServers": {"a": {"command": "x"}}}`)
	cfg, err := parseMCPServers(src, "mcp.json", t.TempDir(), nil, mapEnv(map[string]string{"USER": "alice"}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Tenancy{Tenant: "default", User: "alice"}, cfg.Tenancy); diff != "" {
		t.Errorf("Tenancy mismatch (-want +got):\n%s", diff)
	}
	_, err = parseMCPServers(src, "mcp.json", t.TempDir(), nil, mapEnv(map[string]string{"USER": "a b"}))
	want := []string{"mcp.json: the user name of $USER is not a valid user (use 1 to 128 letters, digits, ., _, @, + or -): set tenancy.user in an airlock.yaml"}
	if diff := cmp.Diff(want, errLines(err)); diff != "" {
		t.Errorf("errors mismatch (-want +got):\n%s", diff)
	}
}

func TestParseEgress(t *testing.T) {
	good := []string{
		"http://proxy.internal:3128",
		"https://proxy.internal",
		"https://proxy.internal/",
		"http://10.0.0.1:8080",
		"http://[::1]:3128",
		"HTTP://Proxy.Internal:3128",
	}
	for _, p := range good {
		cfg, err := parseYAML([]byte(server+"egress: {proxy: \""+p+"\"}\n"), "airlock.yaml", t.TempDir(), noEnv)
		if err != nil {
			t.Errorf("proxy %q: %v", p, err)
			continue
		}
		if got := cfg.Egress.Proxy; got != p {
			t.Errorf("Proxy = %q, want %q", got, p)
		}
	}
	cfg, err := parseYAML([]byte(server+"egress: {}\n"), "airlock.yaml", t.TempDir(), noEnv)
	if err != nil || cfg.Egress.Proxy != "" {
		t.Errorf("egress: {} gave %+v, %v; want no proxy", cfg, err)
	}

	tests := []struct{ proxy, want string }{
		{"", "must not be empty: give the proxy's URL, such as http://proxy.internal:3128, or remove the key for no proxy"},
		{"proxy.internal:3128", "must be an http or https URL, such as http://proxy.internal:3128"},
		{"socks5://proxy.internal:1080", "must be an http or https URL, such as http://proxy.internal:3128"},
		{"http://", "must name the proxy's host, such as http://proxy.internal:3128"},
		{"http:proxy", "must name the proxy's host, such as http://proxy.internal:3128"},
		{"http://u:hunter2@proxy.internal:3128", "must not contain user information: credentials do not belong in the configuration"},
		{"http://proxy.internal:3128/?a=1", "must not contain a query: give the scheme, host and port only"},
		{"http://proxy.internal:3128?", "must not contain a query: give the scheme, host and port only"},
		{"http://proxy.internal:3128#f", "must not contain a fragment: give the scheme, host and port only"},
		{"http://proxy.internal:3128/path", "must not contain a path: give the scheme, host and port only"},
		{"http://proxy.internal:0", "has an invalid port: use 1 to 65535"},
		{"http://proxy.internal:70000", "has an invalid port: use 1 to 65535"},
		{"http://proxy.internal:", "has an empty port: give one, or leave out the colon"},
		{"http://proxy internal", "is not a URL: give one such as http://proxy.internal:3128"},
	}
	for _, tt := range tests {
		_, err := parseYAML([]byte(server+"egress:\n  proxy: \""+tt.proxy+"\"\n"), "airlock.yaml", t.TempDir(), noEnv)
		want := []string{"airlock.yaml:6: egress.proxy: " + tt.want}
		if diff := cmp.Diff(want, errLines(err)); diff != "" {
			t.Errorf("proxy %q: errors mismatch (-want +got):\n%s", tt.proxy, diff)
		}
	}
	for src, want := range map[string]string{
		"egress: {prox: x}\n":    `airlock.yaml:5: egress.prox: unknown key; did you mean "proxy"?`,
		"egress: proxy\n":        "airlock.yaml:5: egress: must be a mapping (key: value lines), not a string",
		"proxy: http://p:3128\n": "airlock.yaml:5: proxy: unknown key here: it belongs under egress:",
	} {
		_, err := parseYAML([]byte(server+src), "airlock.yaml", t.TempDir(), noEnv)
		if diff := cmp.Diff([]string{want}, errLines(err)); diff != "" {
			t.Errorf("%q: errors mismatch (-want +got):\n%s", src, diff)
		}
	}
}
