package airlock_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/store"
)

// A place is one host of a test with the tasks of its own state directory
// and repository, sharing a PostgreSQL store with the others.
type place struct {
	h     *airlock.Host
	state string
	repo  string
	store store.Store
}

// sharedPlaces opens n hosts on the PostgreSQL database url (and one
// audit key), each with a state directory and a repository of its own, as
// replicas on n machines would be, each with a task-scoped server.
func sharedPlaces(t *testing.T, url string, n int) []place {
	t.Helper()
	key := filepath.Join(t.TempDir(), "audit.key")
	out := make([]place, n)
	for i := range out {
		repo := gitRepo(t)
		cfg := newConfig(t, taskServer(t, "ws", "workspace"))
		cfg.Dir = repo
		cfg.Store.URL, cfg.Store.AuditKey = url, key
		state := t.TempDir()
		h, err := airlock.Open(context.Background(), cfg, &airlock.Options{StateDir: state, StopGrace: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		st, err := airlock.OpenConfiguredStore(cfg, state)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		out[i] = place{h: h, state: state, repo: repo, store: st}
	}
	return out
}

// list returns the tasks p sees, as "id status local|remote STATE".
func (p place) list(t *testing.T) []string {
	t.Helper()
	tasks, err := airlock.ListTasksWith(t.Context(), p.store, p.state)
	if err != nil {
		t.Fatalf("ListTasksWith: %v", err)
	}
	var out []string
	for _, task := range tasks {
		where := "remote"
		if task.Local {
			where = "local"
		}
		out = append(out, strings.Join([]string{task.ID, task.Status, where, task.StateDir}, " "))
	}
	return out
}

// noTask checks that p has nothing of the task id: no task directory and
// no branch.
func (p place) noTask(t *testing.T, id string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(p.state, "tasks", id)); !os.IsNotExist(err) {
		t.Errorf("task directory %s left in %s: %v", id, p.state, err)
	}
	if got := runGit(t, p.repo, "branch", "--list", "airlock/task/"+id); got != "" {
		t.Errorf("branch left behind: %s", got)
	}
}

// TestTasksAcrossPlaces: two hosts with state directories of their own on
// one PostgreSQL database. A task opened on A is listed by B, as A's; B
// can neither open nor attach nor close a task of the same id, and is told
// where it lives; once A closes it, B no longer lists it and may take the
// id.
func TestTasksAcrossPlaces(t *testing.T) {
	places := sharedPlaces(t, testenv.PostgresDatabase(t), 2)
	a, b := places[0], places[1]
	host, _ := os.Hostname()

	task, err := a.h.OpenTask(t.Context(), "t1", nil)
	if err != nil {
		t.Fatalf("OpenTask on A: %v", err)
	}
	defer task.Release()
	if got, want := a.list(t), []string{"t1 open local " + a.state}; !slices.Equal(got, want) {
		t.Errorf("A lists %q, want %q", got, want)
	}
	if got, want := b.list(t), []string{"t1 open remote " + a.state}; !slices.Equal(got, want) {
		t.Errorf("B lists %q, want %q", got, want)
	}
	listed, _ := airlock.ListTasksWith(t.Context(), b.store, b.state)
	if len(listed) == 1 && (listed[0].Host != host || listed[0].Worktree != task.Worktree() || listed[0].Branch != "airlock/task/t1" || listed[0].Repo == "") {
		t.Errorf("B's listing of A's task: %+v; want host %s, worktree %s, its branch and repo", listed[0], host, task.Worktree())
	}

	wantRefusal := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "task t1 is open on "+host+", in the state directory "+a.state) ||
			!strings.Contains(err.Error(), "airlock task close t1") {
			t.Errorf("%s on B: got %v; want a refusal naming A's state directory and what to do", what, err)
		}
	}
	_, err = b.h.OpenTask(t.Context(), "t1", nil)
	wantRefusal("OpenTask", err)
	b.noTask(t, "t1")
	_, err = b.h.AttachTask(t.Context(), "t1")
	wantRefusal("AttachTask", err)
	_, err = airlock.CloseTaskWith(t.Context(), b.store, b.state, "t1")
	wantRefusal("CloseTaskWith", err)

	// Another process on A attaches as before.
	again, err := a.h.AttachTask(t.Context(), "t1")
	if err != nil {
		t.Fatalf("AttachTask on A: %v", err)
	}
	again.Release()

	report, err := task.Close(t.Context(), nil)
	if err != nil {
		t.Fatalf("Close on A: %v\n%+v", err, report)
	}
	if last := report.Steps[len(report.Steps)-1]; last.Step != "drop the task's record in the store" || !last.OK {
		t.Errorf("the last step of closing: %+v; want the record dropped", last)
	}
	if got := b.list(t); len(got) != 0 {
		t.Errorf("B lists %q after A closed the task, want nothing", got)
	}
	reopened, err := b.h.OpenTask(t.Context(), "t1", nil)
	if err != nil {
		t.Fatalf("OpenTask on B once A closed it: %v", err)
	}
	defer reopened.Release()
	if got, want := a.list(t), []string{"t1 open remote " + b.state}; !slices.Equal(got, want) {
		t.Errorf("A lists %q, want %q", got, want)
	}
}

// TestTaskStoreFailureUndoesOpen: when the store refuses to record a
// task open, after its worktree was made and its servers started, opening
// undoes all of it, its record included; and a record a failure leaves
// behind is dropped by closing the task on its place.
func TestTaskStoreFailureUndoesOpen(t *testing.T) {
	url := testenv.PostgresDatabase(t)
	p := sharedPlaces(t, url, 1)[0]
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// PostgreSQL itself refuses, as a full disk or a lost privilege
	// would: every write that records a task open.
	if _, err := conn.Exec(t.Context(), `
CREATE FUNCTION refuse_open() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.status = 'open' THEN RAISE EXCEPTION 'refused for the test'; END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER refuse_open BEFORE INSERT OR UPDATE ON tasks FOR EACH ROW EXECUTE FUNCTION refuse_open();`); err != nil {
		t.Fatal(err)
	}
	_, err = p.h.OpenTask(t.Context(), "t1", nil)
	if err == nil || !strings.Contains(err.Error(), "cannot record it in the store") || !strings.Contains(err.Error(), "refused for the test") {
		t.Fatalf("OpenTask with a store that refuses: %v; want the store's refusal", err)
	}
	p.noTask(t, "t1")
	if got := runGit(t, p.repo, "worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 1 {
		t.Errorf("worktrees left behind:\n%s", got)
	}
	if got := p.list(t); len(got) != 0 {
		t.Errorf("listed after a failed open: %q, want nothing", got)
	}

	// A record left by a failure (here: the trigger now refuses deletes
	// too, so the undo cannot drop it) is this place's to drop.
	if _, err := conn.Exec(t.Context(), `
DROP TRIGGER refuse_open ON tasks;
CREATE FUNCTION refuse_drop() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'refused for the test'; END $$;
CREATE TRIGGER refuse_drop BEFORE DELETE ON tasks FOR EACH ROW EXECUTE FUNCTION refuse_drop();
CREATE TRIGGER refuse_open BEFORE UPDATE ON tasks FOR EACH ROW EXECUTE FUNCTION refuse_open();`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.h.OpenTask(t.Context(), "t2", nil); err == nil {
		t.Fatal("OpenTask with a store that refuses succeeded")
	}
	p.noTask(t, "t2")
	if got, want := p.list(t), []string{"t2 opening local " + p.state}; !slices.Equal(got, want) {
		t.Fatalf("listed after a failed open whose record stayed: %q, want %q", got, want)
	}
	if _, err := conn.Exec(t.Context(), `DROP TRIGGER refuse_drop ON tasks`); err != nil {
		t.Fatal(err)
	}
	report, err := airlock.CloseTaskWith(t.Context(), p.store, p.state, "t2")
	if err != nil || len(report.Steps) != 1 || !report.Steps[0].OK {
		t.Fatalf("CloseTaskWith of a record left behind: %+v, %v; want its record dropped", report, err)
	}
	if got := p.list(t); len(got) != 0 {
		t.Errorf("listed after closing: %q, want nothing", got)
	}
}
