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

func TestReadFile(t *testing.T) {
	root, _ := newTree(t)
	numbered := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(strings.Repeat("x", i%7))
			b.WriteString("\n")
		}
		return b.String()
	}
	writeFile(t, filepath.Join(root, "dir", "b.txt"), "b")
	writeFile(t, filepath.Join(root, "five.txt"), "1\n2\n3\n4\n5")
	writeFile(t, filepath.Join(root, "empty.txt"), "")
	writeFile(t, filepath.Join(root, "blank.txt"), "\n\n")
	writeFile(t, filepath.Join(root, "201.txt"), numbered(201))
	writeFile(t, filepath.Join(root, "1001.txt"), numbered(1001))
	writeFile(t, filepath.Join(root, "unicode.txt"), "héllo\nwörld ✓\n")
	symlink(t, "a.txt", filepath.Join(root, "link.txt"))
	symlink(t, "dir", filepath.Join(root, "dirlink"))
	symlink(t, "../a.txt", filepath.Join(root, "dir", "up.txt"))

	cs := connect(t, root, nil, "")
	checkResults(t, cs, "read_file", []result[readFileOutput]{
		{
			name: "line endings stripped",
			args: map[string]any{"path": "a.txt"},
			want: readFileOutput{Path: "a.txt", Content: "one\ntwo\nthree", StartLine: 1, TotalLines: 3},
		},
		{
			name: "path cleaned",
			args: map[string]any{"path": "./dir//b.txt"},
			want: readFileOutput{Path: "dir/b.txt", Content: "b", StartLine: 1, TotalLines: 1},
		},
		{
			name: "relative symlink inside",
			args: map[string]any{"path": "link.txt"},
			want: readFileOutput{Path: "link.txt", Content: "one\ntwo\nthree", StartLine: 1, TotalLines: 3},
		},
		{
			name: "symlinked directory inside",
			args: map[string]any{"path": "dirlink/b.txt"},
			want: readFileOutput{Path: "dirlink/b.txt", Content: "b", StartLine: 1, TotalLines: 1},
		},
		{
			name: "symlink up to a sibling inside",
			args: map[string]any{"path": "dir/up.txt"},
			want: readFileOutput{Path: "dir/up.txt", Content: "one\ntwo\nthree", StartLine: 1, TotalLines: 3},
		},
		{
			name: "truncated",
			args: map[string]any{"path": "five.txt", "line_limit": 3},
			want: readFileOutput{Path: "five.txt", Content: "1\n2\n3", Truncated: true, StartLine: 1, TotalLines: 5, NextOffset: 3},
		},
		{
			name: "limit equals lines",
			args: map[string]any{"path": "five.txt", "line_limit": 5},
			want: readFileOutput{Path: "five.txt", Content: "1\n2\n3\n4\n5", StartLine: 1, TotalLines: 5},
		},
		{
			name: "limit one",
			args: map[string]any{"path": "five.txt", "line_limit": 1},
			want: readFileOutput{Path: "five.txt", Content: "1", Truncated: true, StartLine: 1, TotalLines: 5, NextOffset: 1},
		},
		{
			name: "offset",
			args: map[string]any{"path": "five.txt", "offset": 1, "line_limit": 2},
			want: readFileOutput{Path: "five.txt", Content: "2\n3", Truncated: true, StartLine: 2, TotalLines: 5, NextOffset: 3},
		},
		{
			name: "offset reaching the end",
			args: map[string]any{"path": "five.txt", "offset": 3, "line_limit": 2},
			want: readFileOutput{Path: "five.txt", Content: "4\n5", StartLine: 4, TotalLines: 5},
		},
		{
			name: "offset past the limit of the end",
			args: map[string]any{"path": "five.txt", "offset": 4, "line_limit": 200},
			want: readFileOutput{Path: "five.txt", Content: "5", StartLine: 5, TotalLines: 5},
		},
		{
			name: "offset at the end",
			args: map[string]any{"path": "five.txt", "offset": 5},
			want: readFileOutput{Path: "five.txt", StartLine: 6, TotalLines: 5},
		},
		{
			name: "offset zero",
			args: map[string]any{"path": "five.txt", "offset": 0, "line_limit": 1},
			want: readFileOutput{Path: "five.txt", Content: "1", Truncated: true, StartLine: 1, TotalLines: 5, NextOffset: 1},
		},
		{
			name: "default limit 200",
			args: map[string]any{"path": "201.txt"},
			want: readFileOutput{Path: "201.txt", Content: strings.TrimSuffix(numbered(200), "\n"), Truncated: true, StartLine: 1, TotalLines: 201, NextOffset: 200},
		},
		{
			name: "second page of 201",
			args: map[string]any{"path": "201.txt", "offset": 200},
			want: readFileOutput{Path: "201.txt", Content: strings.Repeat("x", 200%7), StartLine: 201, TotalLines: 201},
		},
		{
			name: "limit 1000",
			args: map[string]any{"path": "1001.txt", "line_limit": 1000},
			want: readFileOutput{Path: "1001.txt", Content: strings.TrimSuffix(numbered(1000), "\n"), Truncated: true, StartLine: 1, TotalLines: 1001, NextOffset: 1000},
		},
		{
			name: "empty file",
			args: map[string]any{"path": "empty.txt"},
			want: readFileOutput{Path: "empty.txt", StartLine: 1},
		},
		{
			name: "blank lines",
			args: map[string]any{"path": "blank.txt", "line_limit": 2},
			want: readFileOutput{Path: "blank.txt", Content: "\n", StartLine: 1, TotalLines: 2},
		},
		{
			name: "unicode",
			args: map[string]any{"path": "unicode.txt"},
			want: readFileOutput{Path: "unicode.txt", Content: "héllo\nwörld ✓", StartLine: 1, TotalLines: 2},
		},
	})
}

// TestReadFilePages reads a file page by page, following next_offset, and
// checks that the pages put together are the file.
func TestReadFilePages(t *testing.T) {
	root, _ := newTree(t)
	var b strings.Builder
	for i := range 2345 {
		fmt.Fprintf(&b, "line %d\r\n", i+1)
	}
	writeFile(t, filepath.Join(root, "long.txt"), b.String())
	cs := connect(t, root, nil, "")

	var pages []string
	args := map[string]any{"path": "long.txt", "line_limit": 1000}
	for range 10 {
		got := structured[readFileOutput](t, callReadFile(t, cs, args))
		if want := args["offset"]; want != nil && got.StartLine != want.(int)+1 {
			t.Errorf("start_line: got %d, want %d", got.StartLine, want.(int)+1)
		}
		pages = append(pages, got.Content)
		if !got.Truncated {
			break
		}
		args["offset"] = got.NextOffset
	}
	if got, want := len(pages), 3; got != want {
		t.Errorf("pages: got %d, want %d", got, want)
	}
	want := strings.TrimSuffix(strings.ReplaceAll(b.String(), "\r\n", "\n"), "\n")
	if got := strings.Join(pages, "\n"); got != want {
		t.Errorf("pages joined differ from the file:\n%s", cmp.Diff(want, got))
	}
}

func TestReadFileRefused(t *testing.T) {
	root, outside := newTree(t)
	rootBase := filepath.Base(root)
	if err := os.Mkdir(filepath.Join(root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	mkfifo(t, filepath.Join(root, "fifo"))
	listenUnix(t, filepath.Join(root, "sock"))
	symlink(t, "fifo", filepath.Join(root, "fifolink"))
	symlink(t, "../outside/secret.txt", filepath.Join(root, "rel-out"))
	symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(root, "abs-out"))
	symlink(t, filepath.Join(root, "a.txt"), filepath.Join(root, "abs-in"))
	symlink(t, "../"+rootBase+"/a.txt", filepath.Join(root, "out-and-back"))
	symlink(t, "../outside", filepath.Join(root, "outdir"))
	symlink(t, "missing.txt", filepath.Join(root, "dangling"))
	symlink(t, "loop2", filepath.Join(root, "loop1"))
	symlink(t, "loop1", filepath.Join(root, "loop2"))
	writeFile(t, filepath.Join(root, "orig.txt"), "shared\n")
	if err := os.Link(filepath.Join(root, "orig.txt"), filepath.Join(root, "hard-in.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(root, "hard-out.txt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "big.bin"), strings.Repeat("a", workspace.DefaultMaxFileBytes+1))
	writeFile(t, filepath.Join(root, "latin1.txt"), "caf\xe9\n")
	writeFile(t, filepath.Join(root, "late-bad.txt"), "ok\n"+strings.Repeat("line\n", 500)+"\xff")
	writeFile(t, filepath.Join(root, "nul.bin"), "text\x00more text\n")

	const escaped = "resolves outside the workspace (symbolic links are followed only when relative and inside the workspace)"
	const absolute = "path is absolute; give a path relative to the workspace root"
	tests := []refusal{
		{"missing", map[string]any{"path": "nope.txt"}, `path "nope.txt": no such file`},
		{"under a file", map[string]any{"path": "a.txt/x"}, `path "a.txt/x": no such file`},
		{"dangling symlink", map[string]any{"path": "dangling"}, `path "dangling": no such file`},
		{"directory", map[string]any{"path": "dir"}, `path "dir": not a regular file`},
		{"root itself", map[string]any{"path": "."}, `path ".": not a regular file`},
		{"fifo", map[string]any{"path": "fifo"}, `path "fifo": not a regular file`},
		{"symlink to fifo", map[string]any{"path": "fifolink"}, `path "fifolink": not a regular file`},
		{"unix socket", map[string]any{"path": "sock"}, `path "sock": not a regular file`},
		{"relative symlink escaping", map[string]any{"path": "rel-out"}, `path "rel-out": ` + escaped},
		{"absolute symlink escaping", map[string]any{"path": "abs-out"}, `path "abs-out": ` + escaped},
		{"absolute symlink inside", map[string]any{"path": "abs-in"}, `path "abs-in": ` + escaped},
		{"symlink out and back in", map[string]any{"path": "out-and-back"}, `path "out-and-back": ` + escaped},
		{"symlinked directory escaping", map[string]any{"path": "outdir/secret.txt"}, `path "outdir/secret.txt": ` + escaped},
		{"symlink loop", map[string]any{"path": "loop1"}, `path "loop1": too many levels of symbolic links`},
		{"hard link inside", map[string]any{"path": "hard-in.txt"}, `path "hard-in.txt": has more than one hard link, so it may be shared with files outside the workspace`},
		{"hard link original", map[string]any{"path": "orig.txt"}, `path "orig.txt": has more than one hard link, so it may be shared with files outside the workspace`},
		{"hard link to outside", map[string]any{"path": "hard-out.txt"}, `path "hard-out.txt": has more than one hard link, so it may be shared with files outside the workspace`},
		{"big file", map[string]any{"path": "big.bin"}, `path "big.bin": larger than 2000000 bytes`},
		{"invalid UTF-8", map[string]any{"path": "latin1.txt"}, `path "latin1.txt": not valid UTF-8 text`},
		{"invalid UTF-8 past the limit", map[string]any{"path": "late-bad.txt"}, `path "late-bad.txt": not valid UTF-8 text`},
		{"binary", map[string]any{"path": "nul.bin"}, `path "nul.bin": is a binary file (it has a NUL byte in its first 8 KB)`},
		{"absolute inside", map[string]any{"path": filepath.Join(root, "a.txt")}, absolute},
		{"absolute outside", map[string]any{"path": filepath.Join(outside, "secret.txt")}, absolute},
		{"parent", map[string]any{"path": ".."}, `path "..": outside the workspace`},
		{"parent file", map[string]any{"path": "../x"}, `path "../x": outside the workspace`},
		{"parent via sibling", map[string]any{"path": "../outside/secret.txt"}, `path "../outside/secret.txt": outside the workspace`},
		{"parent after dir", map[string]any{"path": "dir/../../x"}, `path "dir/../../x": outside the workspace`},
		{"dotdot inside", map[string]any{"path": "dir/../a.txt"}, `path "dir/../a.txt": ".." elements are not allowed; give a path without them`},
		{"empty", map[string]any{"path": ""}, "path is empty; give a file path relative to the workspace root"},
		{"NUL byte", map[string]any{"path": "a.txt\x00b"}, `path "a.txt\x00b": contains a NUL byte`},
		{"long path echo bounded", map[string]any{"path": strings.Repeat("d/", 300) + "x"}, `path "` + strings.Repeat("d/", 100) + `...": no such file`},
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		cs := connect(t, root, nil, version)
		t.Run(version, func(t *testing.T) {
			checkRefusals(t, cs, "read_file", tests, exactly, root, outside)
		})
	}
}

func TestReadFileOffsetPastEnd(t *testing.T) {
	root, _ := newTree(t)
	cs := connect(t, root, nil, "")
	got := toolError(t, callReadFile(t, cs, map[string]any{"path": "a.txt", "offset": 4}))
	if want := `path "a.txt": offset 4 is past the end of the file, which has 3 lines`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestReadFileMaxBytes(t *testing.T) {
	root, _ := newTree(t)
	writeFile(t, filepath.Join(root, "16.txt"), strings.Repeat("a", 16))
	writeFile(t, filepath.Join(root, "17.txt"), strings.Repeat("a", 17))
	cs := connect(t, root, &workspace.Options{MaxFileBytes: 16}, "")
	tests := []struct {
		path    string
		wantErr string
	}{
		{path: "16.txt"},
		{path: "17.txt", wantErr: `path "17.txt": larger than 16 bytes`},
	}
	for _, tt := range tests {
		res := callReadFile(t, cs, map[string]any{"path": tt.path})
		got := resultText(t, res)
		if tt.wantErr == "" {
			if res.IsError {
				t.Errorf("%s: got error %q, want success", tt.path, got)
			}
			continue
		}
		if !res.IsError || got != tt.wantErr {
			t.Errorf("%s: got %q (isError %v), want error %q", tt.path, got, res.IsError, tt.wantErr)
		}
	}
}

// TestReadFileArguments checks that the SDK holds arguments to the input
// schema before the handler runs.
func TestReadFileArguments(t *testing.T) {
	root, _ := newTree(t)
	tests := []refusal{
		{"line_limit zero", map[string]any{"path": "a.txt", "line_limit": 0}, "line_limit"},
		{"line_limit negative", map[string]any{"path": "a.txt", "line_limit": -1}, "line_limit"},
		{"line_limit over maximum", map[string]any{"path": "a.txt", "line_limit": 1001}, "line_limit"},
		{"line_limit fractional", map[string]any{"path": "a.txt", "line_limit": 2.5}, "line_limit"},
		{"line_limit string", map[string]any{"path": "a.txt", "line_limit": "3"}, "line_limit"},
		{"offset negative", map[string]any{"path": "a.txt", "offset": -1}, "offset"},
		{"offset fractional", map[string]any{"path": "a.txt", "offset": 0.5}, "offset"},
		{"offset null", map[string]any{"path": "a.txt", "offset": nil}, "offset"},
		{"unknown argument", map[string]any{"path": "a.txt", "lines": 3}, "lines"},
		{"path missing", map[string]any{"line_limit": 3}, "path"},
		{"path not a string", map[string]any{"path": 7}, "path"},
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		cs := connect(t, root, nil, version)
		t.Run(version, func(t *testing.T) {
			checkRefusals(t, cs, "read_file", tests, schemaError, root)
		})
	}
}
