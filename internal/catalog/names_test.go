package catalog

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/schema"
	"github.com/airlockhq/airlock/policy"
)

func bindings(pairs ...string) []*Tool {
	var out []*Tool
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, &Tool{Server: pairs[i], Remote: pairs[i+1], Effect: policy.External})
	}
	return out
}

func localNames(tools []*Tool) map[string]string {
	m := map[string]string{}
	for _, t := range tools {
		m[t.Server+"/"+t.Remote] = t.Name
	}
	return m
}

func TestLocalNames(t *testing.T) {
	long := strings.Repeat("x", 70)
	tools := bindings(
		"fs", "read_file",
		"gh", "issues.list", // '.' is not allowed in a local name
		"a_", "b", // "a_" + "__" + "b" == "a" + "__" + "_b": both fall back to hashes
		"a", "_b",
		"db", long,
	)
	if err := assignNames(tools, nil); err != nil {
		t.Fatal(err)
	}
	got := localNames(tools)
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	for k, name := range got {
		if !valid.MatchString(name) {
			t.Errorf("%s: local name %q is not valid for providers", k, name)
		}
	}
	if got["fs/read_file"] != "fs__read_file" {
		t.Errorf("fs/read_file = %q, want the readable name fs__read_file", got["fs/read_file"])
	}
	for _, k := range []string{"gh/issues.list", "a_/b", "a/_b", "db/" + long} {
		server, remote, _ := strings.Cut(k, "/")
		if want := hashedName(server+"__", server, remote, hashLen); got[k] != want {
			t.Errorf("%s = %q, want hashed %q", k, got[k], want)
		}
	}
	if got["a_/b"] == got["a/_b"] {
		t.Errorf("a_/b and a/_b share %q", got["a_/b"])
	}
	// The names depend on the set of tools, not their order.
	reversed := bindings("db", long, "a", "_b", "a_", "b", "gh", "issues.list", "fs", "read_file")
	if err := assignNames(reversed, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, localNames(reversed)); diff != "" {
		t.Errorf("names depend on order (-first +reversed):\n%s", diff)
	}
}

func TestPlainNameThatEqualsAHashedName(t *testing.T) {
	// A server may name a tool exactly like another tool's hashed name;
	// both then fall back, and still get distinct names.
	h := hashedName("gh__", "gh", "issues.list", hashLen)
	tools := bindings("gh", "issues.list", strings.SplitN(h, "__", 2)[0], strings.SplitN(h, "__", 2)[1])
	if err := assignNames(tools, nil); err != nil {
		t.Fatal(err)
	}
	if tools[0].Name == tools[1].Name {
		t.Errorf("both tools are named %q", tools[0].Name)
	}
}

func TestUnresolvableCollisionIsAnError(t *testing.T) {
	// These 17 names all sanitise to "s__a_b"; with one hex digit of hash,
	// two of them must share a hashed name. That is an error, never an
	// overwrite.
	var pairs []string
	for _, sep := range ".:/ @+!#$%&*=?~^," {
		pairs = append(pairs, "s", "a"+string(sep)+"b")
	}
	tools := bindings(pairs...)
	err := assignNamesHash(tools, nil, 1)
	if err == nil || !strings.Contains(err.Error(), "both map to the local name") {
		t.Fatalf("assignNames = %v, want a collision error", err)
	}
	for _, tool := range tools {
		if tool.Name != "" {
			t.Fatalf("names were assigned despite the error: %q", tool.Name)
		}
	}
}

func TestSnapshotID(t *testing.T) {
	obj, err := schema.Compile(map[string]any{"type": "object"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	launches := map[string]string{"fs": "sha256:fs", "gh": "sha256:gh"}
	build := func(desc string, launches map[string]string, pairs ...string) *Snapshot {
		tools := bindings(pairs...)
		for _, tool := range tools {
			tool.Input, tool.Description = obj, desc
		}
		s, err := Build(tools, 1, launches, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a := build("d", launches, "fs", "read", "gh", "list")
	b := build("d", map[string]string{"gh": "sha256:gh", "fs": "sha256:fs"}, "gh", "list", "fs", "read")
	c := build("changed", launches, "fs", "read", "gh", "list")
	if a.ID() != b.ID() {
		t.Errorf("same tools, ids %s and %s", a.ID(), b.ID())
	}
	if a.ID() == c.ID() {
		t.Errorf("a changed description keeps the id %s", a.ID())
	}
	// A server launched another way (MCPoison: the same tools from another
	// command) is another snapshot, as is one more or one fewer server.
	for name, other := range map[string]map[string]string{
		"a changed launch":       {"fs": "sha256:evil", "gh": "sha256:gh"},
		"launches swapped":       {"fs": "sha256:gh", "gh": "sha256:fs"},
		"a server without tools": {"fs": "sha256:fs", "gh": "sha256:gh", "x": "sha256:x"},
		"no launches":            nil,
	} {
		if d := build("d", other, "fs", "read", "gh", "list"); d.ID() == a.ID() {
			t.Errorf("%s keeps the id %s", name, a.ID())
		}
	}
	if got, ok := a.Lookup("gh__list"); !ok || got.Remote != "list" {
		t.Errorf("Lookup(gh__list) = %v, %v", got, ok)
	}
}

// TestOffered: what a server offers in a snapshot changes with its own
// tools and prompts only, not with another server's, nor with the order
// they come in; a server that offers nothing offers "".
func TestOffered(t *testing.T) {
	obj, err := schema.Compile(map[string]any{"type": "object"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	build := func(desc string, prompts []*Prompt, pairs ...string) *Snapshot {
		tools := bindings(pairs...)
		for _, tool := range tools {
			tool.Input, tool.Description = obj, desc
		}
		s, err := BuildWith(tools, Content{Prompts: prompts}, 1, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a := build("d", nil, "fs", "read", "gh", "list")
	for _, tt := range []struct {
		name   string
		snap   *Snapshot
		fs, gh bool // whether each offers the same as in a
	}{
		{"the same, in another order", build("d", nil, "gh", "list", "fs", "read"), true, true},
		{"a tool more on gh", build("d", nil, "fs", "read", "gh", "list", "gh", "get"), true, false},
		{"gh gone", build("d", nil, "fs", "read"), true, false},
		{"a prompt on fs", build("d", []*Prompt{{Server: "fs", Remote: "p"}}, "fs", "read", "gh", "list"), false, true},
		{"another description", build("changed", nil, "fs", "read", "gh", "list"), false, false},
	} {
		if got := tt.snap.Offered("fs") == a.Offered("fs"); got != tt.fs {
			t.Errorf("%s: fs offers the same: %v, want %v", tt.name, got, tt.fs)
		}
		if got := tt.snap.Offered("gh") == a.Offered("gh"); got != tt.gh {
			t.Errorf("%s: gh offers the same: %v, want %v", tt.name, got, tt.gh)
		}
	}
	if got := a.Offered("none"); got != "" {
		t.Errorf("a server without tools offers %q, want \"\"", got)
	}
}

// TestToolPrefixes: a server's tool_prefix replaces "server__" in its
// tools' local names; "" gives them the server's own names. A name that
// would not be valid, or that another tool would share, still falls back
// to a hashed name, never to an overwrite.
func TestToolPrefixes(t *testing.T) {
	long := strings.Repeat("y", 60)
	prefixes := map[string]string{"own": "", "other": "", "gh": "github-", "wide": "wide_prefix__"}
	tools := bindings(
		"own", "read_file",
		"own", "echo",
		"other", "echo", // "echo" twice: both hashed
		"fs", "echo", // no prefix given: the default
		"gh", "list",
		"wide", long, // too long with its prefix: hashed
		"own", "fs__echo", // looks like another server's default name, and is one
	)
	if err := assignNames(tools, prefixes); err != nil {
		t.Fatal(err)
	}
	got := localNames(tools)
	want := map[string]string{
		"own/read_file": "read_file",
		"own/echo":      hashedName("", "own", "echo", hashLen),
		"other/echo":    hashedName("", "other", "echo", hashLen),
		"fs/echo":       hashedName("fs__", "fs", "echo", hashLen),
		"gh/list":       "github-list",
		"wide/" + long:  hashedName("wide_prefix__", "wide", long, hashLen),
		"own/fs__echo":  hashedName("", "own", "fs__echo", hashLen),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("local names (-want +got):\n%s", diff)
	}
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	seen := map[string]bool{}
	for k, name := range got {
		if !valid.MatchString(name) || seen[name] {
			t.Errorf("%s: local name %q is not valid, or not unique", k, name)
		}
		seen[name] = true
	}
	if !strings.HasPrefix(got["own/echo"], "echo_") || !strings.HasPrefix(got["wide/"+long], "wide_prefix__y") {
		t.Errorf("hashed names %q, %q do not start with the prefix and the tool's name", got["own/echo"], got["wide/"+long])
	}

	// The prefix is part of the snapshot's id: the same tools under other
	// names are another catalog.
	obj, err := schema.Compile(map[string]any{"type": "object"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	build := func(prefixes map[string]string) *Snapshot {
		tools := bindings("fs", "read")
		tools[0].Input = obj
		s, err := Build(tools, 1, nil, prefixes)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	def, explicit, own := build(nil), build(map[string]string{"fs": "fs__"}), build(map[string]string{"fs": ""})
	if def.ID() != explicit.ID() || def.ID() == own.ID() {
		t.Errorf("snapshot ids: default %s, fs__ %s, own names %s; want the first two equal and the third different", def.ID(), explicit.ID(), own.ID())
	}
	if _, ok := own.Lookup("read"); !ok {
		t.Errorf("Lookup(read) in the snapshot with the server's own names failed")
	}
}
