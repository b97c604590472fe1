//go:build unix

package workspace_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/servers/workspace"
)

// stateCanary is the content of every protected file in protectedTree; no
// answer may contain it.
const stateCanary = "state-canary-91c2"

const protectedReason = "is Airlock's own state or configuration, which the workspace tools do not read, list, search or write"

// protectedTree makes a workspace holding Airlock's state and
// configuration, under the fixed names and under names the host protects,
// with links and hard links to them. It returns the root, the directory
// around it, and the paths to protect: one through a symbolic link to the
// root's directory, one outside the root, and one that does not exist yet.
func protectedTree(t *testing.T) (root, base string, protect []string) {
	t.Helper()
	root, outside := newTree(t)
	base = filepath.Dir(root)
	for _, name := range []string{
		".airlock/log/airlock.log", ".airlock/airlock.db", "airlock.yaml",
		"sub/.airlock/state.txt", "sub/airlock.yml",
		"state/log.txt", "team.yaml", "\u00e9tat/x.txt",
	} {
		writeFile(t, filepath.Join(root, name), stateCanary+"\n")
	}
	writeFile(t, filepath.Join(root, "sub", "ok.txt"), "fine\n")
	writeFile(t, filepath.Join(outside, "extstate", "secret.db"), stateCanary+"\n")
	if err := os.Mkdir(filepath.Join(root, "newdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, ".airlock", filepath.Join(root, "statelink"))
	symlink(t, ".airlock/log", filepath.Join(root, "loglink"))
	symlink(t, "airlock.yaml", filepath.Join(root, "cfglink"))
	symlink(t, "team.yaml", filepath.Join(root, "teamlink"))
	symlink(t, "sub", filepath.Join(root, "dirlink"))
	symlink(t, "../.airlock", filepath.Join(root, "sub", "up"))
	for link, target := range map[string]string{
		"hard.db":     filepath.Join(root, ".airlock", "airlock.db"),
		"hard-ext.db": filepath.Join(outside, "extstate", "secret.db"),
	} {
		if err := os.Link(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	alias := filepath.Join(t.TempDir(), "alias")
	symlink(t, base, alias)
	protect = []string{
		filepath.Join(alias, "root", "state"),
		filepath.Join(root, "team.yaml"),
		filepath.Join(root, "\u00e9tat"),
		filepath.Join(outside, "extstate"),
		filepath.Join(root, "later"),
	}
	return root, base, protect
}

// treeState records every regular file under dir with its content, and
// every symbolic link with its target, to check that no call changed one.
func treeState(t *testing.T, dir string) map[string]string {
	t.Helper()
	state := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			state[p] = "-> " + target
			return err
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			state[p] = string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return state
}

// startProtected serves root in a real server process that protects
// protect, with hard links allowed or not.
func startProtected(t *testing.T, root string, protect []string, hardLinks bool) *mcp.ClientSession {
	t.Helper()
	b, err := json.Marshal(protect)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{protectEnv + "=" + string(b)}
	if hardLinks {
		env = append(env, hardLinksEnv+"=1")
	}
	cs, _ := startStdio(t, root, env...)
	return cs
}

// TestProtectedPaths sends every tool every spelling of a path to
// Airlock's state and configuration that a model could try, against a
// real server process: each is refused, no answer shows their content,
// and none of them changes.
func TestProtectedPaths(t *testing.T) {
	root, base, protect := protectedTree(t)
	before := treeState(t, base)
	cs := startProtected(t, root, protect, false)

	const (
		P         = protectedReason
		dotdot    = `".." elements are not allowed; give a path without them`
		finalLink = "is a symbolic link; write_file does not write through links, so give the real path"
		hardLink  = "has more than one hard link, so it may be shared with files outside the workspace"
	)
	dirLink := func(name string) string {
		return fmt.Sprintf("%q is a symbolic link; write_file does not follow links, so give the real path", name)
	}
	type want struct{ read, list, search, write string }
	all := func(reason string) want { return want{reason, reason, reason, reason} }
	tests := []struct {
		name string
		path string
		want want
	}{
		{"the log", ".airlock/log/airlock.log", all(P)},
		{"the database", ".airlock/airlock.db", all(P)},
		{"the state directory", ".airlock", all(P)},
		{"leading ./", "./.airlock/airlock.db", all(P)},
		{"doubled slash", ".airlock//log/airlock.log", all(P)},
		{"trailing slash", ".airlock/", all(P)},
		{"upper case", ".AIRLOCK/log/airlock.log", all(P)},
		{"configuration", "airlock.yaml", all(P)},
		{"configuration in upper case", "AIRLOCK.YAML", all(P)},
		{"yml in mixed case", "Airlock.Yml", all(P)},
		{"trailing dot", "airlock.yaml.", all(P)},
		{"trailing space", "airlock.yaml ", all(P)},
		{"stream name", "airlock.yaml::$DATA", all(P)},
		{"ignorable code point", "\u200c.airlock/airlock.db", all(P)},
		{"Kelvin sign", ".airloc\u212a/airlock.db", all(P)},
		{"parent element", "sub/../.airlock/airlock.db", all(dotdot)},
		{"link to the state directory", "statelink", want{P, P, P, finalLink}},
		{"through a link to the state directory", "statelink/log/airlock.log", want{P, P, P, dirLink("statelink")}},
		{"through a link into the state directory", "loglink/airlock.log", want{P, P, P, dirLink("loglink")}},
		{"link to the configuration", "cfglink", want{P, P, P, finalLink}},
		{"link going up into the state directory", "sub/up/airlock.db", want{P, P, P, dirLink("sub/up")}},
		{"nested state directory", "sub/.airlock/state.txt", all(P)},
		{"nested configuration", "sub/airlock.yml", all(P)},
		{"through a directory link", "dirlink/airlock.yml", all(P)},
		{"new configuration", "newdir/airlock.yaml", all(P)},
		{"protected directory", "state/log.txt", all(P)},
		{"protected directory in upper case", "STATE/log.txt", all(P)},
		{"protected file", "team.yaml", all(P)},
		{"link to a protected file", "teamlink", want{P, P, P, finalLink}},
		{"protected directory, other normal form", "e\u0301tat/x.txt", all(P)},
		{"protected path that does not exist yet", "later/x.txt", all(P)},
		{"hard link into the state directory", "hard.db", want{hardLink, "not a directory", hardLink, hardLink}},
	}
	for _, tt := range tests {
		for i, tool := range tools {
			wantText := []string{tt.want.read, tt.want.list, tt.want.search, tt.want.write}[i]
			t.Run(tt.name+"/"+tool, func(t *testing.T) {
				args := toolArgs(tool, tt.path)
				if tool == "search_text" {
					args["pattern"] = stateCanary
				}
				text := toolError(t, callTool(t, cs, tool, args))
				if want := fmt.Sprintf("path %q: %s", tt.path, wantText); text != want {
					t.Errorf("got %q, want %q", text, want)
				}
				if strings.Contains(text, stateCanary) {
					t.Errorf("result %q shows Airlock's state", text)
				}
				noHostPaths(t, text, root, base)
			})
		}
	}

	// Created after the server started, a protected path is refused as well.
	writeFile(t, filepath.Join(root, "later", "x.txt"), stateCanary+"\n")
	if got, want := toolError(t, callTool(t, cs, "read_file", map[string]any{"path": "later/x.txt"})), `path "later/x.txt": `+P; got != want {
		t.Errorf("read_file later/x.txt: got %q, want %q", got, want)
	}
	before[filepath.Join(root, "later", "x.txt")] = stateCanary + "\n"

	// Listings leave protected entries out; searches do not look inside.
	for dir, want := range map[string][]string{
		".":   {"a.txt", "cfglink", "dirlink", "hard-ext.db", "hard.db", "loglink", "newdir", "statelink", "sub", "teamlink"},
		"sub": {"ok.txt", "up"},
	} {
		got := structured[listDirOutput](t, callTool(t, cs, "list_dir", map[string]any{"path": dir}))
		var names []string
		for _, e := range got.Entries {
			names = append(names, e.Name)
		}
		if !slices.Equal(names, want) || got.Total != len(want) {
			t.Errorf("list_dir %s: got %v (total %d), want %v", dir, names, got.Total, want)
		}
	}
	for _, path := range []string{".", "sub", "dirlink"} {
		got := structured[searchTextOutput](t, callTool(t, cs, "search_text", map[string]any{"pattern": stateCanary, "path": path}))
		if len(got.Matches) != 0 {
			t.Errorf("search_text %s: got %v, want no match in Airlock's state", path, got.Matches)
		}
	}
	got := structured[searchTextOutput](t, callTool(t, cs, "search_text", map[string]any{"pattern": "fine"}))
	if want := []searchMatch{{Path: "sub/ok.txt", Line: 1, Text: "fine"}}; !slices.Equal(got.Matches, want) {
		t.Errorf("search_text: got %v, want %v", got.Matches, want)
	}

	if diff := cmpState(before, treeState(t, base)); diff != "" {
		t.Errorf("files changed: %s", diff)
	}
}

// TestProtectedHardLinks: a server that allows hard links still refuses a
// file that is also in a protected directory, inside the root or not.
func TestProtectedHardLinks(t *testing.T) {
	root, base, protect := protectedTree(t)
	writeFile(t, filepath.Join(base, "other.txt"), "shared\n")
	if err := os.Link(filepath.Join(base, "other.txt"), filepath.Join(root, "shared.txt")); err != nil {
		t.Fatal(err)
	}
	cs := startProtected(t, root, protect, true)
	for _, path := range []string{"hard.db", "hard-ext.db"} {
		want := fmt.Sprintf("path %q: %s", path, protectedReason)
		for _, tool := range []string{"read_file", "search_text"} {
			args := toolArgs(tool, path)
			if tool == "search_text" {
				args["pattern"] = stateCanary
			}
			if got := toolError(t, callTool(t, cs, tool, args)); got != want {
				t.Errorf("%s %s: got %q, want %q", tool, path, got, want)
			}
		}
	}
	// Other hard links are read, as the option says.
	if got := structured[readFileOutput](t, callTool(t, cs, "read_file", map[string]any{"path": "shared.txt"})).Content; got != "shared" {
		t.Errorf("read_file shared.txt: got %q, want shared", got)
	}
	got := structured[searchTextOutput](t, callTool(t, cs, "search_text", map[string]any{"pattern": stateCanary}))
	if len(got.Matches) != 0 {
		t.Errorf("search_text: got %v, want no match in Airlock's state", got.Matches)
	}
}

// TestProtectRoot: a protected path that contains the root (a task's
// worktree in the state directory) leaves the root served; one that is the
// root is refused when the server starts.
func TestProtectRoot(t *testing.T) {
	state := t.TempDir()
	root := filepath.Join(state, "tasks", "t1", "worktree")
	writeFile(t, filepath.Join(root, "a.txt"), "inside\n")
	writeFile(t, filepath.Join(state, "airlock.db"), stateCanary+"\n")
	cs := connect(t, root, &workspace.Options{Protect: []string{state}}, "")
	if got := structured[readFileOutput](t, callReadFile(t, cs, map[string]any{"path": "a.txt"})).Content; got != "inside" {
		t.Errorf("read_file a.txt: got %q, want inside", got)
	}
	if got := structured[listDirOutput](t, callTool(t, cs, "list_dir", map[string]any{})).Total; got != 1 {
		t.Errorf("list_dir: got %d entries, want 1", got)
	}

	_, err := workspace.New(root, &workspace.Options{Protect: []string{root + "/"}})
	if err == nil || !strings.Contains(err.Error(), "is the workspace root itself") {
		t.Errorf("New with the root protected: got %v, want an error", err)
	}
}
