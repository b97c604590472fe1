package policy

import (
	"path"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/unicode/norm"
)

// pathPolicy allows writes under src/ and /srv/data/, except secrets.
const pathPolicy = `policy:
  rules:
    - server: fs
      tool: write_file
      decision: allow
      args:
        - pointer: /path
          allow: ["src/**", "/srv/data/**"]
          deny: ["**/.env", "**/.git/**", "src/secret*", "src/café/**"]
`

func TestPathConstraints(t *testing.T) {
	p := compile(t, pathPolicy, nil)
	const outside = `/path is outside the allowed paths ("src/**", "/srv/data/**")`
	tests := []struct {
		path string
		want string // "" when allowed, else the failed check
	}{
		{"src/a.go", ""},
		{"src/deep/er/a.go", ""},
		{"src", ""}, // src/** covers the directory itself

		// Cleaning: ./, double slashes, trailing slashes, dot segments.
		{"./src/a.go", ""},
		{"src//a.go", ""},
		{"src/./a.go", ""},
		{"src/", ""},
		{"src/sub/", ""},
		{"src/../src/a.go", ""},
		{"src/../docs/a.md", outside},
		{"", outside}, // cleans to "."
		{".", outside},
		{"srcx/a.go", outside},
		{"docs/a.md", outside},

		// .. cannot slip through.
		{"..", "/path leaves the directory it is relative to (..)"},
		{"../src/a.go", "/path leaves the directory it is relative to (..)"},
		{"a/../../etc", "/path leaves the directory it is relative to (..)"},
		{"src/../../etc/passwd", "/path leaves the directory it is relative to (..)"},
		{"src/link/../../../etc", "/path leaves the directory it is relative to (..)"},

		// Absolute paths match only absolute globs.
		{"/etc/passwd", outside},
		{"/src/a.go", outside},
		{"/srv/data/x.csv", ""},
		{"//srv/data/x.csv", ""},
		{"/srv/data/../../etc/passwd", outside},
		{"/../srv/data/x", ""}, // / has no parent: cleans to /srv/data/x

		// Denied paths win over allowed ones, ignoring case.
		{"src/.env", `/path is a denied path ("**/.env")`},
		{"src/a/.env/", `/path is a denied path ("**/.env")`},
		{"src/.ENV", `/path is a denied path ("**/.env")`},
		{"src/.Env", `/path is a denied path ("**/.env")`},
		{"src/.git/config", `/path is a denied path ("**/.git/**")`},
		{"src/.GIT/config", `/path is a denied path ("**/.git/**")`},
		{"src/.git", `/path is a denied path ("**/.git/**")`},
		{"src/Secret.txt", `/path is a denied path ("src/secret*")`},
		{"src/x/../secrets", `/path is a denied path ("src/secret*")`},
		{"/srv/data/.env", `/path is a denied path ("**/.env")`},
		// The same name in decomposed Unicode (e + combining acute).
		{"src/cafe\u0301/menu", `/path is a denied path ("src/café/**")`},
		{"src/CAFÉ/menu", `/path is a denied path ("src/café/**")`},

		// Allowed paths are case-sensitive: a miss can only deny.
		{"SRC/a.go", outside},
		{"Src/a.go", outside},

		// Backslashes, home directories, drives, NUL.
		{`src\..\..\etc\passwd`, "/path contains a backslash, which a server may read as a separator; such a path is never allowed"},
		{`src\a.go`, "/path contains a backslash, which a server may read as a separator; such a path is never allowed"},
		{`src\.env`, `/path is a denied path ("**/.env")`},
		{"~/.ssh/id_ed25519", "/path starts with ~ or a drive letter, which a server may expand; such a path is never allowed"},
		{"~root/x", "/path starts with ~ or a drive letter, which a server may expand; such a path is never allowed"},
		{"C:/Windows/x", "/path starts with ~ or a drive letter, which a server may expand; such a path is never allowed"},
		{"src/a\x00.go", "/path contains a NUL character"},

		// Policy is lexical: a symbolic link src/link -> / is not followed,
		// so this passes; the server's own confinement (os.Root in the
		// workspace server) must refuse it.
		{"src/link/etc/passwd", ""},
	}
	for _, tt := range tests {
		d := p.Decide(call("fs", "write_file", map[string]any{"path": tt.path}))
		want := Decision{Verdict: Allow, Effect: External, Rule: "policy.rules[0] (airlock.yaml:7)", Reason: "allowed by policy.rules[0] (airlock.yaml:7)"}
		if tt.want != "" {
			want.Verdict = Deny
			want.Reason = "denied by policy.rules[0] (airlock.yaml:7), args[0] (airlock.yaml:11): " + tt.want
		}
		if diff := cmp.Diff(want, d); diff != "" {
			t.Errorf("path %q (-want +got):\n%s", tt.path, diff)
		}
	}
}

func TestDenyOnlyConstraint(t *testing.T) {
	p := compile(t, `policy:
  rules:
    - server: fs
      decision: allow
      args: [{pointer: /path, deny: ["**/.env", "[A-z]x"]}]
`, nil)
	tests := []struct {
		path  string
		allow bool
	}{
		{"a/b", true},
		{"../outside", true}, // no allow globs: only the deny globs apply
		{"/abs/x", true},
		{"/abs/.env", false},
		{".env", false},
		{`a\.ENV`, false},
		// [A-z] holds _, which folding to [a-z] would lose.
		{"_x", false},
		{"Qx", false},
		{"qx", false},
		{"1x", true},
	}
	for _, tt := range tests {
		d := p.Decide(call("fs", "write_file", map[string]any{"path": tt.path}))
		if got := d.Verdict == Allow; got != tt.allow {
			t.Errorf("path %q: verdict %s (%s), want allowed = %v", tt.path, d.Verdict, d.Reason, tt.allow)
		}
	}
}

func TestArgConstraints(t *testing.T) {
	p := compile(t, `policy:
  rules:
    - server: gh
      tool: search
      decision: allow
      args:
        - {pointer: /mode, enum: [open, closed]}
        - {pointer: /query, pattern: "[a-z ]{1,20}"}
    - server: fs
      tool: read_many
      decision: allow
      args: [{pointer: /paths, allow: ["src/**"]}]
    - server: web
      tool: fetch
      decision: ask
      args:
        - {pointer: "/a~1b/~0c", enum: [x]}
        - {pointer: /list/1, enum: [y]}
`, nil)
	searchOK := "allowed by policy.rules[0] (airlock.yaml:7)"
	search := func(why string) string {
		return "denied by policy.rules[0] (airlock.yaml:7), " + why
	}
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"enum and pattern pass", call("gh", "search", args(t, `{"mode": "open", "query": "bug report"}`)), searchOK},
		{"no arguments", call("gh", "search", nil), search("args[0] (airlock.yaml:11): /mode is missing from the arguments")},
		{"missing pointer", call("gh", "search", args(t, `{"query": "x"}`)), search("args[0] (airlock.yaml:11): /mode is missing from the arguments")},
		{"case-variant key", call("gh", "search", args(t, `{"Mode": "open", "query": "x"}`)), search("args[0] (airlock.yaml:11): /mode is missing from the arguments")},
		{"wrong type number", call("gh", "search", args(t, `{"mode": 1, "query": "x"}`)), search("args[0] (airlock.yaml:11): /mode is a number, not a string")},
		{"wrong type null", call("gh", "search", args(t, `{"mode": null, "query": "x"}`)), search("args[0] (airlock.yaml:11): /mode is null, not a string")},
		{"wrong type object", call("gh", "search", args(t, `{"mode": {"open": true}, "query": "x"}`)), search("args[0] (airlock.yaml:11): /mode is an object, not a string")},
		{"wrong type boolean", call("gh", "search", args(t, `{"mode": "open", "query": true}`)), search("args[1] (airlock.yaml:12): /query is a boolean, not a string")},
		{"enum is exact", call("gh", "search", args(t, `{"mode": "Open", "query": "x"}`)), search(`args[0] (airlock.yaml:11): /mode is not one of "open", "closed"`)},
		{"enum no trimming", call("gh", "search", args(t, `{"mode": "open ", "query": "x"}`)), search(`args[0] (airlock.yaml:11): /mode is not one of "open", "closed"`)},
		{"pattern is anchored", call("gh", "search", args(t, `{"mode": "open", "query": "bug; rm -rf /"}`)), search(`args[1] (airlock.yaml:12): /query does not match the pattern "[a-z ]{1,20}"`)},
		{"pattern length", call("gh", "search", args(t, `{"mode": "open", "query": "aaaaaaaaaaaaaaaaaaaaa"}`)), search(`args[1] (airlock.yaml:12): /query does not match the pattern "[a-z ]{1,20}"`)},
		{"pattern newline", call("gh", "search", args(t, `{"mode": "open", "query": "ok\nok"}`)), search(`args[1] (airlock.yaml:12): /query does not match the pattern "[a-z ]{1,20}"`)},

		{"array of paths", call("fs", "read_many", args(t, `{"paths": ["src/a", "src/b"]}`)), "allowed by policy.rules[1] (airlock.yaml:13)"},
		{"empty array", call("fs", "read_many", args(t, `{"paths": []}`)), "allowed by policy.rules[1] (airlock.yaml:13)"},
		{"array with a bad path", call("fs", "read_many", args(t, `{"paths": ["src/a", "../etc"]}`)),
			"denied by policy.rules[1] (airlock.yaml:13), args[0] (airlock.yaml:16): /paths/1 leaves the directory it is relative to (..)"},
		{"array with a number", call("fs", "read_many", args(t, `{"paths": ["src/a", 7]}`)),
			"denied by policy.rules[1] (airlock.yaml:13), args[0] (airlock.yaml:16): /paths/1 is a number, not a string"},
		{"nested array", call("fs", "read_many", args(t, `{"paths": [["src/a"]]}`)),
			"denied by policy.rules[1] (airlock.yaml:13), args[0] (airlock.yaml:16): /paths/0 is an array, not a string"},

		{"escaped pointer", call("web", "fetch", args(t, `{"a/b": {"~c": "x"}, "list": ["x", "y"]}`)), "policy.rules[2] (airlock.yaml:17) asks for a person's approval"},
		{"unescaped key does not match", call("web", "fetch", args(t, `{"a": {"b": {"~c": "x"}}, "list": ["x", "y"]}`)),
			"denied by policy.rules[2] (airlock.yaml:17), args[0] (airlock.yaml:21): /a~1b/~0c is missing from the arguments"},
		{"index past the end", call("web", "fetch", args(t, `{"a/b": {"~c": "x"}, "list": ["y"]}`)),
			"denied by policy.rules[2] (airlock.yaml:17), args[1] (airlock.yaml:22): /list/1 is missing from the arguments"},
		{"index into an object", call("web", "fetch", args(t, `{"a/b": {"~c": "x"}, "list": {"1": "y"}}`)), "policy.rules[2] (airlock.yaml:17) asks for a person's approval"},
		{"pointer through a string", call("web", "fetch", args(t, `{"a/b": "x", "list": ["x", "y"]}`)),
			"denied by policy.rules[2] (airlock.yaml:17), args[0] (airlock.yaml:21): /a~1b/~0c is missing from the arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Decide(tt.req).Reason; got != tt.want {
				t.Errorf("Reason = %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	doc := map[string]any{"a": []any{"zero", map[string]any{"": "empty", "m~n": "tilde"}}, "": "root-empty"}
	tests := []struct {
		pointer string
		want    any
		ok      bool
	}{
		{"/a/0", "zero", true},
		{"/a/1/", "empty", true},
		{"/a/1/m~0n", "tilde", true},
		{"/", "root-empty", true},
		{"/a/01", nil, false},
		{"/a/-", nil, false},
		{"/a/2", nil, false},
		{"/a/+1", nil, false},
		{"/a/99999999999", nil, false},
		{"/b", nil, false},
	}
	for _, tt := range tests {
		tokens, err := parsePointer(tt.pointer)
		if err != nil {
			t.Fatalf("parsePointer(%q): %v", tt.pointer, err)
		}
		got, ok := lookup(doc, tokens)
		if ok != tt.ok || got != tt.want {
			t.Errorf("lookup(%q) = %v, %v; want %v, %v", tt.pointer, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzPathCheck checks the promises of the path checks on any string: an
// allowed path cleans to one inside an allowed glob's base, never leaves
// it with .., and never names a denied file in any letter case (a file
// inside a directory named .env is another matter: **/.env does not deny
// it).
func FuzzPathCheck(f *testing.F) {
	for _, s := range []string{"src/a", "src/../../etc", "/srv/x/../../etc", `src\..\x`, "src/.ENV", "~/x", "C:x",
		"src//.env/", "src/.env/0", "./src", "", ".", "..", "src/\x00", "src/cafe\u0301.env", "/srv/x", "src/[a]", "src/{a,b}", "src/**"} {
		f.Add(s)
	}
	rel, err := compilePaths([]string{"src/**"}, []string{"**/.env", "**/café.env"})
	if err != nil {
		f.Fatal(err)
	}
	abs, err := compilePaths([]string{"/srv/**"}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if rel.check(s) == "" {
			clean := path.Clean(s)
			if clean != "src" && !strings.HasPrefix(clean, "src/") {
				t.Errorf("%q is allowed under src/** but cleans to %q", s, clean)
			}
			if strings.ContainsAny(s, "\x00\\") {
				t.Errorf("%q is allowed but holds a NUL or a backslash", s)
			}
			for _, seg := range strings.Split(clean, "/") {
				if seg == ".." {
					t.Errorf("%q is allowed but cleans to %q, with a .. segment", s, clean)
				}
			}
			if f := strings.ToLower(norm.NFC.String(path.Base(clean))); f == ".env" || f == "café.env" {
				t.Errorf("%q is allowed but names a denied file", s)
			}
		}
		if abs.check(s) == "" {
			clean := path.Clean(s)
			if clean != "/srv" && !strings.HasPrefix(clean, "/srv/") {
				t.Errorf("%q is allowed under /srv/** but cleans to %q", s, clean)
			}
		}
	})
}

// TestReasonsDoNotQuoteArguments checks that no reason repeats a value,
// which may be a secret: reasons go to logs and to the model.
func TestReasonsDoNotQuoteArguments(t *testing.T) {
	p := compile(t, pathPolicy+`    - server: gh
      decision: allow
      args: [{pointer: /q, enum: [a], pattern: "[a-z]+"}]
`, nil)
	const canary = "ghp_canary0123456789"
	for _, req := range []Request{
		call("fs", "write_file", map[string]any{"path": "../" + canary}),
		call("fs", "write_file", map[string]any{"path": "src/" + canary + "/.env"}),
		call("fs", "write_file", map[string]any{"path": "/" + canary}),
		call("fs", "write_file", map[string]any{"path": canary + `\x`}),
		call("gh", "search", map[string]any{"q": canary}),
		call("gh", "search", map[string]any{"q": []any{"a", canary}}),
	} {
		d := p.Decide(req)
		if d.Verdict != Deny {
			t.Errorf("%v: verdict %s, want deny", req.Arguments, d.Verdict)
		}
		if strings.Contains(d.Reason, "canary") {
			t.Errorf("reason quotes an argument: %s", d.Reason)
		}
	}
}
