package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/store"
)

// TestRecoveryShowsArguments: a write whose outcome is unknown keeps its
// arguments, redacted, on its journal record; recovery show prints them
// (text and JSON) without the secret_env value or a credential, and the
// command the call's hint prints runs as printed.
func TestRecoveryShowsArguments(t *testing.T) {
	const secret = "s3cr3t-host-value-42"
	const token = "ghp_0123456789abcdefghijklmnopqrstuvwxyz"
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "airlock.yaml"), testServerYAML(t, `["*"]`, envTestMark, filepath.Join(t.TempDir(), "mark"))+
		`    request_timeout: 1s
    secret_env: {SERVICE_TOKEN: HOST_SERVICE_TOKEN}
policy:
  rules:
    - {server: w, tool: "*", decision: allow}
`)
	env := []string{"HOST_SERVICE_TOKEN=" + secret}
	args := `{"path": "notes/today.txt", "text": "made with ` + secret + `", "auth": "` + token + `", "\u202eevil": 1}`
	r := runCLIEnv(t, dir, env, "", "call", "w__slow_write", "--args", args).want(t, 4)
	m := regexp.MustCompile(`airlock recovery resolve (rec_[0-9a-f]+) --outcome applied\b`).FindStringSubmatch(r.stderr)
	if m == nil || !strings.Contains(r.stderr, "airlock recovery show "+m[1]) {
		t.Fatalf("outcome_unknown: stderr = %q, want the show command and a resolve command that runs as printed", r.stderr)
	}
	id := m[1]

	show := runCLIEnv(t, dir, env, "", "recovery", "show", id).want(t, 0)
	for _, want := range []string{
		`"path": "notes/today.txt"`, `"text": "made with [REDACTED:secret]"`, `"auth": "[REDACTED:`, `"\u202eevil": 1`,
		"made for default/", "airlock recovery resolve " + id + " --outcome not-applied\n",
	} {
		if !strings.Contains(show.stdout, want) {
			t.Errorf("recovery show lacks %q:\n%s", want, show.stdout)
		}
	}
	js := runCLIEnv(t, dir, env, "", "recovery", "show", id, "--json").want(t, 0)
	var rec struct {
		Arguments map[string]any `json:"arguments"`
	}
	if err := json.Unmarshal([]byte(js.stdout), &rec); err != nil || rec.Arguments["path"] != "notes/today.txt" {
		t.Errorf("recovery show --json: arguments %v, %v; want the path among them:\n%s", rec.Arguments, err, js.stdout)
	}
	for _, out := range []string{show.stdout, js.stdout} {
		if strings.Contains(out, secret) || strings.Contains(out, token) || strings.Contains(out, "\u202e") {
			t.Errorf("recovery show prints a secret or a hidden character:\n%s", out)
		}
	}

	// The hint's command, word for word.
	runCLIEnv(t, dir, env, "", strings.Fields(m[0])[1:]...).want(t, 0)
	if show := runCLIEnv(t, dir, env, "", "recovery", "show", id).want(t, 0); !strings.Contains(show.stdout, "resolved as applied") {
		t.Errorf("after the hint's command, recovery show = %q", show.stdout)
	}
}

// TestRecoveryShowEscapesDetail: a record's detail quotes a server (the
// message of its JSON-RPC error); recovery show prints it with what a
// terminal would obey escaped, as call does, never raw.
func TestRecoveryShowEscapesDetail(t *testing.T) {
	r := store.Record{Intent: store.Intent{ID: "rec_1", Server: "r", Tool: "r__boom"}, Status: store.OutcomeFailed,
		Detail: "r__boom: server answered with JSON-RPC error -32000: bad \x1b[2J\x1b]0;title\a \u202eevil"}
	var b strings.Builder
	printRecord(&b, r)
	if out := b.String(); strings.ContainsAny(out, "\x1b\a\u202e") {
		t.Errorf("recovery show prints a server's escape sequences raw:\n%q", out)
	}
}
