//go:build unix

package workspace_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// newTree makes a workspace root and, beside it, a directory outside the
// workspace holding a secret. The root's path is short so that a unix
// socket fits in it.
func newTree(t *testing.T) (root, outside string) {
	t.Helper()
	base, err := os.MkdirTemp("", "ws")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	root = filepath.Join(base, "root")
	outside = filepath.Join(base, "outside")
	writeFile(t, filepath.Join(outside, "secret.txt"), "secret\n")
	writeFile(t, filepath.Join(root, "a.txt"), "one\ntwo\r\nthree\n")
	return root, outside
}

func mkfifo(t *testing.T, name string) {
	t.Helper()
	if err := syscall.Mkfifo(name, 0o644); err != nil {
		t.Fatal(err)
	}
}

// listenUnix puts a unix socket at name for the rest of the test.
func listenUnix(t *testing.T, name string) {
	t.Helper()
	ln, err := net.Listen("unix", name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
}

// noHostPaths fails if msg shows a host path or operating-system error text.
func noHostPaths(t *testing.T, msg string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		for _, p := range []string{d, filepath.Dir(d)} {
			if strings.Contains(msg, p) {
				t.Errorf("message %q shows host path %q", msg, p)
			}
		}
		if real, err := filepath.EvalSymlinks(d); err == nil && strings.Contains(msg, real) {
			t.Errorf("message %q shows host path %q", msg, real)
		}
	}
	for _, s := range []string{"openat", "statat", "escapes from parent", "no such file or directory", "/tmp", os.TempDir()} {
		if strings.Contains(msg, s) {
			t.Errorf("message %q shows system detail %q", msg, s)
		}
	}
}

// A refusal is a call a tool must refuse, and what its message must say.
type refusal struct {
	name string
	args map[string]any
	want string
}

// checkRefusals makes each call to tool and checks that it is a tool error
// whose message passes judge against the case's want and shows nothing of
// the host directories dirs.
func checkRefusals(t *testing.T, cs *mcp.ClientSession, tool string, tests []refusal, judge func(t *testing.T, got, want string), dirs ...string) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := toolError(t, callTool(t, cs, tool, tt.args))
			judge(t, got, tt.want)
			noHostPaths(t, got, dirs...)
		})
	}
}

// exactly wants the message want, word for word.
func exactly(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// schemaError wants the SDK's schema validation error naming the argument
// arg: the arguments were refused before the handler ran.
func schemaError(t *testing.T, got, arg string) {
	t.Helper()
	if !strings.Contains(got, "validating") || !strings.Contains(got, arg) {
		t.Errorf("got %q, want a schema validation error naming %s", got, arg)
	}
}
