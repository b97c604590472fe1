//go:build unix

package workspace_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

func TestListDir(t *testing.T) {
	root, _ := newTree(t)
	writeFile(t, filepath.Join(root, "dir", "b.txt"), "bb")
	writeFile(t, filepath.Join(root, ".hidden"), "")
	writeFile(t, filepath.Join(root, "dir", "sub", "c.go"), "package c\n")
	symlink(t, "a.txt", filepath.Join(root, "link.txt"))
	symlink(t, "dir", filepath.Join(root, "dirlink"))
	symlink(t, "../outside", filepath.Join(root, "outdir"))
	mkfifo(t, filepath.Join(root, "fifo"))
	listenUnix(t, filepath.Join(root, "sock"))

	all := []dirEntry{
		{Name: ".hidden", Type: "file"},
		{Name: "a.txt", Type: "file", Size: 15},
		{Name: "dir", Type: "dir"},
		{Name: "dirlink", Type: "symlink"},
		{Name: "fifo", Type: "other"},
		{Name: "link.txt", Type: "symlink"},
		{Name: "outdir", Type: "symlink"},
		{Name: "sock", Type: "other"},
	}
	dir := []dirEntry{{Name: "b.txt", Type: "file", Size: 2}, {Name: "sub", Type: "dir"}}
	cs := connect(t, root, nil, "")
	checkResults(t, cs, "list_dir", []result[listDirOutput]{
		{"default path", map[string]any{}, listDirOutput{Path: ".", Entries: all, Total: len(all)}},
		{"dot", map[string]any{"path": "."}, listDirOutput{Path: ".", Entries: all, Total: len(all)}},
		{"empty path", map[string]any{"path": ""}, listDirOutput{Path: ".", Entries: all, Total: len(all)}},
		{"subdirectory", map[string]any{"path": "dir"}, listDirOutput{Path: "dir", Entries: dir, Total: 2}},
		{"cleaned", map[string]any{"path": "./dir//"}, listDirOutput{Path: "dir", Entries: dir, Total: 2}},
		{"nested", map[string]any{"path": "dir/sub"}, listDirOutput{Path: "dir/sub", Entries: []dirEntry{{Name: "c.go", Type: "file", Size: 10}}, Total: 1}},
		{"symlinked directory inside", map[string]any{"path": "dirlink"}, listDirOutput{Path: "dirlink", Entries: dir, Total: 2}},
		{"symlinked directory with trailing slash", map[string]any{"path": "dirlink/"}, listDirOutput{Path: "dirlink", Entries: dir, Total: 2}},
		{"pattern", map[string]any{"pattern": "*.txt"}, listDirOutput{Path: ".", Entries: []dirEntry{all[1], all[5]}, Total: 2}},
		{"pattern class", map[string]any{"pattern": "[df]i*"}, listDirOutput{Path: ".", Entries: []dirEntry{all[2], all[3], all[4]}, Total: 3}},
		{"pattern matches dot files", map[string]any{"pattern": ".*"}, listDirOutput{Path: ".", Entries: []dirEntry{all[0]}, Total: 1}},
		{"pattern escape", map[string]any{"pattern": `a\.txt`}, listDirOutput{Path: ".", Entries: []dirEntry{all[1]}, Total: 1}},
		{"pattern matching nothing", map[string]any{"pattern": "*.rs"}, listDirOutput{Path: ".", Entries: []dirEntry{}, Total: 0}},
	})
}

func TestListDirRefused(t *testing.T) {
	root, outside := newTree(t)
	mkfifo(t, filepath.Join(root, "fifo"))
	symlink(t, "../outside", filepath.Join(root, "outdir"))
	symlink(t, outside, filepath.Join(root, "absdir"))
	symlink(t, "missing", filepath.Join(root, "dangling"))
	cs := connect(t, root, nil, "")
	const escaped = "resolves outside the workspace (symbolic links are followed only when relative and inside the workspace)"
	checkRefusals(t, cs, "list_dir", []refusal{
		{"file", map[string]any{"path": "a.txt"}, `path "a.txt": not a directory`},
		{"file with trailing slash", map[string]any{"path": "a.txt/"}, `path "a.txt/": not a directory`},
		{"missing", map[string]any{"path": "nope"}, `path "nope": no such file`},
		{"dangling symlink", map[string]any{"path": "dangling"}, `path "dangling": no such file`},
		{"fifo", map[string]any{"path": "fifo"}, `path "fifo": not a directory`},
		{"symlink outside", map[string]any{"path": "outdir"}, `path "outdir": ` + escaped},
		{"symlink outside with trailing slash", map[string]any{"path": "outdir/"}, `path "outdir/": ` + escaped},
		{"absolute symlink outside", map[string]any{"path": "absdir/"}, `path "absdir/": ` + escaped},
		{"parent", map[string]any{"path": ".."}, `path "..": outside the workspace`},
		{"absolute", map[string]any{"path": outside}, "path is absolute; give a path relative to the workspace root"},
		{"bad glob", map[string]any{"pattern": "[a-"}, `pattern "[a-" is not a valid glob (Go path.Match syntax: * ? [a-z] and \ to escape)`},
		{"glob with a slash", map[string]any{"pattern": "dir/*"}, `pattern contains "/"; it is matched against entry names, which never do`},
	}, exactly, root, outside)
}

// TestListDirBounds fills a directory past the entry bound, in random
// order, and checks that the first names in byte order come back.
func TestListDirBounds(t *testing.T) {
	root, _ := newTree(t)
	dir := filepath.Join(root, "many")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 2345
	for _, i := range rand.Perm(n) {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	names := func(from, to int) []dirEntry {
		var es []dirEntry
		for i := from; i < to; i++ {
			es = append(es, dirEntry{Name: fmt.Sprintf("f%04d", i), Type: "file"})
		}
		return es
	}
	cs := connect(t, root, nil, "")
	checkResults(t, cs, "list_dir", []result[listDirOutput]{
		{"all", map[string]any{"path": "many"}, listDirOutput{Path: "many", Entries: names(0, 1000), Total: n, Truncated: true}},
		{"pattern under the bound", map[string]any{"path": "many", "pattern": "f2*"}, listDirOutput{Path: "many", Entries: names(2000, n), Total: n - 2000}},
		{"pattern at the bound", map[string]any{"path": "many", "pattern": "f1*"}, listDirOutput{Path: "many", Entries: names(1000, 2000), Total: 1000}},
	})
}
