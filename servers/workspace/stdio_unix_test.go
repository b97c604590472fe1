//go:build unix

package workspace_test

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// fileSizeEnv makes the server process started by startStdio unable to
// write files larger than the given number of bytes: a real failure in the
// middle of a write, which no argument can cause.
const fileSizeEnv = "WORKSPACE_TEST_MAX_FILE_SIZE"

func init() {
	v := os.Getenv(fileSizeEnv)
	if v == "" {
		return
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		panic(err)
	}
	// Past the limit a write fails with EFBIG once SIGXFSZ, which would
	// kill the process, is ignored.
	signal.Ignore(syscall.SIGXFSZ)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
		panic(err)
	}
}

// TestWriteFileFailure makes writes fail half-way, in a server that cannot
// write more than 1000 bytes to a file: the file keeps its old content, a
// new file is not created, and no temporary file is left behind.
func TestWriteFileFailure(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "keep.txt"), "old content\n")
	cs, stderr := startStdio(t, root, fmt.Sprintf("%s=%d", fileSizeEnv, 1000))

	big := strings.Repeat("new content\n", 400)
	tests := []struct {
		path, content string
		want          string // error text; empty: success
	}{
		{"keep.txt", big, `path "keep.txt": cannot be written; the file is unchanged`},
		{"new.txt", big, `path "new.txt": cannot be written`},
		{"small.txt", "fits\n", ""},
	}
	for _, tt := range tests {
		res := callTool(t, cs, "write_file", map[string]any{"path": tt.path, "content": tt.content})
		if tt.want == "" {
			if res.IsError {
				t.Errorf("write %s: got error %q, want success", tt.path, resultText(t, res))
			}
			continue
		}
		if got := toolError(t, res); got != tt.want {
			t.Errorf("write %s: got %q, want %q", tt.path, got, tt.want)
		}
	}
	if got, want := readHostFile(t, filepath.Join(root, "keep.txt")), "old content\n"; got != want {
		t.Errorf("keep.txt after a failed write: got %q, want %q", got, want)
	}
	if _, err := os.Lstat(filepath.Join(root, "new.txt")); err == nil {
		t.Error("new.txt exists after a failed write")
	}
	noTempFiles(t, root)
	// Closing waits for the process, so stderr is complete.
	if err := cs.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if !strings.Contains(stderr.String(), "file too large") {
		t.Errorf("stderr: got %q, want the cause of the failure logged", stderr.String())
	}
}
