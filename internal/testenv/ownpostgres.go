package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// An OwnPostgres is a PostgreSQL server of the calling test's own, which
// the test may stop and start again (the shared one of [Postgres] serves
// every test at once).
type OwnPostgres struct {
	// URL is its postgres database's URL.
	URL string

	t      testing.TB
	script string
	env    []string
}

// StartOwnPostgres starts a PostgreSQL cluster for the calling test, in a
// directory of its own on a free loopback port, with
// scripts/setup-postgres.sh (initdb and pg_ctl as the postgres user when
// run as root); it is stopped and removed when the test ends. It skips or
// fails the test as [Postgres] does when no PostgreSQL is configured for
// the tests.
func StartOwnPostgres(t testing.TB) *OwnPostgres {
	t.Helper()
	Postgres(t)
	root := moduleRoot()
	if root == "" {
		t.Fatal("testenv: no go.mod above the working directory, to find scripts/setup-postgres.sh")
	}
	script := filepath.Join(root, "scripts", "setup-postgres.sh")
	// The postgres user must reach the data directory: not under a test's
	// own temporary directory, which only its owner may enter.
	dir, err := os.MkdirTemp("", "airlock-pg-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	pg := &OwnPostgres{t: t, script: script,
		env: append(os.Environ(), "AIRLOCK_PG_DATA="+filepath.Join(dir, "data"), fmt.Sprintf("AIRLOCK_PG_PORT=%d", port))}
	t.Cleanup(func() {
		pg.run("stop")
		os.RemoveAll(dir)
	})
	pg.URL = strings.TrimSpace(pg.run())
	return pg
}

// Stop stops the server (fast shutdown: open connections are closed).
func (pg *OwnPostgres) Stop() { pg.t.Helper(); pg.run("stop") }

// Start starts the server again.
func (pg *OwnPostgres) Start() { pg.t.Helper(); pg.run() }

func (pg *OwnPostgres) run(args ...string) string {
	pg.t.Helper()
	cmd := exec.Command("bash", append([]string{pg.script}, args...)...)
	cmd.Env = pg.env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		pg.t.Fatalf("testenv: setup-postgres.sh %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
