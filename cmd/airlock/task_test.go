package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/testenv"
)

// TestTaskListShared: two state directories on one PostgreSQL database,
// as two replicas on two machines. task list on either shows both
// places' tasks, each with its host and state directory, and marks its
// own; the other cannot open or close a task of the same id, and is told
// where it lives.
func TestTaskListShared(t *testing.T) {
	db := testenv.PostgresDatabase(t)
	dir := taskRepo(t)
	f, err := os.OpenFile(filepath.Join(dir, "airlock.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "store: {url: %q, audit_key: %q}\n", db, filepath.Join(t.TempDir(), "audit.key"))
	f.Close()
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	host, _ := os.Hostname()

	runCLI(t, dir, "", "task", "open", "t1", "--state", a).want(t, 0)
	runCLI(t, dir, "", "task", "open", "t2", "--state", b).want(t, 0)
	for _, tc := range []struct {
		state string
		want  string // t1's place, local, then t2's
	}{{a, a + " true " + b + " false"}, {b, a + " false " + b + " true"}} {
		r := runCLI(t, dir, "", "task", "list", "--json", "--state", tc.state).want(t, 0)
		var got []string
		for _, task := range decode(t, r.stdout)["tasks"].([]any) {
			m := task.(map[string]any)
			if m["host"] != host || m["worktree"] != filepath.Join(m["state_dir"].(string), "tasks", m["id"].(string), "worktree") || m["status"] != "open" {
				t.Errorf("task list --state %s: %v; want host %s, its worktree, open", tc.state, m, host)
			}
			got = append(got, fmt.Sprint(m["state_dir"], " ", m["local"]))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("task list --state %s: places %q, want %q", tc.state, got, tc.want)
		}
	}
	r := runCLI(t, dir, "", "task", "list", "--state", b).want(t, 0)
	if !strings.Contains(r.stdout, "HOST") || !strings.Contains(r.stdout, host+" (here)") {
		t.Errorf("task list --state %s:\n%s\nwant a HOST column marking its own task", b, r.stdout)
	}

	r = runCLI(t, dir, "", "task", "open", "t1", "--state", b).want(t, 2)
	if !strings.Contains(r.stderr, "task t1 is open on "+host+", in the state directory "+a) {
		t.Errorf("task open of A's task on B: %s", r.stderr)
	}
	r = runCLI(t, dir, "", "tools", "--task", "t1", "--state", b).want(t, 2)
	if !strings.Contains(r.stderr, "in the state directory "+a) {
		t.Errorf("tools --task of A's task on B: %s", r.stderr)
	}
	r = runCLI(t, dir, "", "task", "close", "t1", "--state", b).want(t, 2)
	if !strings.Contains(r.stderr, "close it there (airlock task close t1)") {
		t.Errorf("task close of A's task on B: %s", r.stderr)
	}

	runCLI(t, dir, "", "task", "close", "t1", "--state", a).want(t, 0)
	r = runCLI(t, dir, "", "task", "list", "--json", "--state", b).want(t, 0)
	if tasks := decode(t, r.stdout)["tasks"].([]any); len(tasks) != 1 || tasks[0].(map[string]any)["id"] != "t2" {
		t.Errorf("task list on B after A closed t1: %v; want t2 alone", tasks)
	}
	runCLI(t, dir, "", "task", "close", "t2", "--state", b).want(t, 0)
}
