package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const (
	goSDKModule          = "github.com/modelcontextprotocol/go-sdk"
	goSDKEverythingBuild = goSDKModule + "/conformance/everything-server"
)

// goSDKEverything builds the server at most once per test process.
var goSDKEverything = sync.OnceValues(buildGoSDKEverythingServer)

// GoSDKEverythingServer returns the path of the go-sdk's conformance
// everything-server, built from the SDK version this module requires. The
// binary speaks MCP over stdio when started without arguments. A build
// failure fails the test with the go command's output.
//
// The binary lives in the user's cache directory, under a name that holds the
// SDK version, so that test processes share one file instead of leaving a
// copy each in a temporary directory. It is still rebuilt once per test
// process, which the go build cache makes cheap, so a replaced or edited SDK
// is never served stale; it is moved into place atomically, so concurrent
// test processes never see half a file.
func GoSDKEverythingServer(t testing.TB) string {
	t.Helper()
	path, err := goSDKEverything()
	if err != nil {
		t.Fatalf("testenv: building the go-sdk everything-server: %v", err)
	}
	return path
}

func buildGoSDKEverythingServer() (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	version, err := runGo(goTool, "list", "-m", "-f", "{{.Version}}", goSDKModule)
	if err != nil {
		return "", err
	}
	version = strings.TrimSpace(version)
	if version == "" || strings.ContainsAny(version, `/\`) {
		version = "unknown"
	}

	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "airlock-testenv", "go-sdk-everything-server-"+version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "everything-server")
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	if _, err := runGo(goTool, "build", "-o", tmp, goSDKEverythingBuild); err != nil {
		os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, bin); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return bin, nil
}

// runGo runs the go command in the working directory, which is inside this
// module during tests, and returns its standard output; on failure the error
// carries everything the command printed.
func runGo(goTool string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(goTool, args...)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s%s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.String(), nil
}
