package postgres_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/postgres"
	"github.com/airlockhq/airlock/store/storetest"
)

// The test binary doubles as the child process of TestCrashRecovery and
// TestJobsOfKilledProcess: with childEnv set to a database URL it begins
// an intent (or, with the role jobs, creates the jobs that
// storetest.CreateChildJobs does), says so and waits to be killed.
const childEnv = "AIRLOCK_STORE_CHILD_URL"

func TestMain(m *testing.M) {
	if u := os.Getenv(childEnv); u != "" {
		os.Exit(child(u, os.Getenv("AIRLOCK_STORE_CHILD_KEY"), os.Getenv("AIRLOCK_STORE_CHILD_ROLE")))
	}
	os.Exit(m.Run())
}

func child(url, keyFile, role string) int {
	ctx := context.Background()
	db, err := postgres.Open(ctx, url, keyFile, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	said := "begun"
	if role == "jobs" {
		err = storetest.CreateChildJobs(ctx, db)
		said = "created"
	} else {
		err = db.Journal().Begin(ctx, intent("child"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(said)
	bufio.NewReader(os.Stdin).ReadString('\n') // until killed
	return 0
}

// startChild starts the child process in role ("" to begin an intent) on
// the database at url, and waits until it says want; the test kills it
// when it ends, if it has not.
func startChild(t *testing.T, url, keyFile, role, want string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+url, "AIRLOCK_STORE_CHILD_KEY="+keyFile, "AIRLOCK_STORE_CHILD_ROLE="+role)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close() })
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); strings.TrimSpace(line) != want {
		t.Fatalf("child said %q, %v; want %s", line, err, want)
	}
	return cmd
}

// opener returns the suite's open function: one database per test, every
// handle a separate *DB on it, all of them with one key file.
func opener() func(t *testing.T) store.Store {
	type db struct{ url, key string }
	database := storetest.PerTest(func(t *testing.T) db {
		url, key := database(t)
		return db{url, key}
	})
	return func(t *testing.T) store.Store {
		d := database(t)
		return open(t, d.url, d.key)
	}
}

func TestConformance(t *testing.T) {
	storetest.Run(t, opener())
}

// open opens a DB that the test closes when it ends, if it has not.
func open(t testing.TB, url, keyFile string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(t.Context(), url, keyFile, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// database returns the URL of a new database of the test's own and the
// path of an audit key file for it.
func database(t *testing.T) (url, keyFile string) {
	return testenv.PostgresDatabase(t), filepath.Join(t.TempDir(), "audit.key")
}

// openReplicas opens n DBs, as n replicas would, on a new database of the
// test's own with one audit key file; the test closes them when it ends.
func openReplicas(t *testing.T, n int) []*postgres.DB {
	t.Helper()
	url, key := database(t)
	dbs := make([]*postgres.DB, n)
	for i := range dbs {
		dbs[i] = open(t, url, key)
	}
	return dbs
}

// twoReplicas is openReplicas of two.
func twoReplicas(t *testing.T) (a, b *postgres.DB) {
	t.Helper()
	dbs := openReplicas(t, 2)
	return dbs[0], dbs[1]
}

// A crowd counts the goroutines inside a section at once, and the most
// there have been.
type crowd struct{ inside, most atomic.Int64 }

// stay enters the section, stays for d and leaves.
func (c *crowd) stay(d time.Duration) {
	n := c.inside.Add(1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	time.Sleep(d)
	c.inside.Add(-1)
}

func intent(id string) store.Intent {
	return store.Intent{ID: id, Server: "fs", Tool: "fs__write_file", RemoteTool: "write_file", ArgsHash: "h", Effect: "write"}
}

// connect opens a plain connection on url, for what the store does not do.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// status returns the status of each record, by id.
func status(t *testing.T, j store.Journal, ids ...string) map[string]store.Outcome {
	t.Helper()
	out := map[string]store.Outcome{}
	for _, id := range ids {
		r, err := j.Get(t.Context(), id)
		if err != nil {
			t.Fatalf("Get(%s): %v", id, err)
		}
		out[id] = r.Status
	}
	return out
}

// TestLostWriter: a store whose session ends without Close (its backend
// terminated, as when its machine drops off the network) leaves its
// intents to RecoverOpen on another, which ends them as unknown and leaves
// the live store's open; the store that lost its session begins again
// under a new lock.
func TestLostWriter(t *testing.T) {
	url, key := database(t)
	a, b := open(t, url, key), open(t, url, key)
	for _, begin := range []struct {
		db *postgres.DB
		id string
	}{{a, "a1"}, {b, "b1"}} {
		if err := begin.db.Journal().Begin(t.Context(), intent(begin.id)); err != nil {
			t.Fatalf("Begin(%s): %v", begin.id, err)
		}
	}
	if n, err := b.Journal().RecoverOpen(t.Context(), time.Now()); err != nil || n != 0 {
		t.Fatalf("RecoverOpen while both live: got %d, %v; want 0, nil", n, err)
	}

	// End a's writer session, the way the server ends a dead client's.
	admin := connect(t, url)
	var killed int
	err := admin.QueryRow(t.Context(), `
SELECT count(pg_terminate_backend(l.pid)) FROM pg_locks l, intents i
WHERE i.id = 'a1' AND l.locktype = 'advisory' AND l.objsubid = 1
	AND l.classid::bigint = (i.writer >> 32) & 4294967295 AND l.objid::bigint = i.writer & 4294967295`).Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("terminating a's writer session: got %d sessions, %v; want 1", killed, err)
	}

	recoverUntil(t, b.Journal(), 1)
	want := map[string]store.Outcome{"a1": store.OutcomeUnknown, "b1": store.OutcomeOpen}
	if got := status(t, b.Journal(), "a1", "b1"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after RecoverOpen: got %v, want %v", got, want)
	}
	if err := a.Journal().End(t.Context(), "a1", store.OutcomeSucceeded, ""); !errors.Is(err, store.ErrConflict) {
		t.Errorf("End of a recovered intent: got %v, want ErrConflict", err)
	}

	// a goes on under a new lock, which RecoverOpen respects.
	if err := a.Journal().Begin(t.Context(), intent("a2")); err != nil {
		t.Fatalf("Begin after the session was lost: %v", err)
	}
	if n, err := b.Journal().RecoverOpen(t.Context(), time.Now()); err != nil || n != 0 {
		t.Errorf("RecoverOpen while a lives again: got %d, %v; want 0, nil", n, err)
	}
	if got := status(t, b.Journal(), "a2")["a2"]; got != store.OutcomeOpen {
		t.Errorf("a2: got %s, want open", got)
	}
}

// recoverUntil calls RecoverOpen on j until it has ended want intents in
// all: the server notices a session's end a moment after it happens.
func recoverUntil(t *testing.T, j store.Journal, want int) {
	t.Helper()
	total := 0
	for deadline := time.Now().Add(10 * time.Second); ; {
		n, err := j.RecoverOpen(t.Context(), time.Now())
		if err != nil {
			t.Fatalf("RecoverOpen: %v", err)
		}
		if total += n; total >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if total != want {
		t.Fatalf("RecoverOpen after a writer died: ended %d intents, want %d", total, want)
	}
}

// TestCrashRecovery: a process that began an intent and was killed leaves
// it open while it lives and unknown after RecoverOpen once it is gone;
// another live store's intent stays open.
func TestCrashRecovery(t *testing.T) {
	url, key := database(t)
	live := open(t, url, key)
	if err := live.Journal().Begin(t.Context(), intent("live")); err != nil {
		t.Fatalf("Begin: %v", err)
	}

	cmd := startChild(t, url, key, "", "begun")

	j := open(t, url, key).Journal()
	if n, err := j.RecoverOpen(t.Context(), time.Now()); err != nil || n != 0 {
		t.Fatalf("RecoverOpen while the child lives: got %d, %v; want 0, nil", n, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	recoverUntil(t, j, 1)
	want := map[string]store.Outcome{"child": store.OutcomeUnknown, "live": store.OutcomeOpen}
	if got := status(t, j, "child", "live"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after RecoverOpen: got %v, want %v", got, want)
	}
	if n, err := j.RecoverOpen(t.Context(), time.Now()); err != nil || n != 0 {
		t.Errorf("RecoverOpen again: got %d, %v; want 0, nil", n, err)
	}
}

// TestJobsOfKilledProcess: the jobs of a replica that was killed while
// they ran stay working while it lives, and are settled failed with their
// Lost errors once its session is gone, by Job and by RecoverJobs.
func TestJobsOfKilledProcess(t *testing.T) {
	url, key := database(t)
	cmd := startChild(t, url, key, "jobs", "created")
	storetest.JobsOfKilledWriter(t, open(t, url, key), func() {
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
	})
}

// TestMigrateRace: replicas opening an empty database at once all succeed,
// and each migration is applied once.
func TestMigrateRace(t *testing.T) {
	url, key := database(t)
	errs := storetest.Race(8, func(int) error {
		db, err := postgres.Open(t.Context(), url, key, nil)
		if err == nil {
			err = db.Close()
		}
		return err
	})
	for _, err := range errs {
		if err != nil {
			t.Errorf("concurrent Open of an empty database: %v", err)
		}
	}
	var versions, distinct, newest int
	err := connect(t, url).QueryRow(t.Context(), `SELECT count(*), count(DISTINCT version), max(version) FROM schema_migrations`).
		Scan(&versions, &distinct, &newest)
	if err != nil {
		t.Fatal(err)
	}
	if versions != newest || distinct != newest || newest < 1 {
		t.Errorf("schema_migrations: %d rows, %d versions, newest %d; want one row per version from 1", versions, distinct, newest)
	}
}

// TestOpenNewerSchema: a database written by a newer Airlock is refused.
func TestOpenNewerSchema(t *testing.T) {
	url, key := database(t)
	open(t, url, key).Close()
	if _, err := connect(t, url).Exec(t.Context(), `INSERT INTO schema_migrations (version) VALUES (9999)`); err != nil {
		t.Fatal(err)
	}
	_, err := postgres.Open(t.Context(), url, key, nil)
	if err == nil || !strings.Contains(err.Error(), "schema version 9999, newer than this airlock knows") {
		t.Errorf("Open of a database with a newer schema: got %v, want an error that says so", err)
	}
}

// TestOpenErrorsHideThePassword: errors about the connection name the
// host, port and database, never the password, wherever it was given.
func TestOpenErrorsHideThePassword(t *testing.T) {
	const pw = "s3cret-canary-pw"
	for _, tc := range []struct {
		name, url, password string
		want                []string
	}{
		{"in the URL", "postgres://ada:" + pw + "@127.0.0.1:1/airlock?sslmode=disable", "",
			[]string{"host 127.0.0.1 port 1", `database "airlock"`}},
		{"in the options", "postgres://ada@127.0.0.1:1/airlock?sslmode=disable", pw,
			[]string{"host 127.0.0.1 port 1", `database "airlock"`}},
		{"in a query parameter", "postgres://ada@127.0.0.1:1/airlock?sslmode=disable&password=" + pw, "",
			[]string{"host 127.0.0.1 port 1"}},
		{"in a malformed URL", "postgres://ada:" + pw + "@127.0.0.1:notaport/airlock", "",
			[]string{"not a PostgreSQL URL"}},
		{"in a URL that parses", "postgres://ada:" + pw + "@127.0.0.1:1/airlock?sslmode=bogus", "",
			[]string{"not a PostgreSQL URL", "ada:xxxxx@"}},
		{"in a key=value string", "host=127.0.0.1 port=1 dbname=airlock password=" + pw + " sslmode=disable", "",
			[]string{"host 127.0.0.1 port 1"}},
		// The passphrase of a client key, and a password parameter in
		// another case, in URLs that do not parse.
		{"sslpassword in a bad URL", "postgres://ada@127.0.0.1:5432/airlock?sslmode=verify-full&sslpassword=" + pw + "&sslmode=bogus", "",
			[]string{"not a PostgreSQL URL"}},
		{"Password in a bad URL", "postgres://ada@127.0.0.1:99999/airlock?Password=" + pw, "",
			[]string{"not a PostgreSQL URL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := postgres.Open(t.Context(), tc.url, filepath.Join(t.TempDir(), "audit.key"), &postgres.Options{Password: tc.password})
			if err == nil {
				t.Fatal("Open of an unreachable database: got nil error")
			}
			if strings.Contains(err.Error(), pw) {
				t.Errorf("Open error holds the password: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Open error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestSynchronousCommit: every connection commits synchronously, even when
// the database's default says otherwise.
func TestSynchronousCommit(t *testing.T) {
	url, key := database(t)
	admin := connect(t, url)
	u, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(t.Context(), `ALTER DATABASE `+u.Database+` SET synchronous_commit = off`); err != nil {
		t.Fatal(err)
	}
	db := open(t, url, key)
	if err := db.Journal().Begin(t.Context(), intent("i1")); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	setting, err := db.Setting(t.Context(), "synchronous_commit")
	if err != nil {
		t.Fatal(err)
	}
	if setting != "on" {
		t.Errorf("synchronous_commit of the store's sessions: got %q, want on", setting)
	}
}

// TestReplicaWithoutTheAuditKey: a replica not given the audit key file
// of a trail that is chained already appends nothing, and makes no key of
// its own (which would break the chain for every replica): it says to copy
// the file. Given the file, it appends.
func TestReplicaWithoutTheAuditKey(t *testing.T) {
	url, key := database(t)
	first := open(t, url, key)
	ev := store.Event{Time: time.Now(), Event: "test", Server: "s"}
	if err := first.Audit().Append(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "audit.key")
	second := open(t, url, other)
	err := second.Audit().Append(t.Context(), ev)
	if err == nil || !strings.Contains(err.Error(), "copy the audit key file from another replica to "+other) {
		t.Fatalf("append without the key: %v, want it refused, saying to copy the file", err)
	}
	if _, err := os.Stat(other); err == nil {
		t.Error("a key file of its own was made")
	}
	data, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := second.Audit().Append(t.Context(), ev); err != nil {
		t.Fatalf("append with the key copied: %v", err)
	}
	if r, err := first.Audit().Verify(t.Context()); err != nil || !r.Intact || r.Events != 2 {
		t.Errorf("verify: %+v, %v; want the two events, intact", r, err)
	}
}
