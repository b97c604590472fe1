//go:build unix

package workspace_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/servers/workspace"
)

// searchTree makes a workspace to search, beside a directory outside it
// whose files all contain TODO.
func searchTree(t *testing.T) (root, outside string) {
	t.Helper()
	root, outside = newTree(t)
	writeFile(t, filepath.Join(outside, "todo.txt"), "TODO outside\n")
	writeFile(t, filepath.Join(outside, "secret.txt"), "TODO secret\n")
	writeFile(t, filepath.Join(root, "README.md"), "TODO list\nnothing\n")
	writeFile(t, filepath.Join(root, "src", "main.go"), "package main\n\nfunc main() {\n\t// TODO: fix\n}\n")
	writeFile(t, filepath.Join(root, "src", "util.go"), "package main\n// todo: lower case\n")
	writeFile(t, filepath.Join(root, "crlf.txt"), "a\r\nTODO\r\n")
	writeFile(t, filepath.Join(root, "long.txt"), strings.Repeat("x", 1000)+"TODO"+strings.Repeat("y", 1000)+"\n")
	writeFile(t, filepath.Join(root, ".git", "config"), "TODO in git\n")
	writeFile(t, filepath.Join(root, "sub", ".git"), "gitdir: TODO\n")
	writeFile(t, filepath.Join(root, "bin.dat"), "TODO\x00binary\n")
	writeFile(t, filepath.Join(root, "big.txt"), "TODO\n"+strings.Repeat("a", 3_000_000))
	symlink(t, "src/main.go", filepath.Join(root, "link.go"))
	symlink(t, "src", filepath.Join(root, "srclink"))
	symlink(t, "../outside", filepath.Join(root, "outlink"))
	symlink(t, "../outside/todo.txt", filepath.Join(root, "outfile"))
	mkfifo(t, filepath.Join(root, "fifo"))
	if err := os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(root, "hard-out.txt")); err != nil {
		t.Fatal(err)
	}
	return root, outside
}

func TestSearchText(t *testing.T) {
	root, outside := searchTree(t)
	longText := "…" + strings.Repeat("x", 75) + "TODO" + strings.Repeat("y", 300-75-4) + "…"
	todo := []searchMatch{
		{Path: "README.md", Line: 1, Text: "TODO list"},
		{Path: "crlf.txt", Line: 2, Text: "TODO"},
		{Path: "long.txt", Line: 1, Text: longText},
		{Path: "src/main.go", Line: 4, Text: "\t// TODO: fix"},
	}
	// Searched: README.md, a.txt, crlf.txt, long.txt, src/main.go,
	// src/util.go. Skipped: big.txt (too large), bin.dat (binary),
	// hard-out.txt (hard link). Never opened: .git, symbolic links, the FIFO.
	const searched, skipped = 6, 3

	cs := connect(t, root, nil, "")
	tests := []result[searchTextOutput]{
		{
			name: "literal",
			args: map[string]any{"pattern": "TODO"},
			want: searchTextOutput{Matches: todo, FilesSearched: searched, FilesSkipped: skipped},
		},
		{
			name: "literal is not a regular expression",
			args: map[string]any{"pattern": "T.DO"},
			want: searchTextOutput{Matches: []searchMatch{}, FilesSearched: searched, FilesSkipped: skipped},
		},
		{
			name: "regex",
			args: map[string]any{"pattern": "T.DO", "regex": true},
			want: searchTextOutput{Matches: todo, FilesSearched: searched, FilesSkipped: skipped},
		},
		{
			name: "regex case-insensitive",
			args: map[string]any{"pattern": "(?i)todo:", "regex": true},
			want: searchTextOutput{Matches: []searchMatch{
				{Path: "src/main.go", Line: 4, Text: "\t// TODO: fix"},
				{Path: "src/util.go", Line: 2, Text: "// todo: lower case"},
			}, FilesSearched: searched, FilesSkipped: skipped},
		},
		{
			name: "anchors match at line boundaries",
			args: map[string]any{"pattern": "^TODO$", "regex": true},
			want: searchTextOutput{Matches: []searchMatch{{Path: "crlf.txt", Line: 2, Text: "TODO"}}, FilesSearched: searched, FilesSkipped: skipped},
		},
		{
			name: "subdirectory",
			args: map[string]any{"pattern": "package", "path": "src"},
			want: searchTextOutput{Matches: []searchMatch{
				{Path: "src/main.go", Line: 1, Text: "package main"},
				{Path: "src/util.go", Line: 1, Text: "package main"},
			}, FilesSearched: 2},
		},
		{
			name: "symlinked starting directory inside",
			args: map[string]any{"pattern": "func", "path": "srclink/"},
			want: searchTextOutput{Matches: []searchMatch{{Path: "srclink/main.go", Line: 3, Text: "func main() {"}}, FilesSearched: 2},
		},
		{
			name: "one file",
			args: map[string]any{"pattern": "main", "path": "src/main.go"},
			want: searchTextOutput{Matches: []searchMatch{
				{Path: "src/main.go", Line: 1, Text: "package main"},
				{Path: "src/main.go", Line: 3, Text: "func main() {"},
			}, FilesSearched: 1},
		},
		{
			name: "one file through a symlink inside",
			args: map[string]any{"pattern": "fix", "path": "link.go"},
			want: searchTextOutput{Matches: []searchMatch{{Path: "link.go", Line: 4, Text: "\t// TODO: fix"}}, FilesSearched: 1},
		},
		{
			name: ".git named explicitly",
			args: map[string]any{"pattern": "TODO", "path": ".git"},
			want: searchTextOutput{Matches: []searchMatch{{Path: ".git/config", Line: 1, Text: "TODO in git"}}, FilesSearched: 1},
		},
		{
			name: "one match per line",
			args: map[string]any{"pattern": "x", "path": "long.txt"},
			want: searchTextOutput{Matches: []searchMatch{{Path: "long.txt", Line: 1, Text: strings.Repeat("x", 300) + "…"}}, FilesSearched: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := structured[searchTextOutput](t, callTool(t, cs, "search_text", tt.args))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if text := resultText(t, callTool(t, cs, "search_text", tt.args)); strings.Contains(text, "secret") || strings.Contains(text, "outside") {
				t.Errorf("result %q shows content from outside the workspace", text)
			}
		})
	}
	// The hard link is searched when the server allows hard links.
	cs = connect(t, root, &workspace.Options{AllowHardLinks: true}, "")
	got := structured[searchTextOutput](t, callTool(t, cs, "search_text", map[string]any{"pattern": "secret"}))
	want := searchTextOutput{Matches: []searchMatch{{Path: "hard-out.txt", Line: 1, Text: "TODO secret"}}, FilesSearched: searched + 1, FilesSkipped: skipped - 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("with hard links allowed (-want +got):\n%s", diff)
	}
	noHostPaths(t, resultText(t, callTool(t, cs, "search_text", map[string]any{"pattern": "TODO"})), root, outside)
}

func TestSearchTextRefused(t *testing.T) {
	root, outside := searchTree(t)
	cs := connect(t, root, nil, "")
	const escaped = "resolves outside the workspace (symbolic links are followed only when relative and inside the workspace)"
	checkRefusals(t, cs, "search_text", []refusal{
		{"invalid regex", map[string]any{"pattern": "a(b", "regex": true}, `pattern is not a valid RE2 regular expression: missing closing ) in "a(b"`},
		{"backreference", map[string]any{"pattern": `(a)\1`, "regex": true}, `pattern is not a valid RE2 regular expression: invalid escape sequence in "\\1"`},
		{"literal with a line break", map[string]any{"pattern": "a\nb"}, "pattern contains a line break; search_text matches within one line at a time"},
		{"missing", map[string]any{"pattern": "x", "path": "nope"}, `path "nope": no such file`},
		{"fifo", map[string]any{"pattern": "x", "path": "fifo"}, `path "fifo": not a regular file or directory`},
		{"binary file", map[string]any{"pattern": "x", "path": "bin.dat"}, `path "bin.dat": is a binary file (it has a NUL byte in its first 8 KB)`},
		{"large file", map[string]any{"pattern": "x", "path": "big.txt"}, `path "big.txt": larger than 2000000 bytes`},
		{"hard link", map[string]any{"pattern": "x", "path": "hard-out.txt"}, `path "hard-out.txt": has more than one hard link, so it may be shared with files outside the workspace`},
		{"directory symlink outside", map[string]any{"pattern": "x", "path": "outlink"}, `path "outlink": ` + escaped},
		{"directory symlink outside with trailing slash", map[string]any{"pattern": "x", "path": "outlink/"}, `path "outlink/": ` + escaped},
		{"file symlink outside", map[string]any{"pattern": "x", "path": "outfile"}, `path "outfile": ` + escaped},
		{"parent", map[string]any{"pattern": "x", "path": "../outside"}, `path "../outside": outside the workspace`},
		{"absolute", map[string]any{"pattern": "x", "path": outside}, "path is absolute; give a path relative to the workspace root"},
	}, exactly, root, outside)
}

func TestSearchTextArguments(t *testing.T) {
	root, _ := newTree(t)
	cs := connect(t, root, nil, "")
	checkRefusals(t, cs, "search_text", []refusal{
		{"pattern missing", map[string]any{"path": "."}, "pattern"},
		{"pattern empty", map[string]any{"pattern": ""}, "pattern"},
		{"pattern too long", map[string]any{"pattern": strings.Repeat("a", 1001)}, "pattern"},
		{"regex not a boolean", map[string]any{"pattern": "a", "regex": "yes"}, "regex"},
		{"unknown argument", map[string]any{"pattern": "a", "glob": "*.go"}, "glob"},
	}, schemaError, root)
}

func TestSearchTextBounds(t *testing.T) {
	root, _ := newTree(t)
	var many strings.Builder
	for i := range 250 {
		fmt.Fprintf(&many, "match %d\n", i+1)
	}
	writeFile(t, filepath.Join(root, "many", "a.txt"), many.String())
	writeFile(t, filepath.Join(root, "many", "b.txt"), "match in b\n")
	writeFile(t, filepath.Join(root, "budget", "1.txt"), strings.Repeat("match\n", 10)) // 60 bytes
	writeFile(t, filepath.Join(root, "budget", "2.txt"), strings.Repeat("match\n", 10))
	writeFile(t, filepath.Join(root, "budget", "3.txt"), strings.Repeat("match\n", 10))

	t.Run("matches", func(t *testing.T) {
		cs := connect(t, root, nil, "")
		got := structured[searchTextOutput](t, callTool(t, cs, "search_text", map[string]any{"pattern": "match", "path": "many"}))
		if got, want := len(got.Matches), 200; got != want {
			t.Errorf("matches: got %d, want %d", got, want)
		}
		if last, want := got.Matches[len(got.Matches)-1], (searchMatch{Path: "many/a.txt", Line: 200, Text: "match 200"}); last != want {
			t.Errorf("last match: got %+v, want %+v", last, want)
		}
		if !got.Truncated || !strings.Contains(got.Note, "stopped at 200 matches") {
			t.Errorf("truncated %v, note %q: want the match limit stated", got.Truncated, got.Note)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		cs := connect(t, root, &workspace.Options{MaxSearchBytes: 150}, "")
		got := structured[searchTextOutput](t, callTool(t, cs, "search_text", map[string]any{"pattern": "match", "path": "budget"}))
		want := searchTextOutput{
			Truncated:     true,
			Note:          "stopped after reading 120 bytes of files, near the limit of 150 bytes for one search; search a narrower path to see the rest",
			FilesSearched: 2,
		}
		for _, f := range []string{"budget/1.txt", "budget/2.txt"} {
			for line := range 10 {
				want.Matches = append(want.Matches, searchMatch{Path: f, Line: line + 1, Text: "match"})
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
	})
	t.Run("size cap", func(t *testing.T) {
		cs := connect(t, root, &workspace.Options{MaxFileBytes: 59}, "")
		got := structured[searchTextOutput](t, callTool(t, cs, "search_text", map[string]any{"pattern": "match"}))
		want := searchTextOutput{Matches: []searchMatch{{Path: "many/b.txt", Line: 1, Text: "match in b"}}, FilesSearched: 2, FilesSkipped: 4}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
	})
}
