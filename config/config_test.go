package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// errLines splits a joined error into its messages.
func errLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

// errorCase is a configuration and the problems it must be refused with.
type errorCase struct {
	name string
	src  string
	want []string
}

// checkErrors parses the source of every case and compares the problems
// with the case's; no message may contain any of secrets.
func checkErrors(t *testing.T, tests []errorCase, parse func(src string) (*Config, error), secrets ...string) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parse(tt.src)
			if err == nil {
				t.Fatalf("parsing succeeded with %d servers, want errors:\n%s", len(cfg.Servers), strings.Join(tt.want, "\n"))
			}
			if cfg != nil {
				t.Errorf("parsing returned a config with an error")
			}
			if diff := cmp.Diff(tt.want, errLines(err)); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s", diff)
			}
			for _, secret := range secrets {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error shows %q: %v", secret, err)
				}
			}
		})
	}
}

// noEnv is an environment with nothing set.
func noEnv(string) (string, bool) { return "", false }

// mapEnv is an environment holding exactly m.
func mapEnv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		{Error{File: "airlock.yaml", Line: 12, Path: "servers[1].allowed_tools", Msg: "is required"}, "airlock.yaml:12: servers[1].allowed_tools: is required"},
		{Error{File: "airlock.yaml", Path: "servers", Msg: "is required"}, "airlock.yaml: servers: is required"},
		{Error{File: "airlock.yaml", Line: 3, Msg: "invalid YAML"}, "airlock.yaml:3: invalid YAML"},
		{Error{Line: 3, Path: "x", Msg: "bad"}, "line 3: x: bad"},
		{Error{Msg: "bad"}, "bad"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestAllows(t *testing.T) {
	tests := []struct {
		allowed []string
		tool    string
		all     bool
		want    bool
	}{
		{nil, "read_file", false, false},
		{[]string{}, "read_file", false, false},
		{[]string{"*"}, "read_file", true, true},
		{[]string{"*"}, "*", true, true},
		{[]string{"read_file"}, "read_file", false, true},
		{[]string{"read_file"}, "write_file", false, false},
		{[]string{"read_file"}, "READ_FILE", false, false},
		{[]string{"read_file", "list_dir"}, "list_dir", false, true},
	}
	for _, tt := range tests {
		s := Server{AllowedTools: tt.allowed}
		if got := s.AllowsAll(); got != tt.all {
			t.Errorf("%v: AllowsAll() = %v, want %v", tt.allowed, got, tt.all)
		}
		if got := s.Allows(tt.tool); got != tt.want {
			t.Errorf("%v: Allows(%q) = %v, want %v", tt.allowed, tt.tool, got, tt.want)
		}
	}
}

func TestNoticesIsACopy(t *testing.T) {
	cfg, err := Parse([]byte("servers:\n  - {id: a, command: x, allowed_tools: []}\n"), "airlock.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Notices()
	want := []string{`server "a" exposes no tools: allowed_tools is empty (airlock.yaml:2)`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Notices() mismatch (-want +got):\n%s", diff)
	}
	got[0] = "changed"
	if diff := cmp.Diff(want, cfg.Notices()); diff != "" {
		t.Errorf("Notices() changed through a returned slice (-want +got):\n%s", diff)
	}
}

func TestErrorsAreErrorValues(t *testing.T) {
	_, err := Parse([]byte("servers:\n  - id: a\n    command: x\n    allowed_tools: []\n    transport: sse\n"), "airlock.yaml", t.TempDir())
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Parse error %v is not an *Error", err)
	}
	want := &Error{File: "airlock.yaml", Line: 5, Path: "servers[0].transport", Msg: `must be stdio or http, not "sse"`}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Errorf("error mismatch (-want +got):\n%s", diff)
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "abc", 0},
		{"comand", "command", 1},
		{"polcy", "policy", 1},
		{"allowed_tool", "allowed_tools", 1},
		{"srevers", "servers", 2},
		{"kitten", "sitting", 3},
		{"", "abc", 3},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestParseTimeout(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		msg  string
	}{
		{"30s", 30 * time.Second, ""},
		{"1m30s", 90 * time.Second, ""},
		{"24h", 24 * time.Hour, ""},
		{"500ms", 500 * time.Millisecond, ""},
		{"30", 0, `"30" has no unit: write a duration such as 30s or 2m`},
		{"0s", 0, `"0s" must be longer than zero`},
		{"-1s", 0, `"-1s" must be longer than zero`},
		{"25h", 0, `"25h" is longer than the limit of 24h`},
		{"soon", 0, `"soon" is not a duration: write one such as 30s, 1m30s or 2h`},
	}
	for _, tt := range tests {
		got, msg := parseTimeout(tt.in)
		if got != tt.want || msg != tt.msg {
			t.Errorf("parseTimeout(%q) = %v, %q; want %v, %q", tt.in, got, msg, tt.want, tt.msg)
		}
	}
}

func TestSuggestID(t *testing.T) {
	tests := []struct{ in, want string }{
		{"my server", "my-server"},
		{"github.com/x", "github-com-x"},
		{"ünïcode", "n-code"},
		{"...", "server"},
		{strings.Repeat("a", 40), strings.Repeat("a", 32)},
	}
	for _, tt := range tests {
		got := suggestID(tt.in)
		if got != tt.want {
			t.Errorf("suggestID(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if msg := checkID(got); msg != "" {
			t.Errorf("suggestID(%q) = %q, which is not a valid id: %s", tt.in, got, msg)
		}
	}
}

func TestTaskScopedServer(t *testing.T) {
	cfg, err := Parse([]byte(`servers:
  - id: ws
    scope: task
    command: airlock
    args: [server, workspace, --root, "${workspace}"]
    env: {NOTES: "${workspace}/notes"}
    allowed_tools: [read_file]
`), "airlock.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Servers[0]
	if !s.TaskScoped() || s.Cwd != "" {
		t.Fatalf("server = %+v, want task-scoped with no cwd until bound", s)
	}
	b := s.ForWorkspace("/w/t1")
	want := Server{ID: "ws", Transport: "stdio", Scope: "task", Command: "airlock",
		Args: []string{"server", "workspace", "--root", "/w/t1"}, Cwd: "/w/t1",
		Env:          map[string]string{"NOTES": "/w/t1/notes", WorkspaceEnv: "/w/t1"},
		AllowedTools: []string{"read_file"}, ProtocolVersions: s.ProtocolVersions,
		RequestTimeout: s.RequestTimeout, ConnectTimeout: s.ConnectTimeout, ProbeTimeout: s.ProbeTimeout,
		QueueTimeout: s.QueueTimeout, MaxConcurrency: s.MaxConcurrency, Source: s.Source}
	if diff := cmp.Diff(want, b); diff != "" {
		t.Errorf("ForWorkspace (-want +got):\n%s", diff)
	}
	if s.Args[3] != "${workspace}" || s.Env["NOTES"] != "${workspace}/notes" {
		t.Errorf("ForWorkspace changed the configuration: %+v", s)
	}
}
