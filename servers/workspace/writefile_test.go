//go:build unix

package workspace_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/servers/workspace"
)

func readHostFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fileMode(t *testing.T, name string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

// noTempFiles fails if a temporary file of write_file is left in dir.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".airlock-") {
			t.Errorf("temporary file %s left behind", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestWriteFile(t *testing.T) {
	root, _ := newTree(t)
	writeFile(t, filepath.Join(root, "dir", "exec.sh"), "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(root, "dir", "exec.sh"), 0o750); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "private.txt"), "old")
	if err := os.Chmod(filepath.Join(root, "private.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The modes below must not depend on the umask.
	defer syscall.Umask(syscall.Umask(0o077))
	cs := connect(t, root, nil, "")
	tests := []struct {
		name     string
		path     string
		content  string
		want     writeFileOutput
		file     string // the host file that must hold content
		wantMode os.FileMode
	}{
		{"new file", "new.txt", "hello\n", writeFileOutput{Path: "new.txt", Bytes: 6, Created: true}, "new.txt", 0o644},
		{"replace", "a.txt", "replaced", writeFileOutput{Path: "a.txt", Bytes: 8}, "a.txt", 0o644},
		{"same content again", "a.txt", "replaced", writeFileOutput{Path: "a.txt", Bytes: 8}, "a.txt", 0o644},
		{"keeps the mode", "dir/exec.sh", "#!/bin/sh\nexit 0\n", writeFileOutput{Path: "dir/exec.sh", Bytes: 17}, "dir/exec.sh", 0o750},
		{"keeps a private mode", "private.txt", "new", writeFileOutput{Path: "private.txt", Bytes: 3}, "private.txt", 0o600},
		{"empty content", "empty.txt", "", writeFileOutput{Path: "empty.txt", Created: true}, "empty.txt", 0o644},
		{"unicode", "dir/ü.txt", "wörld ✓\n", writeFileOutput{Path: "dir/ü.txt", Bytes: 11, Created: true}, "dir/ü.txt", 0o644},
		{"path cleaned", "./dir//c.txt", "c", writeFileOutput{Path: "dir/c.txt", Bytes: 1, Created: true}, "dir/c.txt", 0o644},
		{".gitignore is not .git", ".gitignore", "*.o\n", writeFileOutput{Path: ".gitignore", Bytes: 4, Created: true}, ".gitignore", 0o644},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := structured[writeFileOutput](t, callTool(t, cs, "write_file", map[string]any{"path": tt.path, "content": tt.content}))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			name := filepath.Join(root, tt.file)
			if got := readHostFile(t, name); got != tt.content {
				t.Errorf("file content: got %q, want %q", got, tt.content)
			}
			if got := fileMode(t, name); got != tt.wantMode {
				t.Errorf("mode: got %v, want %v", got, tt.wantMode)
			}
			// What was written reads back through the server.
			if !strings.Contains(tt.content, "\n") && tt.content != "" {
				if got := structured[readFileOutput](t, callReadFile(t, cs, map[string]any{"path": tt.path})).Content; got != tt.content {
					t.Errorf("read_file: got %q, want %q", got, tt.content)
				}
			}
		})
	}
	noTempFiles(t, root)
}

func TestWriteFileRefused(t *testing.T) {
	root, outside := newTree(t)
	writeFile(t, filepath.Join(root, "dir", "b.txt"), "b")
	writeFile(t, filepath.Join(root, ".git", "config"), "[core]\n")
	symlink(t, "a.txt", filepath.Join(root, "link.txt"))
	symlink(t, "dir", filepath.Join(root, "dirlink"))
	symlink(t, "../outside", filepath.Join(root, "outdir"))
	symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(root, "abs-out"))
	symlink(t, "../outside/new.txt", filepath.Join(root, "dangling-out"))
	symlink(t, "missing.txt", filepath.Join(root, "dangling"))
	symlink(t, ".git", filepath.Join(root, "gitlink"))
	mkfifo(t, filepath.Join(root, "fifo"))
	writeFile(t, filepath.Join(root, "orig.txt"), "shared\n")
	if err := os.Link(filepath.Join(root, "orig.txt"), filepath.Join(root, "hard-in.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(root, "hard-out.txt")); err != nil {
		t.Fatal(err)
	}

	const hardLink = "has more than one hard link, so it may be shared with files outside the workspace"
	const finalLink = "is a symbolic link; write_file does not write through links, so give the real path"
	tests := []refusal{
		{"missing parent", map[string]any{"path": "nodir/x.txt", "content": "x"}, `path "nodir/x.txt": parent directory does not exist; write_file does not create directories`},
		{"missing grandparent", map[string]any{"path": "a/b/c.txt", "content": "x"}, `path "a/b/c.txt": parent directory does not exist; write_file does not create directories`},
		{"parent is a file", map[string]any{"path": "a.txt/x", "content": "x"}, `path "a.txt/x": "a.txt" is not a directory`},
		{"directory", map[string]any{"path": "dir", "content": "x"}, `path "dir": is a directory`},
		{"trailing slash", map[string]any{"path": "new/", "content": "x"}, `path "new/": names a directory; give the path of a file`},
		{"root", map[string]any{"path": ".", "content": "x"}, `path ".": names a directory; give the path of a file`},
		{"symlink inside", map[string]any{"path": "link.txt", "content": "x"}, `path "link.txt": ` + finalLink},
		{"dangling symlink", map[string]any{"path": "dangling", "content": "x"}, `path "dangling": ` + finalLink},
		{"dangling symlink outside", map[string]any{"path": "dangling-out", "content": "x"}, `path "dangling-out": ` + finalLink},
		{"absolute symlink outside", map[string]any{"path": "abs-out", "content": "x"}, `path "abs-out": ` + finalLink},
		{"symlinked directory inside", map[string]any{"path": "dirlink/new.txt", "content": "x"}, `path "dirlink/new.txt": "dirlink" is a symbolic link; write_file does not follow links, so give the real path`},
		{"symlinked directory outside", map[string]any{"path": "outdir/new.txt", "content": "x"}, `path "outdir/new.txt": "outdir" is a symbolic link; write_file does not follow links, so give the real path`},
		{"symlinked directory with trailing slash", map[string]any{"path": "outdir/", "content": "x"}, `path "outdir/": names a directory; give the path of a file`},
		{"fifo", map[string]any{"path": "fifo", "content": "x"}, `path "fifo": not a regular file`},
		{"hard link inside", map[string]any{"path": "hard-in.txt", "content": "x"}, `path "hard-in.txt": ` + hardLink},
		{"hard link outside", map[string]any{"path": "hard-out.txt", "content": "x"}, `path "hard-out.txt": ` + hardLink},
		{"git config", map[string]any{"path": ".git/config", "content": "x"}, `path ".git/config": is inside .git; write_file does not change repository metadata`},
		{"git hook", map[string]any{"path": ".git/hooks/pre-commit", "content": "x"}, `path ".git/hooks/pre-commit": is inside .git; write_file does not change repository metadata`},
		{"git in another case", map[string]any{"path": "sub/.GIT/x", "content": "x"}, `path "sub/.GIT/x": is inside .git; write_file does not change repository metadata`},
		{"git through a link", map[string]any{"path": "gitlink/config", "content": "x"}, `path "gitlink/config": "gitlink" is a symbolic link; write_file does not follow links, so give the real path`},
		{"too large", map[string]any{"path": "big.txt", "content": strings.Repeat("a", workspace.DefaultMaxFileBytes+1)}, `path "big.txt": content is larger than 2000000 bytes`},
		{"parent", map[string]any{"path": "../x.txt", "content": "x"}, `path "../x.txt": outside the workspace`},
		{"parent inside", map[string]any{"path": "dir/../x.txt", "content": "x"}, `path "dir/../x.txt": ".." elements are not allowed; give a path without them`},
		{"absolute", map[string]any{"path": filepath.Join(root, "x.txt"), "content": "x"}, "path is absolute; give a path relative to the workspace root"},
		{"empty", map[string]any{"path": "", "content": "x"}, "path is empty; give a file path relative to the workspace root"},
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		cs := connect(t, root, nil, version)
		t.Run(version, func(t *testing.T) {
			checkRefusals(t, cs, "write_file", tests, exactly, root, outside)
		})
	}

	// Nothing changed, inside or outside.
	for name, want := range map[string]string{
		filepath.Join(root, "a.txt"):         "one\ntwo\r\nthree\n",
		filepath.Join(root, "dir", "b.txt"):  "b",
		filepath.Join(root, ".git/config"):   "[core]\n",
		filepath.Join(root, "orig.txt"):      "shared\n",
		filepath.Join(outside, "secret.txt"): "secret\n",
	} {
		if got := readHostFile(t, name); got != want {
			t.Errorf("%s: got %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{
		filepath.Join(root, "missing.txt"),
		filepath.Join(root, "dir", "new.txt"),
		filepath.Join(root, "big.txt"),
		filepath.Join(outside, "new.txt"),
	} {
		if _, err := os.Lstat(name); err == nil {
			t.Errorf("%s was created", name)
		}
	}
	if got := fileMode(t, filepath.Join(root, "link.txt")); got&os.ModeSymlink == 0 {
		t.Errorf("link.txt: mode %v, want it still a symbolic link", got)
	}
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("outside holds %d entries, want only secret.txt", len(entries))
	}
	noTempFiles(t, root)
}

// TestWriteFileHardLinks replaces a file that is hard-linked to a file
// outside the workspace, with hard links allowed: the workspace name gets
// the new content and the outside file keeps its own.
func TestWriteFileHardLinks(t *testing.T) {
	root, outside := newTree(t)
	if err := os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(root, "hard-out.txt")); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, root, &workspace.Options{AllowHardLinks: true}, "")
	got := structured[writeFileOutput](t, callTool(t, cs, "write_file", map[string]any{"path": "hard-out.txt", "content": "mine"}))
	if diff := cmp.Diff(writeFileOutput{Path: "hard-out.txt", Bytes: 4}, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if got, want := readHostFile(t, filepath.Join(root, "hard-out.txt")), "mine"; got != want {
		t.Errorf("workspace file: got %q, want %q", got, want)
	}
	if got, want := readHostFile(t, filepath.Join(outside, "secret.txt")), "secret\n"; got != want {
		t.Errorf("outside file: got %q, want %q", got, want)
	}
}

func TestWriteFileArguments(t *testing.T) {
	root, _ := newTree(t)
	cs := connect(t, root, nil, "")
	checkRefusals(t, cs, "write_file", []refusal{
		{"content missing", map[string]any{"path": "x.txt"}, "content"},
		{"content not a string", map[string]any{"path": "x.txt", "content": 3}, "content"},
		{"path missing", map[string]any{"content": "x"}, "path"},
		{"unknown argument", map[string]any{"path": "x.txt", "content": "x", "mode": "0755"}, "mode"},
	}, schemaError, root)
	if _, err := os.Lstat(filepath.Join(root, "x.txt")); err == nil {
		t.Error("x.txt was created by a call with invalid arguments")
	}
}

// TestWriteFileAtomic replaces a file again and again while another reader
// reads it directly: every read sees one whole version, never a mix, a
// prefix or an empty file.
func TestWriteFileAtomic(t *testing.T) {
	root, _ := newTree(t)
	versions := []string{strings.Repeat("a", 100_000), strings.Repeat("b", 60_000) + "\n"}
	writeFile(t, filepath.Join(root, "target.txt"), versions[0])
	cs := connect(t, root, nil, "")

	reads := 0
	stopReading := repeat(t, func() bool {
		b, err := os.ReadFile(filepath.Join(root, "target.txt"))
		if err != nil {
			t.Errorf("read: %v", err)
			return false
		}
		reads++
		if !bytes.Equal(b, []byte(versions[0])) && !bytes.Equal(b, []byte(versions[1])) {
			t.Errorf("read %d bytes that are neither version (first %q)", len(b), b[:min(len(b), 10)])
			return false
		}
		return true
	})
	for i := range 20 {
		res := callTool(t, cs, "write_file", map[string]any{"path": "target.txt", "content": versions[(i+1)%2]})
		if res.IsError {
			t.Fatalf("write %d: %s", i, resultText(t, res))
		}
	}
	stopReading()
	t.Logf("%d concurrent reads", reads)
	noTempFiles(t, root)
}
