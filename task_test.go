package airlock_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/testenv"
)

// gitRepo makes a repository with one commit holding README.md.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"config", "user.email", "test@example.com"},
		{"config", "user.name", "Test"},
	} {
		runGit(t, dir, args...)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("hello from main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "add", "README.md")
	runGit(t, dir, "commit", "-q", "-m", "first")
	return dir
}

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// taskServer is a scope: task server entry running this test binary.
func taskServer(t *testing.T, id, mode string) config.Server {
	srv := testServer(t, id, mode)
	srv.Scope, srv.Cwd = "task", ""
	return srv
}

// taskHost opens a host over repo with the given servers and a state
// directory of its own.
func taskHost(t *testing.T, repo string, servers ...config.Server) (*airlock.Host, string) {
	t.Helper()
	cfg := newConfig(t, servers...)
	cfg.Dir = repo
	state := t.TempDir()
	h, err := airlock.Open(context.Background(), cfg, &airlock.Options{StateDir: state, StopGrace: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, state
}

func openTask(t *testing.T, h *airlock.Host, id string) *airlock.Task {
	t.Helper()
	task, err := h.OpenTask(context.Background(), id, nil)
	if err != nil {
		t.Fatalf("OpenTask(%s): %v", id, err)
	}
	t.Cleanup(func() { task.Release() })
	return task
}

func TestTaskLifecycle(t *testing.T) {
	repo := gitRepo(t)
	h, state := taskHost(t, repo, testServer(t, "shared", "sdk"), taskServer(t, "ws", "workspace"))
	if got := h.TaskServers(); len(got) != 1 || got[0] != "ws" {
		t.Errorf("TaskServers = %v, want [ws]", got)
	}
	if names := toolNames(h.Snapshot()); strings.Contains(strings.Join(names, ","), "ws__") {
		t.Errorf("the host's snapshot has task tools: %v", names)
	}

	task := openTask(t, h, "t1")
	wt := task.Worktree()
	if want := filepath.Join(state, "tasks", "t1", "worktree"); wt != want {
		t.Errorf("worktree = %s, want %s", wt, want)
	}
	if got := runGit(t, wt, "rev-parse", "--abbrev-ref", "HEAD"); got != "airlock/task/t1" {
		t.Errorf("worktree branch = %s", got)
	}
	names := strings.Join(toolNames(task.Snapshot()), ",")
	if !strings.Contains(names, "shared__echo") || !strings.Contains(names, "ws__read_file") {
		t.Errorf("task tools = %s, want the host's and the task's", names)
	}
	r := h.Call(context.Background(), task.Snapshot(), airlock.Call{Name: "ws__read_file", Arguments: json.RawMessage(`{"path":"README.md"}`)})
	wantStatus(t, r, airlock.OK)
	if !strings.Contains(string(r.Structured), "hello from main") {
		t.Errorf("read_file = %s", r.Structured)
	}
	infos, err := airlock.ListTasks(state)
	if err != nil || len(infos) != 1 || infos[0].ID != "t1" || infos[0].Status != airlock.TaskOpen || !infos[0].InUse {
		t.Fatalf("ListTasks = %+v, %v; want t1 open and in use", infos, err)
	}

	pgids := taskGroups(t, state, "t1")
	report, err := task.Close(context.Background(), nil)
	if err != nil {
		t.Fatalf("Close: %v\n%+v", err, report)
	}
	var steps []string
	for _, s := range report.Steps {
		steps = append(steps, s.Step)
	}
	wantSteps := []string{"stop new calls", "finish calls in flight", "stop the task's servers", "stop servers left by other processes",
		"save uncommitted work", "record the task", "remove the worktree", "remove the task's state"}
	if strings.Join(steps, "|") != strings.Join(wantSteps, "|") {
		t.Errorf("steps = %q, want %q", steps, wantSteps)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Errorf("worktree still exists after Close: %v", err)
	}
	if got := runGit(t, repo, "worktree", "list", "--porcelain"); strings.Contains(got, wt) {
		t.Errorf("git still lists the worktree:\n%s", got)
	}
	if runGit(t, repo, "branch", "--list", "airlock/task/t1") == "" {
		t.Error("the task's branch was deleted; it must be kept")
	}
	for _, g := range pgids {
		if procs, _ := testenv.ProcsInGroup(g); len(procs) > 0 {
			t.Errorf("after Close, processes %v of group %d remain", procs, g)
		}
	}
	if infos, _ := airlock.ListTasks(state); len(infos) != 0 {
		t.Errorf("ListTasks after Close = %+v", infos)
	}
	if recs, _ := filepath.Glob(filepath.Join(state, "closed-tasks", "t1-*.json")); len(recs) != 1 {
		t.Errorf("closed records = %v, want one", recs)
	}
	r = h.Call(context.Background(), task.Snapshot(), airlock.Call{Name: "ws__read_file", Arguments: json.RawMessage(`{"path":"README.md"}`)})
	wantStatus(t, r, airlock.Cancelled)
}

// taskGroups reads the process groups recorded for a task's servers.
func taskGroups(t *testing.T, state, id string) []int {
	t.Helper()
	recs, _ := filepath.Glob(filepath.Join(state, "tasks", id, "procs", "*.json"))
	var groups []int
	for _, path := range recs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			Servers []struct{ PGID int } `json:"servers"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatal(err)
		}
		for _, s := range rec.Servers {
			groups = append(groups, s.PGID)
		}
	}
	if len(groups) == 0 {
		t.Fatal("no server process groups recorded")
	}
	return groups
}

func TestTwoTasksAreIsolated(t *testing.T) {
	repo := gitRepo(t)
	h, _ := taskHost(t, repo, taskServer(t, "ws", "workspace"))
	a, b := openTask(t, h, "a"), openTask(t, h, "b")
	r := h.Call(context.Background(), a.Snapshot(), airlock.Call{Name: "ws__write_file", Arguments: json.RawMessage(`{"path":"only-in-a.txt","content":"secret of a\n"}`)})
	wantStatus(t, r, airlock.OK)
	if _, err := os.Stat(filepath.Join(a.Worktree(), "only-in-a.txt")); err != nil {
		t.Fatalf("the write did not land in task a's worktree: %v", err)
	}
	read := func(task *airlock.Task) *airlock.Result {
		return h.Call(context.Background(), task.Snapshot(), airlock.Call{Name: "ws__read_file", Arguments: json.RawMessage(`{"path":"only-in-a.txt"}`)})
	}
	if r := read(a); r.Status != airlock.OK || !strings.Contains(string(r.Structured), "secret of a") {
		t.Errorf("task a reads %s (%v)", r.Structured, r.Err)
	}
	r = read(b)
	wantStatus(t, r, airlock.ToolError)
	if strings.Contains(r.Content, "secret") || strings.Contains(r.Content, a.Worktree()) {
		t.Errorf("task b's answer leaks task a: %q", r.Content)
	}
	// Asking for the other worktree by path does not help either.
	r = h.Call(context.Background(), b.Snapshot(), airlock.Call{Name: "ws__read_file",
		Arguments: json.RawMessage(`{"path":"../../a/worktree/only-in-a.txt"}`)})
	wantStatus(t, r, airlock.ToolError)
}

func TestCloseStopsServersBeforeRemovingTheWorktree(t *testing.T) {
	repo := gitRepo(t)
	srv := taskServer(t, "watch", "watchcwd")
	h, _ := taskHost(t, repo, srv)
	task := openTask(t, h, "order")
	if _, err := task.Close(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the server's exit record", func() bool {
		for _, m := range marks(t, srv) {
			if strings.HasPrefix(m, "worktree ") {
				return true
			}
		}
		return false
	})
	if !hasMark(t, func() []string { return marks(t, srv) }, "worktree present at exit") {
		t.Errorf("server marks = %v: the worktree was removed while the server still ran", marks(t, srv))
	}
}

func TestFailedOpenLeavesNothingBehind(t *testing.T) {
	repo := gitRepo(t)
	h, state := taskHost(t, repo, taskServer(t, "good", "sdk"), taskServer(t, "bad", "exit"))
	_, err := h.OpenTask(context.Background(), "doomed", nil)
	if err == nil || !strings.Contains(err.Error(), "cannot open the database") {
		t.Fatalf("OpenTask = %v, want the failing server's reason", err)
	}
	if _, err := os.Stat(filepath.Join(state, "tasks", "doomed")); !os.IsNotExist(err) {
		t.Errorf("task directory left behind: %v", err)
	}
	if got := runGit(t, repo, "worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 1 {
		t.Errorf("worktrees left behind:\n%s", got)
	}
	if got := runGit(t, repo, "branch", "--list", "airlock/task/doomed"); got != "" {
		t.Errorf("branch left behind: %s", got)
	}
	// The id is free again.
	cfg := newConfig(t, taskServer(t, "good", "sdk"))
	cfg.Dir = repo
	h2, err := airlock.Open(context.Background(), cfg, &airlock.Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	openTask(t, h2, "doomed")
}

func TestUncommittedWorkIsSaved(t *testing.T) {
	repo := gitRepo(t)
	h, _ := taskHost(t, repo, taskServer(t, "ws", "workspace"))
	task := openTask(t, h, "wip")
	os.WriteFile(filepath.Join(task.Worktree(), "notes.txt"), []byte("half-done work\n"), 0o644)
	os.WriteFile(filepath.Join(task.Worktree(), "README.md"), []byte("edited\n"), 0o644)
	report, err := task.Close(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var detail string
	for _, s := range report.Steps {
		if s.Step == "save uncommitted work" {
			detail = s.Detail
		}
	}
	if !strings.Contains(detail, "saved as stash") {
		t.Errorf("save step = %q", detail)
	}
	if got := runGit(t, repo, "show", "stash@{0}^3:notes.txt"); got != "half-done work" {
		t.Errorf("stashed untracked file = %q", got)
	}
	if got := runGit(t, repo, "show", "stash@{0}:README.md"); got != "edited" {
		t.Errorf("stashed change = %q", got)
	}
}

func TestTaskLeftByACrashedProcess(t *testing.T) {
	repo := gitRepo(t)
	srv := taskServer(t, "stubborn", "escaper")
	srv.Env[envStubborn] = "1"
	t.Cleanup(func() { killMarked(t, srv) })
	h, state := taskHost(t, repo, srv)
	openTask(t, h, "orphan").Release()

	// Another process attaches and dies without releasing. Its server
	// ignores the closed stdin but dies with that process (the parent-death
	// signal); what the server started stays: a child in its group, one
	// that left the group (setsid), a daemon.
	out, err := holder(t, repo, state, "orphan", srv).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "attached") {
		t.Fatalf("holder: %v\n%s", err, out)
	}
	groups := taskGroups(t, state, "orphan")
	alive := 0
	for _, g := range groups {
		if procs, _ := testenv.ProcsInGroup(g); len(procs) > 0 {
			alive++
		}
	}
	if alive == 0 {
		t.Fatal("the dead holder's server is not running; the test proves nothing")
	}
	infos, _ := airlock.ListTasks(state)
	if len(infos) != 1 || infos[0].InUse || infos[0].Status != airlock.TaskOpen {
		t.Fatalf("ListTasks = %+v, want the task open and not in use", infos)
	}
	closeLeft(t, state, "orphan", groups)
	for _, m := range marks(t, srv) {
		if f := strings.Fields(m); len(f) == 3 && f[0] == "leftover" {
			if pid, _ := strconv.Atoi(f[1]); running(srv, pid) {
				t.Errorf("the %s leftover %d still runs", f[2], pid)
			}
		}
	}
}

// holdTaskAndDie attaches to a task and exits without releasing it, as a
// crashing process would.
func holdTaskAndDie() {
	var spec struct {
		Config config.Config
		State  string
		Task   string
	}
	if err := json.Unmarshal([]byte(os.Getenv("AIRLOCK_TEST_HOLDER")), &spec); err != nil {
		fmt.Println("bad spec:", err)
		os.Exit(2)
	}
	h, err := airlock.Open(context.Background(), &spec.Config, &airlock.Options{StateDir: spec.State})
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	if _, err := h.AttachTask(context.Background(), spec.Task); err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	fmt.Println("attached")
	os.Exit(0)
}

func TestTaskRules(t *testing.T) {
	repo := gitRepo(t)
	h, state := taskHost(t, repo, taskServer(t, "s", "sdk"))
	for _, id := range []string{"", "a/b", "..", strings.Repeat("x", 65), "a b", "-rf"} {
		if _, err := h.OpenTask(context.Background(), id, nil); err == nil {
			t.Errorf("OpenTask(%q) succeeded", id)
		}
	}
	task := openTask(t, h, "one")
	if _, err := h.OpenTask(context.Background(), "one", nil); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second OpenTask = %v", err)
	}
	if _, err := h.AttachTask(context.Background(), "nope"); err == nil || !strings.Contains(err.Error(), "no task nope") {
		t.Errorf("AttachTask(nope) = %v", err)
	}
	if _, err := h.OpenTask(context.Background(), "elsewhere", &airlock.TaskOptions{Repo: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "not inside a git repository") {
		t.Errorf("OpenTask outside a repository = %v", err)
	}
	// While another attachment holds the task, it cannot be closed.
	other, err := h.AttachTask(context.Background(), "one")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := task.Close(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("Close while attached elsewhere = %v", err)
	}
	if _, err := airlock.CloseTask(context.Background(), state, "one"); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("CloseTask while attached = %v", err)
	}
	other.Release()
	task.Release()
	if _, err := airlock.CloseTask(context.Background(), state, "one"); err != nil {
		t.Errorf("CloseTask after release: %v", err)
	}
}

func TestClosingCancelsCallsInFlight(t *testing.T) {
	repo := gitRepo(t)
	srv := taskServer(t, "s", "sdk")
	h, _ := taskHost(t, repo, srv)
	task := openTask(t, h, "busy")
	done := make(chan *airlock.Result)
	go func() {
		done <- h.Call(context.Background(), task.Snapshot(), airlock.Call{Name: "s__slow"})
	}()
	waitFor(t, 10*time.Second, "the call to arrive", func() bool { return len(calls(t, srv)) == 1 })
	report, err := task.Close(context.Background(), &airlock.CloseOptions{Wait: 300 * time.Millisecond})
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := report.Steps[1].Detail; !strings.HasPrefix(d, "cancelled 1 calls") {
		t.Errorf("in-flight step = %q", d)
	}
	// The call was sent and then cancelled: its outcome is unknown.
	wantStatus(t, <-done, airlock.OutcomeUnknown)
}

// TestTaskServerStartingWhenItsProcessDies: a task's server is recorded
// as soon as its process starts, before the handshake, so that what it
// started is stopped by the next close even when the process that
// attached died while the server was still starting.
func TestTaskServerStartingWhenItsProcessDies(t *testing.T) {
	repo := gitRepo(t)
	srv := config.Server{ID: "slowstart", Transport: "stdio", Scope: "task", Command: "sh",
		// A child of its own that outlives sh, then no answer to the
		// handshake.
		Args: []string{"-c", "sleep 300 & exec sleep 300"}, AllowedTools: []string{"*"},
		ConnectTimeout: 3 * time.Second, ProbeTimeout: time.Second, RequestTimeout: time.Second, MaxConcurrency: 1, QueueTimeout: time.Second}
	h, state := taskHost(t, repo, taskServer(t, "good", "sdk"))
	openTask(t, h, "starting").Release()

	cmd := holder(t, repo, state, "starting", srv)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Recorded, and what it starts is running: sh and the sleep it left
	// in its group.
	recorded := func() bool {
		recs, _ := filepath.Glob(filepath.Join(state, "tasks", "starting", "procs", "*.json"))
		for _, path := range recs {
			var rec struct {
				Servers []struct{ PGID int } `json:"servers"`
			}
			if b, err := os.ReadFile(path); err != nil || json.Unmarshal(b, &rec) != nil {
				continue
			}
			for _, s := range rec.Servers {
				if procs, _ := testenv.ProcsInGroup(s.PGID); len(procs) >= 2 {
					return true
				}
			}
		}
		return false
	}
	for deadline := time.Now().Add(10 * time.Second); !recorded(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the starting server's process was not recorded")
		}
	}
	cmd.Process.Kill() // while the server starts
	cmd.Wait()
	closeLeft(t, state, "starting", taskGroups(t, state, "starting"))
}

// holder is a process that attaches to the task id of state, with the
// servers srv, as a host over repo, and exits without releasing it
// (holdTaskAndDie).
func holder(t *testing.T, repo, state, id string, srv ...config.Server) *exec.Cmd {
	t.Helper()
	cfg := newConfig(t, srv...)
	cfg.Dir = repo
	spec, _ := json.Marshal(map[string]any{"config": cfg, "state": state, "task": id})
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envMode+"=holder", "AIRLOCK_TEST_HOLDER="+string(spec))
	return cmd
}

// closeLeft closes the task id that a dead process left, and checks that
// the close found what it left running, and that groups run no process
// any more.
func closeLeft(t *testing.T, state, id string, groups []int) {
	t.Helper()
	report, err := airlock.CloseTask(context.Background(), state, id)
	if err != nil {
		t.Fatalf("CloseTask: %v\n%+v", err, report)
	}
	if d := report.Steps[0].Detail; d != "1 found" {
		t.Errorf("leftover step = %q, want 1 found", d)
	}
	for _, g := range groups {
		if procs, _ := testenv.ProcsInGroup(g); len(procs) > 0 {
			t.Errorf("group %d still has %v", g, procs)
		}
	}
}
