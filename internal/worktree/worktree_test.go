package worktree

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repo makes a repository with one commit, using the package's own git.
func repo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "README.md"},
		{"-c", "user.name=Test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "first"},
	} {
		if _, err := git(context.Background(), dir, args...); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestAbortLeavesNothingBehind(t *testing.T) {
	ctx := context.Background()
	r, state := repo(t), t.TempDir()
	p, err := Create(ctx, state, r, Info{ID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Read(p.Dir); err != nil || got.ID != "t1" || got.Status != Opening {
		t.Errorf("Read = %+v, %v; want the task opening", got, err)
	}
	if !branchExists(ctx, r, "airlock/task/t1") || !exists(filepath.Join(p.Info.Worktree, "README.md")) {
		t.Fatalf("Create made no branch or worktree: %+v", p.Info)
	}
	if _, err := Create(ctx, state, r, Info{ID: "t1"}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second Create = %v, want already exists", err)
	}
	p.Abort()
	if exists(p.Dir) {
		t.Error("the task directory is left")
	}
	if branchExists(ctx, r, "airlock/task/t1") {
		t.Error("the branch Create made is left")
	}
	if out, _ := git(ctx, r, "worktree", "list", "--porcelain"); strings.Count(out, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", out)
	}
}

func TestCreateOnAnEarlierTasksBranch(t *testing.T) {
	ctx := context.Background()
	r, state := repo(t), t.TempDir()
	if _, err := git(ctx, r, "branch", "airlock/task/again"); err != nil {
		t.Fatal(err)
	}
	_, err := Create(ctx, state, r, Info{ID: "again", Base: "main"})
	if want := "branch airlock/task/again exists from an earlier task again"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Create with a base = %v, want %q", err, want)
	}
	if exists(Dir(state, "again")) {
		t.Error("a refused task left its directory")
	}
	p, err := Create(ctx, state, r, Info{ID: "again"})
	if err != nil {
		t.Fatal(err)
	}
	p.Abort()
	if !branchExists(ctx, r, "airlock/task/again") {
		t.Error("Abort deleted a branch Create did not make")
	}
}

func TestLocks(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	p, err := Create(ctx, state, repo(t), Info{ID: "l"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Abort()
	if _, err := LockDir(p.Dir, false); err == nil || !strings.Contains(err.Error(), "being opened or closed") {
		t.Errorf("shared lock while opening = %v", err)
	}
	if err := p.Finish(); err != nil {
		t.Fatal(err)
	}
	other, err := LockDir(p.Dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Lock.Exclusive(); err == nil || !strings.Contains(err.Error(), "in use by another airlock process") {
		t.Errorf("exclusive lock while attached elsewhere = %v", err)
	}
	infos, err := List(state)
	if err != nil || len(infos) != 1 || infos[0].Status != Open || !infos[0].InUse {
		t.Errorf("List = %+v, %v; want l open and in use", infos, err)
	}
	other.Unlock()
	other.Unlock() // idempotent
}

func TestCloseSavesWorkAndRemovesTheRest(t *testing.T) {
	ctx := context.Background()
	r, state := repo(t), t.TempDir()
	p, err := Create(ctx, state, r, Info{ID: "wip"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Finish(); err != nil {
		t.Fatal(err)
	}
	p.Lock.Unlock()
	if err := os.WriteFile(filepath.Join(p.Info.Worktree, "notes.txt"), []byte("half-done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	report, err := Close(ctx, state, "wip")
	if err != nil {
		t.Fatalf("Close: %v\n%+v", err, report)
	}
	var steps []string
	for _, s := range report.Steps {
		steps = append(steps, s.Step+": "+s.Detail)
	}
	got := strings.Join(steps, "\n")
	for _, want := range []string{"stop servers left by other processes: 0 found", "save uncommitted work: saved as stash", "the branch airlock/task/wip is kept"} {
		if !strings.Contains(got, want) {
			t.Errorf("steps lack %q:\n%s", want, got)
		}
	}
	if out, _ := git(ctx, r, "show", "stash@{0}^3:notes.txt"); out != "half-done" {
		t.Errorf("stashed file = %q", out)
	}
	if exists(p.Dir) {
		t.Error("the task directory is left")
	}
	if recs, _ := filepath.Glob(filepath.Join(state, "closed-tasks", "wip-*.json")); len(recs) != 1 {
		t.Errorf("closed records = %v, want one", recs)
	}
	if _, err := Close(ctx, state, "wip"); err == nil || !strings.Contains(err.Error(), "no task wip") {
		t.Errorf("closing again = %v", err)
	}
}

func TestListShowsDamagedRecords(t *testing.T) {
	state := t.TempDir()
	for id, record := range map[string]string{"bad": "{", "other": `{"id":"someone-else"}`} {
		if err := os.MkdirAll(Dir(state, id), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(Dir(state, id), "task.json"), []byte(record), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(Dir(state, "new"), 0o700); err != nil {
		t.Fatal(err)
	}
	infos, err := List(state)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, i := range infos {
		got[i.ID] = i.Status
	}
	want := map[string]string{"bad": "damaged", "other": "damaged", "new": Opening}
	if !maps.Equal(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
}

// TestCloseLosesNoCommitAndNoNestedRepository: commits made on a detached
// HEAD get a branch of their own before the worktree goes; a git
// repository inside the worktree, which git cannot stash, keeps the
// worktree, and closing again once it is moved out completes.
func TestCloseLosesNoCommitAndNoNestedRepository(t *testing.T) {
	ctx := context.Background()
	r, state := repo(t), t.TempDir()
	open := func(id string) *Pending {
		t.Helper()
		p, err := Create(ctx, state, r, Info{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Finish(); err != nil {
			t.Fatal(err)
		}
		p.Lock.Unlock()
		return p
	}
	run := func(dir string, args ...string) string {
		t.Helper()
		out, err := git(ctx, dir, append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return out
	}

	p := open("detached")
	run(p.Info.Worktree, "checkout", "--detach")
	os.WriteFile(filepath.Join(p.Info.Worktree, "late.txt"), []byte("late\n"), 0o644)
	run(p.Info.Worktree, "add", "late.txt")
	run(p.Info.Worktree, "commit", "-m", "on no branch")
	head := run(p.Info.Worktree, "rev-parse", "HEAD")
	report, err := Close(ctx, state, "detached")
	if err != nil {
		t.Fatalf("Close: %v\n%+v", err, report)
	}
	branch := "airlock/task/detached-detached-" + head[:12]
	if got := run(r, "rev-parse", "refs/heads/"+branch); got != head {
		t.Errorf("branch %s = %q, want the detached commit %s; steps %+v", branch, got, head, report.Steps)
	}

	p = open("nested")
	nested := filepath.Join(p.Info.Worktree, "nested")
	os.MkdirAll(nested, 0o755)
	run(nested, "init", "-q")
	os.WriteFile(filepath.Join(nested, "work.txt"), []byte("precious\n"), 0o644)
	os.WriteFile(filepath.Join(p.Info.Worktree, "notes.txt"), []byte("notes\n"), 0o644)
	report, err = Close(ctx, state, "nested")
	if err == nil || !strings.Contains(err.Error(), "nested/") || !strings.Contains(err.Error(), "the worktree is kept") {
		t.Fatalf("Close with a nested repository = %v; want it kept, naming nested/\n%+v", err, report)
	}
	if b, err := os.ReadFile(filepath.Join(nested, "work.txt")); err != nil || string(b) != "precious\n" {
		t.Fatalf("nested/work.txt = %q, %v; want it where it was", b, err)
	}
	if report.Stash == "" {
		t.Error("the rest of the work was not stashed")
	}
	if err := os.Rename(nested, filepath.Join(t.TempDir(), "nested")); err != nil {
		t.Fatal(err)
	}
	if report, err := Close(ctx, state, "nested"); err != nil {
		t.Fatalf("closing again once it is moved out: %v\n%+v", err, report)
	}
}

// A repository without a commit has nothing for a worktree to start from:
// opening a task there says so, and what to do.
func TestCreateWithoutACommit(t *testing.T) {
	ctx := context.Background()
	dir, state := t.TempDir(), t.TempDir()
	if _, err := git(ctx, dir, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	_, err := Create(ctx, state, dir, Info{ID: "first"})
	if err == nil || !strings.Contains(err.Error(), "has no commit yet") || !strings.Contains(err.Error(), "commit first") {
		t.Errorf("Create in a repository without a commit = %v", err)
	}
	if infos, _ := List(state); len(infos) != 0 {
		t.Errorf("tasks after the failure = %+v, want none", infos)
	}
}
