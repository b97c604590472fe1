//go:build unix

package workspace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/servers/workspace"
)

// toolArgs returns the arguments that make tool act on p.
func toolArgs(tool, p string) map[string]any {
	switch tool {
	case "search_text":
		return map[string]any{"pattern": canary, "path": p}
	case "write_file":
		return map[string]any{"path": p, "content": "written"}
	}
	return map[string]any{"path": p}
}

var tools = []string{"read_file", "list_dir", "search_text", "write_file"}

// canary is the content of the file outside the workspace that the path
// matrix aims at; no answer may contain it.
const canary = "canary-7f3a"

// outsideState records every file outside the workspace with its content,
// to check that no call changed or added one.
func outsideState(t *testing.T, dir string) map[string]string {
	t.Helper()
	state := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		state[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return state
}

// TestPathMatrix sends every tool the same set of hostile and borderline
// paths, against real files, and checks each answer.
func TestPathMatrix(t *testing.T) {
	root, outside := newTree(t)
	writeFile(t, filepath.Join(root, "dir", "b.txt"), "b\n")
	writeFile(t, filepath.Join(outside, "secret.txt"), canary+"\n")
	writeFile(t, filepath.Join(outside, canary+".txt"), canary+"\n")
	symlink(t, "../outside/secret.txt", filepath.Join(root, "rel-out"))
	symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(root, "abs-out"))
	symlink(t, "chain2", filepath.Join(root, "chain1"))
	symlink(t, "dir/chain3", filepath.Join(root, "chain2"))
	symlink(t, "../../outside/secret.txt", filepath.Join(root, "dir", "chain3"))
	symlink(t, "in2", filepath.Join(root, "in1"))
	symlink(t, "dir/in3", filepath.Join(root, "in2"))
	symlink(t, "../a.txt", filepath.Join(root, "dir", "in3"))
	symlink(t, "../outside", filepath.Join(root, "outdir"))
	symlink(t, outside, filepath.Join(root, "absdir"))
	symlink(t, "dir", filepath.Join(root, "dirlink"))
	if err := os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(root, "hard-out.txt")); err != nil {
		t.Fatal(err)
	}
	mkfifo(t, filepath.Join(root, "fifo"))
	before := outsideState(t, outside)

	const (
		ok        = "ok"
		outsideWS = "outside the workspace"
		escaped   = "resolves outside the workspace (symbolic links are followed only when relative and inside the workspace)"
		absolute  = "path is absolute; give a path relative to the workspace root"
		finalLink = "is a symbolic link; write_file does not write through links, so give the real path"
		hardLink  = "has more than one hard link, so it may be shared with files outside the workspace"
		notDir    = "not a directory"
		asDir     = "names a directory; give the path of a file"
	)
	dirLink := func(name string) string {
		return fmt.Sprintf("%q is a symbolic link; write_file does not follow links, so give the real path", name)
	}
	type want struct{ read, list, search, write string }
	tests := []struct {
		name string
		path string
		want want
	}{
		{"parent", "..", want{outsideWS, outsideWS, outsideWS, outsideWS}},
		{"parent file", "../outside/secret.txt", want{outsideWS, outsideWS, outsideWS, outsideWS}},
		{"parent after a directory", "dir/../../outside", want{outsideWS, outsideWS, outsideWS, outsideWS}},
		{"absolute outside", filepath.Join(outside, "secret.txt"), want{absolute, absolute, absolute, absolute}},
		{"absolute root", root, want{absolute, absolute, absolute, absolute}},
		{"relative symlink to outside", "rel-out", want{escaped, escaped, escaped, finalLink}},
		{"absolute symlink to outside", "abs-out", want{escaped, escaped, escaped, finalLink}},
		{"symlink chain to outside", "chain1", want{escaped, escaped, escaped, finalLink}},
		{"symlink chain inside", "in1", want{ok, notDir, ok, finalLink}},
		{"directory symlink to outside", "outdir", want{escaped, escaped, escaped, finalLink}},
		{"directory symlink to outside, trailing slash", "outdir/", want{escaped, escaped, escaped, asDir}},
		{"through a directory symlink to outside", "outdir/secret.txt", want{escaped, escaped, escaped, dirLink("outdir")}},
		{"through an absolute directory symlink", "absdir/secret.txt", want{escaped, escaped, escaped, dirLink("absdir")}},
		{"directory symlink inside, trailing slash", "dirlink/", want{"not a regular file", ok, ok, asDir}},
		{"through a directory symlink inside", "dirlink/b.txt", want{ok, notDir, ok, dirLink("dirlink")}},
		{"hard link to outside", "hard-out.txt", want{hardLink, notDir, hardLink, hardLink}},
		{"fifo", "fifo", want{"not a regular file", notDir, "not a regular file or directory", "not a regular file"}},
	}
	cs := connect(t, root, nil, "")
	for _, tt := range tests {
		for i, tool := range tools {
			wantText := []string{tt.want.read, tt.want.list, tt.want.search, tt.want.write}[i]
			t.Run(tt.name+"/"+tool, func(t *testing.T) {
				res := callTool(t, cs, tool, toolArgs(tool, tt.path))
				text := resultText(t, res)
				if strings.Contains(text, canary) {
					t.Errorf("result %q shows content from outside the workspace", text)
				}
				switch {
				case wantText == ok && res.IsError:
					t.Errorf("got tool error %q, want success", text)
				case wantText == ok:
				case !res.IsError:
					t.Errorf("got success %q, want a tool error", text)
				case wantText == absolute:
					if text != absolute {
						t.Errorf("got %q, want %q", text, absolute)
					}
				default:
					if want := fmt.Sprintf("path %q: %s", tt.path, wantText); text != want {
						t.Errorf("got %q, want %q", text, want)
					}
					noHostPaths(t, text, root, outside)
				}
			})
		}
	}
	if diff := cmpState(before, outsideState(t, outside)); diff != "" {
		t.Errorf("outside the workspace changed: %s", diff)
	}
}

func cmpState(before, after map[string]string) string {
	var diffs []string
	for name, content := range after {
		if old, ok := before[name]; !ok {
			diffs = append(diffs, "created "+name)
		} else if old != content {
			diffs = append(diffs, "changed "+name)
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			diffs = append(diffs, "removed "+name)
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, ", ")
}

// TestRenameRace swaps a directory for a symbolic link to outside the
// workspace, over and over, while every tool works on paths through it.
// Each call may succeed on the real directory or be refused; none may ever
// show content from outside or write there.
func TestRenameRace(t *testing.T) {
	root, outside := newTree(t)
	writeFile(t, filepath.Join(root, "d", "f.txt"), "inside\n")
	writeFile(t, filepath.Join(outside, "f.txt"), "secret\n")
	writeFile(t, filepath.Join(outside, "only-outside.txt"), "secret\n")
	symlink(t, "../outside", filepath.Join(root, "swap"))
	writeFile(t, filepath.Join(root, "file-or-fifo"), "inside\n")
	mkfifo(t, filepath.Join(root, "fifo-spare"))
	before := outsideState(t, outside)
	cs := connect(t, root, nil, "")

	at := func(name string) string { return filepath.Join(root, name) }
	swaps := 0
	stopSwaps := repeat(t, func() bool {
		// d becomes the link to outside, then the directory again; the
		// regular file becomes a FIFO and back.
		for _, step := range [][2]string{
			{"d", "d.real"}, {"swap", "d"}, {"file-or-fifo", "file.real"}, {"fifo-spare", "file-or-fifo"},
			{"d", "swap"}, {"d.real", "d"}, {"file-or-fifo", "fifo-spare"}, {"file.real", "file-or-fifo"},
		} {
			if err := os.Rename(at(step[0]), at(step[1])); err != nil {
				t.Errorf("rename: %v", err)
				return false
			}
		}
		swaps++
		return true
	})

	calls := []struct {
		tool string
		args map[string]any
		// leaked reports whether a successful result shows outside content.
		leaked func(string) bool
	}{
		{"read_file", map[string]any{"path": "d/f.txt"}, func(s string) bool { return !strings.Contains(s, "inside") }},
		{"read_file", map[string]any{"path": "file-or-fifo"}, func(s string) bool { return !strings.Contains(s, "inside") }},
		{"list_dir", map[string]any{"path": "d"}, func(s string) bool { return strings.Contains(s, "only-outside") }},
		{"list_dir", map[string]any{"path": "d/"}, func(s string) bool { return strings.Contains(s, "only-outside") }},
		{"search_text", map[string]any{"pattern": "secret", "path": "d"}, func(s string) bool { return strings.Contains(s, "secret") }},
		{"search_text", map[string]any{"pattern": "secret"}, func(s string) bool { return strings.Contains(s, "secret") }},
		{"search_text", map[string]any{"pattern": "inside", "path": "file-or-fifo"}, func(s string) bool { return strings.Contains(s, "secret") }},
		{"write_file", map[string]any{"path": "d/new.txt", "content": "new"}, func(string) bool { return false }},
	}
	succeeded := make([]int, len(calls))
	for range 60 {
		for i, c := range calls {
			// A FIFO must never hold a call: each has a second to answer.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
			cancel()
			if err != nil {
				t.Fatalf("%s %v: %v", c.tool, c.args, err)
			}
			text := resultText(t, res)
			if res.IsError {
				noHostPaths(t, text, root, outside)
				continue
			}
			succeeded[i]++
			if c.leaked(text) {
				t.Fatalf("%s %v returned outside content: %q", c.tool, c.args, text)
			}
		}
	}
	stopSwaps()
	t.Logf("%d swaps; successful calls per call: %v", swaps, succeeded)
	if diff := cmpState(before, outsideState(t, outside)); diff != "" {
		t.Errorf("outside the workspace changed: %s", diff)
	}
}

// TestFIFO checks that no tool blocks on a FIFO, named directly, through a
// link, or met during a walk: each call answers within a second.
func TestFIFO(t *testing.T) {
	root, _ := newTree(t)
	mkfifo(t, filepath.Join(root, "fifo"))
	if err := os.Mkdir(filepath.Join(root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	mkfifo(t, filepath.Join(root, "dir", "inner"))
	symlink(t, "fifo", filepath.Join(root, "fifolink"))
	cs := connect(t, root, nil, "")
	tests := []struct {
		tool    string
		args    map[string]any
		wantErr string // empty: success
	}{
		{"read_file", map[string]any{"path": "fifo"}, `path "fifo": not a regular file`},
		{"read_file", map[string]any{"path": "fifolink"}, `path "fifolink": not a regular file`},
		{"list_dir", map[string]any{"path": "fifo"}, `path "fifo": not a directory`},
		{"list_dir", map[string]any{"path": "fifo/"}, `path "fifo/": not a directory`},
		{"list_dir", map[string]any{"path": "dir"}, ""},
		{"search_text", map[string]any{"pattern": "x", "path": "fifo"}, `path "fifo": not a regular file or directory`},
		{"search_text", map[string]any{"pattern": "x", "path": "fifolink"}, `path "fifolink": not a regular file or directory`},
		{"search_text", map[string]any{"pattern": "x"}, ""},
		{"write_file", map[string]any{"path": "fifo", "content": "x"}, `path "fifo": not a regular file`},
		{"write_file", map[string]any{"path": "fifo/x", "content": "x"}, `path "fifo/x": "fifo" is not a directory`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %v", tt.tool, tt.args), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args})
			if err != nil {
				t.Fatalf("got %v, want an answer within a second", err)
			}
			text := resultText(t, res)
			if tt.wantErr == "" {
				if res.IsError {
					t.Errorf("got tool error %q, want success", text)
				}
				return
			}
			if !res.IsError || text != tt.wantErr {
				t.Errorf("got %q (isError %v), want error %q", text, res.IsError, tt.wantErr)
			}
		})
	}
}

// TestHardLinkOption checks each tool on a hard link to a file outside
// the workspace, refused by default and allowed with AllowHardLinks.
func TestHardLinkOption(t *testing.T) {
	root, outside := newTree(t)
	if err := os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(root, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	const refused = `path "hard.txt": has more than one hard link, so it may be shared with files outside the workspace`
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("allow=%v", allow), func(t *testing.T) {
			cs := connect(t, root, &workspace.Options{AllowHardLinks: allow}, "")
			read := callReadFile(t, cs, map[string]any{"path": "hard.txt"})
			search := callTool(t, cs, "search_text", map[string]any{"pattern": "secret", "path": "hard.txt"})
			if !allow {
				for _, res := range []*mcp.CallToolResult{read, search, callTool(t, cs, "write_file", map[string]any{"path": "hard.txt", "content": "x"})} {
					if got := toolError(t, res); got != refused {
						t.Errorf("got %q, want %q", got, refused)
					}
				}
				return
			}
			if got, want := structured[readFileOutput](t, read).Content, "secret"; got != want {
				t.Errorf("read_file: got %q, want %q", got, want)
			}
			if got, want := len(structured[searchTextOutput](t, search).Matches), 1; got != want {
				t.Errorf("search_text: got %d matches, want %d", got, want)
			}
		})
	}
	// Listing shows the name either way; it reads no content.
	cs := connect(t, root, nil, "")
	got := structured[listDirOutput](t, callTool(t, cs, "list_dir", map[string]any{"pattern": "hard.txt"}))
	if want := []dirEntry{{Name: "hard.txt", Type: "file", Size: 7}}; !slices.Equal(got.Entries, want) {
		t.Errorf("list_dir: got %v, want %v", got.Entries, want)
	}
}

// TestLargeAndBinaryFiles checks every tool on a 3 MB file and on a binary
// file.
func TestLargeAndBinaryFiles(t *testing.T) {
	root, _ := newTree(t)
	big := strings.Repeat("line of text\n", 3_000_000/13+1)[:3_000_000]
	writeFile(t, filepath.Join(root, "big.txt"), big)
	writeFile(t, filepath.Join(root, "bin.dat"), "\x7fELF\x02\x01\x01\x00\x00text")
	cs := connect(t, root, nil, "")

	for _, tt := range []struct{ path, reason string }{
		{"big.txt", "larger than 2000000 bytes"},
		{"bin.dat", "is a binary file (it has a NUL byte in its first 8 KB)"},
	} {
		want := fmt.Sprintf("path %q: %s", tt.path, tt.reason)
		if got := toolError(t, callReadFile(t, cs, map[string]any{"path": tt.path})); got != want {
			t.Errorf("read_file: got %q, want %q", got, want)
		}
		if got := toolError(t, callTool(t, cs, "search_text", map[string]any{"pattern": "text", "path": tt.path})); got != want {
			t.Errorf("search_text: got %q, want %q", got, want)
		}
	}
	got := structured[searchTextOutput](t, callTool(t, cs, "search_text", map[string]any{"pattern": "text"}))
	if got.FilesSkipped != 2 || len(got.Matches) != 0 {
		t.Errorf("search_text over the tree: got %+v, want both files skipped and no match", got)
	}
	list := structured[listDirOutput](t, callTool(t, cs, "list_dir", map[string]any{"pattern": "b*"}))
	wantList := []dirEntry{{Name: "big.txt", Type: "file", Size: 3_000_000}, {Name: "bin.dat", Type: "file", Size: 13}}
	if !slices.Equal(list.Entries, wantList) {
		t.Errorf("list_dir: got %v, want %v", list.Entries, wantList)
	}
	if got, want := toolError(t, callTool(t, cs, "write_file", map[string]any{"path": "big.txt", "content": big})), `path "big.txt": content is larger than 2000000 bytes`; got != want {
		t.Errorf("write_file: got %q, want %q", got, want)
	}
	if readHostFile(t, filepath.Join(root, "big.txt")) != big {
		t.Error("big.txt changed after a refused write")
	}
}
