package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/sqlite"
	"github.com/airlockhq/airlock/store/storetest"
)

// The test binary doubles as the child process of the multi-process tests:
// with childEnv set it runs one child role and exits.
const childEnv = "AIRLOCK_STORE_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(child(role, os.Getenv("AIRLOCK_STORE_DB")))
	}
	os.Exit(m.Run())
}

// opener returns the suite's open function: one database file per test,
// every handle a separate *DB on it.
func opener() func(t *testing.T) store.Store {
	dir := storetest.PerTest(func(t *testing.T) string { return t.TempDir() })
	return func(t *testing.T) store.Store {
		db, err := sqlite.Open(filepath.Join(dir(t), "airlock.db"))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db
	}
}

func TestConformance(t *testing.T) {
	storetest.Run(t, opener())
}

func open(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func intent(id string) store.Intent {
	return store.Intent{ID: id, Server: "fs", Tool: "fs__write_file", RemoteTool: "write_file", ArgsHash: "h", Effect: "write"}
}

// A childResult is what a child process reports on its last line.
type childResult struct {
	OpenErr    string   `json:"open_err,omitempty"`
	BeginErr   string   `json:"begin_err,omitempty"`
	ReadErr    string   `json:"read_err,omitempty"`
	Won        []string `json:"won,omitempty"`
	ConsumeErr string   `json:"consume_err,omitempty"`
	AppendErr  string   `json:"append_err,omitempty"`
}

// childAppends is how many batches of 5 events the audit role appends.
const childAppends = 10

// child runs one role against the database at path.
//
//	begin:    begin intent "child", say "begun", wait for stdin to close, exit without End
//	exit:     begin intent "child" and exit at once, without End or Close
//	idle:     begin and end an intent, say "begun", wait for stdin to close
//	consume:  say "ready", wait for a line, then race 8 goroutines for grants of digest "d",
//	          half of them for acme/ada and half for evilcorp/eve (whose wins say "eve:ID")
//	readonly: try to open, read and begin, and report what failed
//	audit:    say "ready", wait for a line, then append childAppends batches of 5 events
//	jobs:     create the working jobs storetest.CreateChildJobs does, say "created", wait for stdin to close
func child(role, path string) int {
	var res childResult
	db, err := sqlite.Open(path)
	if err != nil {
		res.OpenErr = err.Error()
	}
	ctx := context.Background()
	// The racing roles start together: each says "ready" and waits for a
	// line.
	if role == "consume" || role == "audit" {
		if err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Println("ready")
		bufio.NewReader(os.Stdin).ReadString('\n')
	}
	switch role {
	case "jobs":
		if err != nil {
			fmt.Println(err)
			return 1
		}
		if err := storetest.CreateChildJobs(ctx, db); err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Println("created")
		io.Copy(io.Discard, os.Stdin)
		return 0
	case "log":
		if err != nil {
			fmt.Println(err)
			return 1
		}
		return logChild(ctx, db)
	case "begin", "exit", "idle":
		if err != nil {
			fmt.Println(err)
			return 1
		}
		id := "child"
		if role == "idle" {
			id = fmt.Sprint("idle-", os.Getpid())
		}
		if err := db.Journal().Begin(ctx, intent(id)); err != nil {
			fmt.Println(err)
			return 1
		}
		if role == "idle" {
			if err := db.Journal().End(ctx, id, store.OutcomeSucceeded, ""); err != nil {
				fmt.Println(err)
				return 1
			}
		}
		if role == "exit" {
			return 0
		}
		fmt.Println("begun")
		io.Copy(io.Discard, os.Stdin)
		return 0
	case "consume":
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 8 {
			tenant, user, prefix := "acme", "ada", ""
			if i%2 == 1 {
				tenant, user, prefix = "evilcorp", "eve", "eve:"
			}
			wg.Go(func() {
				a, err := db.Approvals().Consume(ctx, "d", tenant, user, time.Now())
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					res.Won = append(res.Won, prefix+a.ID)
				case !errors.Is(err, store.ErrNotFound):
					res.ConsumeErr = err.Error()
				}
			})
		}
		wg.Wait()
	case "audit":
		for b := range childAppends {
			batch := make([]store.Event, 5)
			for i := range batch {
				batch[i] = store.Event{Event: store.EventCallSent, Server: "fs", Tool: fmt.Sprint("tool_", os.Getpid(), "_", b, "_", i)}
			}
			if err := db.Audit().Append(ctx, batch...); err != nil {
				res.AppendErr = err.Error()
				break
			}
		}
	case "readonly":
		if err == nil {
			if _, err := db.Journal().Get(ctx, "before"); err != nil {
				res.ReadErr = err.Error()
			}
			if err := db.Journal().Begin(ctx, intent("after")); err != nil {
				res.BeginErr = err.Error()
			}
		}
	default:
		fmt.Println("unknown role", role)
		return 2
	}
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
	return 0
}

// startChild starts the test binary in role on the database at path.
func startChild(t *testing.T, role, path string, cred *syscall.Credential, exe string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+role, "AIRLOCK_STORE_DB="+path)
	cmd.Stderr = os.Stderr
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, stdin, bufio.NewReader(stdout)
}

// A racer is a child process in one of the racing roles.
type racer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// race starts n children in role on the database at path and, once every
// one is ready, lets them all go at once.
func race(t *testing.T, role, path string, n int) []racer {
	t.Helper()
	var rs []racer
	for range n {
		cmd, stdin, out := startChild(t, role, path, nil, "")
		if got := readLine(t, out); got != "ready" {
			t.Fatalf("child said %q, want ready", got)
		}
		rs = append(rs, racer{cmd, stdin, out})
	}
	for _, r := range rs {
		io.WriteString(r.stdin, "go\n")
	}
	return rs
}

// result reads what the child reports on its last line.
func (r racer) result(t *testing.T) childResult {
	t.Helper()
	var res childResult
	if err := json.Unmarshal([]byte(readLine(t, r.out)), &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading from child: %q, %v", line, err)
	}
	return strings.TrimSpace(line)
}

// TestCrashRecovery: a process that began an intent and died without ending
// it leaves it open while it lives, and unknown after RecoverOpen once it
// is gone, however it went.
func TestCrashRecovery(t *testing.T) {
	for _, how := range []string{"kill", "exit"} {
		t.Run(how, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "airlock.db")
			db := open(t, path)
			j := db.Journal()

			role := "begin"
			if how == "exit" {
				role = "exit"
			}
			cmd, _, out := startChild(t, role, path, nil, "")
			if how == "kill" {
				if got := readLine(t, out); got != "begun" {
					t.Fatalf("child said %q, want begun", got)
				}
				n, err := j.RecoverOpen(t.Context(), time.Now())
				if err != nil || n != 0 {
					t.Fatalf("RecoverOpen while the child lives: got %d, %v; want 0, nil", n, err)
				}
				if r, err := j.Get(t.Context(), "child"); err != nil || r.Status != store.OutcomeOpen {
					t.Fatalf("the child's intent while it lives: got %q, %v; want open", r.Status, err)
				}
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			}
			if err := cmd.Wait(); how == "exit" && err != nil {
				t.Fatalf("child: %v", err)
			}

			// A new process (here: a new DB) recovers it.
			j2 := open(t, path).Journal()
			n, err := j2.RecoverOpen(t.Context(), time.Now())
			if err != nil || n != 1 {
				t.Fatalf("RecoverOpen after the child died: got %d, %v; want 1, nil", n, err)
			}
			recs, err := j.Records(t.Context(), store.RecordFilter{})
			if err != nil {
				t.Fatalf("Records: %v", err)
			}
			if len(recs) != 1 || recs[0].ID != "child" || recs[0].Status != store.OutcomeUnknown {
				t.Fatalf("unresolved records after recovery: got %+v, want the child's intent, unknown", recs)
			}
			if n, err := j.RecoverOpen(t.Context(), time.Now()); err != nil || n != 0 {
				t.Errorf("RecoverOpen again: got %d, %v; want 0, nil", n, err)
			}
			left, _ := os.ReadDir(path + "-writers")
			if len(left) != 0 {
				t.Errorf("writer lock files left after recovery: %v", left)
			}
		})
	}
}

// TestJobsOfKilledProcess: the jobs of a process that was killed while
// they ran stay working while it lives, and are settled failed with their
// Lost errors once it is gone, by Job and by RecoverJobs.
func TestJobsOfKilledProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	db := open(t, path)
	cmd, _, out := startChild(t, "jobs", path, nil, "")
	if got := readLine(t, out); got != "created" {
		t.Fatalf("child said %q, want created", got)
	}
	storetest.JobsOfKilledWriter(t, db, func() {
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
	})
}

// TestSweepWriters: the lock file of a process that died between calls is
// removed by the next RecoverOpen, and a live process's is kept.
func TestSweepWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	j := open(t, path).Journal()
	dead, _, deadOut := startChild(t, "idle", path, nil, "")
	_, _, liveOut := startChild(t, "idle", path, nil, "")
	for _, out := range []*bufio.Reader{deadOut, liveOut} {
		if got := readLine(t, out); got != "begun" {
			t.Fatalf("child said %q, want begun", got)
		}
	}
	dead.Process.Signal(syscall.SIGKILL)
	dead.Wait()
	if n, err := j.RecoverOpen(t.Context(), time.Now()); err != nil || n != 0 {
		t.Fatalf("RecoverOpen: got %d, %v; want 0, nil", n, err)
	}
	left, err := os.ReadDir(path + "-writers")
	if err != nil {
		t.Fatal(err)
	}
	// The live child's lock file and intent log.
	if len(left) != 2 {
		t.Errorf("files in the writers' directory after the sweep: got %v, want the live child's two", left)
	}
}

// TestConsumeAcrossProcesses: processes racing for grants of one digest
// use each grant exactly once, and only for the principal it was asked
// for.
func TestConsumeAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	ap := open(t, path).Approvals()
	const grants = 3
	for i := range grants {
		id := fmt.Sprintf("apr_%d", i)
		if err := ap.Create(t.Context(), store.Approval{ID: id, Digest: "d", ExpiresAt: time.Now().Add(time.Hour),
			Tenant: "acme", User: "ada"}); err != nil {
			t.Fatal(err)
		}
		if err := ap.Decide(t.Context(), id, true, "ada", ""); err != nil {
			t.Fatal(err)
		}
	}
	won := map[string]int{}
	for _, p := range race(t, "consume", path, 4) {
		res := p.result(t)
		if res.ConsumeErr != "" {
			t.Errorf("a child's Consume failed: %s", res.ConsumeErr)
		}
		for _, id := range res.Won {
			won[id]++
		}
	}
	want := map[string]int{"apr_0": 1, "apr_1": 1, "apr_2": 1}
	if diff := cmp.Diff(want, won); diff != "" {
		t.Errorf("grants used by 4 processes x 8 goroutines (-want +got):\n%s", diff)
	}
}

// TestReadOnly: a database that cannot be written refuses Begin (the host
// then refuses the call). As root, permissions do not bind, so the check
// runs in a child process as an unprivileged user.
func TestReadOnly(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dirMode  fs.FileMode // for the unprivileged child
		wantOpen bool        // the file can still be read
	}{
		{"file", 0o777, true},
		{"directory", 0o755, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "airlock-store-ro-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(dir, 0o700); os.RemoveAll(dir) })
			path := filepath.Join(dir, "airlock.db")
			db, err := sqlite.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Journal().Begin(t.Context(), intent("before")); err != nil {
				t.Fatal(err)
			}
			if err := db.Journal().End(t.Context(), "before", store.OutcomeSucceeded, ""); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}

			var cred *syscall.Credential
			exe := ""
			if os.Geteuid() == 0 {
				// The child runs as nobody: the file stays root's (0600 → 0644
				// so that nobody can read it), the directory is writable for
				// the "file" case only, and the test binary is copied where
				// nobody can run it.
				cred = &syscall.Credential{Uid: 65534, Gid: 65534}
				exe = copyExecutable(t, dir)
				chmod(t, path, 0o644)
				os.Remove(path + "-writers")
				chmod(t, dir, tc.dirMode)
			} else {
				chmod(t, path, 0o444)
				if !tc.wantOpen {
					chmod(t, dir, 0o555)
				}
			}
			cmd, _, out := startChild(t, "readonly", path, cred, exe)
			var res childResult
			if err := json.Unmarshal([]byte(readLine(t, out)), &res); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("child: %v", err)
			}
			t.Logf("child: %+v", res)
			if tc.wantOpen && (res.OpenErr != "" || res.ReadErr != "") {
				t.Errorf("a read-only database file could not be opened and read: %+v", res)
			}
			if res.OpenErr == "" && res.BeginErr == "" {
				t.Errorf("Begin on a read-only %s succeeded", tc.name)
			}

			chmod(t, dir, 0o700)
			chmod(t, path, 0o600)
			if _, err := open(t, path).Journal().Get(t.Context(), "after"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the refused intent: got %v, want ErrNotFound", err)
			}
		})
	}
}

func chmod(t *testing.T, path string, mode fs.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// copyExecutable copies the test binary into a directory of its own under
// dir that anyone may enter, and returns the copy's path.
func copyExecutable(t *testing.T, dir string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(filepath.Dir(dir), filepath.Base(dir)+"-bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	exe := filepath.Join(bin, "store.test")
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestFileModes: nothing the store writes is readable by others.
func TestFileModes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state", "airlock.db")
	db := open(t, path)
	if err := db.Journal().Begin(t.Context(), intent("rec_1")); err != nil {
		t.Fatal(err)
	}
	if err := db.Audit().Append(t.Context(), store.Event{Event: store.EventCallSent}); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(filepath.Dir(path), "audit.key")
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-writers", key, filepath.Dir(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v, want no access for group and others", filepath.Base(p), fi.Mode().Perm())
		}
	}
	ents, err := os.ReadDir(path + "-writers")
	if err != nil || len(ents) != 2 {
		t.Fatalf("files in the writers' directory: got %v, %v; want a lock file and an intent log", ents, err)
	}
	for _, e := range ents {
		fi, _ := e.Info()
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", e.Name(), fi.Mode().Perm())
		}
	}
}

// TestSchemaVersions: a database from a newer Airlock is refused, and
// concurrent first opens of one file all succeed.
func TestSchemaVersions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			db, err := sqlite.Open(path)
			if err == nil {
				err = db.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Errorf("concurrent Open of a new file: %v", err)
		}
	}
	db := open(t, path)
	if err := db.Audit().Append(t.Context(), store.Event{Event: "x"}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	setUserVersion(t, path, 99)
	_, err := sqlite.Open(path)
	if err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open of a database with a newer schema: got %v, want an error that says so", err)
	}
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"", filepath.Join(dir, "a?b.db"), filepath.Join(dir, "a#b.db")} {
		if db, err := sqlite.Open(p); err == nil {
			db.Close()
			t.Errorf("Open(%q): got nil error", p)
		}
	}
	notDB := filepath.Join(dir, "not.db")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("not a database\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if db, err := sqlite.Open(notDB); err == nil {
		db.Close()
		t.Errorf("Open of a file that is not a database: got nil error")
	}
}

// TestClosed: a closed store refuses to begin intents.
func TestClosed(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "airlock.db"))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := db.Journal().Begin(t.Context(), intent("rec_1")); err == nil {
		t.Error("Begin on a closed store: got nil error")
	}
}

func setUserVersion(t *testing.T, path string, v int) {
	t.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(fmt.Sprintf("PRAGMA user_version = %d", v)); err != nil {
		t.Fatal(err)
	}
}
