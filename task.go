package airlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/config"
)

// A Task is a unit of agent work with a git worktree of its own and its own
// instances of the task-scoped servers, bound to that worktree. Its
// snapshot holds the host's shared tools and the task's own; the model never
// names a workspace, so knowing another task's id gives no access to it.
//
// A task lives on disk (under the state directory's tasks/) until it is
// closed: a process opens or attaches to it, calls tools, and releases it;
// a task left behind by a crashed process is listed and can be closed.
type Task struct {
	h       *Host
	dir     string // STATE/tasks/ID
	info    TaskInfo
	lock    *taskLock
	servers []*server
	line    *lineage // the task's snapshots: the host's tools and its own
	calls   tracker
	life    context.Context // ends when the task is released or closed
	endLife context.CancelFunc
	who     Principal // whom the task's calls are made for
	leased  []*server // the partitioned servers whose lane of who it holds
	unlease sync.Once

	releaseOnce sync.Once
	releaseErr  error
}

// TaskInfo is a task as recorded on disk.
type TaskInfo struct {
	ID        string    `json:"id"`
	Repo      string    `json:"repo"`     // top level of the repository
	Branch    string    `json:"branch"`   // airlock/task/ID
	Base      string    `json:"base"`     // what the branch started from
	Worktree  string    `json:"worktree"` // STATE/tasks/ID/worktree
	Status    string    `json:"status"`   // opening, open or closing
	CreatedAt time.Time `json:"created_at"`
	// Tenant and User are whom the task acts for, when not the host's
	// principal.
	Tenant string `json:"tenant,omitempty"`
	User   string `json:"user,omitempty"`
	// NewBranch records that the task created its branch (and so may
	// delete it if opening fails).
	NewBranch bool `json:"new_branch"`
	// InUse reports whether some process is attached to the task now.
	InUse bool `json:"-"`
}

// Task states on disk. A task found "opening" or "closing" was left so by a
// process that died; closing it again finishes the job.
const (
	TaskOpening = "opening"
	TaskOpen    = "open"
	TaskClosing = "closing"
)

// TaskOptions say where a task's worktree comes from.
type TaskOptions struct {
	// Repo is a directory inside the git repository. Empty means the
	// configuration's directory.
	Repo string
	// Base is the commit-ish the task's branch starts from. Empty means
	// HEAD, or the task's existing branch when one is left from an earlier
	// task of the same id.
	Base string
	// Principal is whom the task's calls are made for: policy, approvals,
	// the journal and the tenant limit see it, and remote OAuth servers
	// are called with its credentials, on connections of its own (shared
	// with other tasks of the same principal). Empty fields mean the
	// host's.
	Principal Principal
}

var taskIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func checkTaskID(id string) error {
	if !taskIDRE.MatchString(id) {
		return fmt.Errorf("task id %q: use 1 to 64 letters, digits, _ or -", id)
	}
	return nil
}

func tasksDir(stateDir string) string { return filepath.Join(stateDir, "tasks") }

// OpenTask creates a task: a worktree of the repository on the branch
// airlock/task/ID, a runtime directory beside it, and the task-scoped
// servers started in the worktree with their tools discovered. Opening is
// all or nothing: if any step fails, everything it created is undone.
func (h *Host) OpenTask(ctx context.Context, id string, opts *TaskOptions) (*Task, error) {
	if err := checkTaskID(id); err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &TaskOptions{}
	}
	repoDir := opts.Repo
	if repoDir == "" {
		repoDir = h.cfg.Dir
	}
	repo, err := repoRoot(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(tasksDir(h.opts.StateDir), 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the tasks directory: %w", err)
	}
	t := &Task{h: h, dir: filepath.Join(tasksDir(h.opts.StateDir), id)}
	if err := os.Mkdir(t.dir, 0o700); errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("task %s already exists; attach to it, or close it first (airlock task close %s)", id, id)
	} else if err != nil {
		return nil, fmt.Errorf("cannot create the task directory: %w", err)
	}
	// Undo everything on failure, last step first.
	var undo []func()
	fail := func(err error) (*Task, error) {
		for _, u := range slices.Backward(undo) {
			u()
		}
		return nil, err
	}
	undo = append(undo, func() { os.RemoveAll(t.dir) })

	if t.lock, err = lockTask(t.dir, true); err != nil {
		return fail(err)
	}
	undo = append(undo, func() { t.lock.unlock() })

	for what, name := range map[string]string{"tenant": opts.Principal.Tenant, "user": opts.Principal.User} {
		if name != "" {
			if err := config.CheckPrincipal(what, name); err != nil {
				return fail(fmt.Errorf("task %s: %w", id, err))
			}
		}
	}
	t.info = TaskInfo{ID: id, Repo: repo, Branch: "airlock/task/" + id, Base: opts.Base,
		Worktree: filepath.Join(t.dir, "worktree"), Status: TaskOpening, CreatedAt: time.Now().UTC()}
	if who := h.taskPrincipal(opts.Principal); who != h.Principal() {
		t.info.Tenant, t.info.User = who.Tenant, who.User
	}
	if err := t.save(); err != nil {
		return fail(err)
	}
	if branchExists(ctx, repo, t.info.Branch) {
		if opts.Base != "" {
			return fail(fmt.Errorf("branch %s exists from an earlier task %s: delete it (git branch -D %s) or leave out the base to continue on it", t.info.Branch, id, t.info.Branch))
		}
		_, err = git(ctx, repo, "worktree", "add", t.info.Worktree, t.info.Branch)
	} else {
		if t.info.Base == "" {
			t.info.Base = "HEAD"
		}
		t.info.NewBranch = true
		_, err = git(ctx, repo, "worktree", "add", "-b", t.info.Branch, t.info.Worktree, t.info.Base)
	}
	if err != nil {
		return fail(fmt.Errorf("task %s: cannot create its worktree: %v", id, err))
	}
	undo = append(undo, func() {
		// A fresh context: undoing must not be cut short by the caller's.
		ctx, cancel := context.WithTimeout(context.Background(), 2*gitTimeout)
		defer cancel()
		git(ctx, repo, "worktree", "remove", "--force", t.info.Worktree)
		if t.info.NewBranch {
			git(ctx, repo, "branch", "-D", t.info.Branch)
		}
	})

	if err := t.start(ctx); err != nil {
		return fail(err)
	}
	undo = append(undo, func() { t.endLife(); stopAll(t.servers) })
	var failed []string
	for _, s := range t.servers {
		if st := s.getStatus(); st.Err != nil {
			failed = append(failed, st.Err.Msg)
		}
	}
	if len(failed) > 0 {
		return fail(&Error{Kind: ConnectionError, Msg: fmt.Sprintf("task %s: not opened, its servers failed:\n%s", id, strings.Join(failed, "\n"))})
	}
	t.info.Status = TaskOpen
	if err := t.save(); err != nil {
		return fail(err)
	}
	if err := t.lock.share(); err != nil {
		return fail(err)
	}
	return t, nil
}

// AttachTask uses a task opened earlier, by this or another process: it
// starts the task-scoped servers in the task's worktree. Several processes
// may be attached to one task at once. A server that fails is reported in
// Servers, as with Open.
func (h *Host) AttachTask(ctx context.Context, id string) (*Task, error) {
	if err := checkTaskID(id); err != nil {
		return nil, err
	}
	t := &Task{h: h, dir: filepath.Join(tasksDir(h.opts.StateDir), id)}
	info, err := readTaskInfo(t.dir)
	if err != nil {
		return nil, err
	}
	t.info = info
	if info.Status != TaskOpen {
		return nil, fmt.Errorf("task %s is %s: a process stopped before finishing; close it (airlock task close %s)", id, info.Status, id)
	}
	if _, err := os.Stat(info.Worktree); err != nil {
		return nil, fmt.Errorf("task %s: its worktree is gone; close it (airlock task close %s)", id, id)
	}
	if t.lock, err = lockTask(t.dir, false); err != nil {
		return nil, err
	}
	if err := t.start(ctx); err != nil {
		t.lock.unlock()
		return nil, err
	}
	return t, nil
}

// start starts the task-scoped servers in the worktree, records their
// process groups (so a task left by a crashed process can still be cleaned
// up) and builds the task's snapshot.
func (t *Task) start(ctx context.Context) error {
	t.life, t.endLife = context.WithCancel(t.h.life)
	t.who = t.h.taskPrincipal(Principal{Tenant: t.info.Tenant, User: t.info.User})
	if t.who != t.h.Principal() {
		for _, s := range t.h.servers {
			if s.partitioned() {
				s.leaseLane(t.who)
				t.leased = append(t.leased, s)
			}
		}
	}
	for _, sc := range t.h.perTask {
		s := newServer(sc.ForWorkspace(t.info.Worktree), t.dir)
		s.afterRestart = func() { t.recordProcesses() }
		t.servers = append(t.servers, s)
	}
	t.h.startAll(ctx, t.life, t.servers)
	t.h.tasksMu.Lock()
	if t.h.tasks == nil {
		t.h.tasks = map[*Task]bool{}
	}
	t.h.tasks[t] = true
	t.h.tasksMu.Unlock()
	stop := func() {
		t.h.forget(t)
		t.endLife()
		stopAll(t.servers)
		t.releaseLanes()
	}
	if err := t.recordProcesses(); err != nil {
		stop()
		return err
	}
	t.line = newLineage(append(slices.Clone(t.h.servers), t.servers...), t)
	if err := t.h.build(t.line); err != nil {
		stop()
		t.forgetProcesses()
		return err
	}
	return nil
}

// ID returns the task's id.
func (t *Task) ID() string { return t.info.ID }

// Info returns the task as recorded on disk.
func (t *Task) Info() TaskInfo { return t.info }

// Worktree returns the directory of the task's worktree.
func (t *Task) Worktree() string { return t.info.Worktree }

// Snapshot returns the task's catalog: the host's shared tools and the
// task's own.
func (t *Task) Snapshot() *Snapshot { return t.line.snap.Load() }

// BeginTurn is the task's safe point between model turns (see
// Host.BeginTurn): the host's and the task's servers that said their tools
// changed are discovered again, and the task's newest snapshot is returned.
func (t *Task) BeginTurn(ctx context.Context) *Snapshot {
	snap, err := t.h.refresh(ctx, t.line)
	if err != nil {
		t.h.log.Warn("refreshing the task's catalog", "task", t.info.ID, "error", err)
	}
	return snap.forTurn()
}

// Servers reports the host's servers, then the task's.
func (t *Task) Servers() []ServerStatus {
	return append(t.h.Servers(), statuses(t.servers)...)
}

// Release ends this process's use of the task: its servers stop and the
// task stays open on disk, for this or another process to attach to again.
// It is idempotent; after Close it does nothing.
func (t *Task) Release() error {
	t.releaseOnce.Do(func() {
		t.calls.stop()
		t.calls.calls.Wait()
		t.endLife()
		t.h.forget(t)
		t.releaseErr = stopAll(t.servers)
		t.releaseLanes()
		t.forgetProcesses()
		t.lock.unlock()
	})
	return t.releaseErr
}

func (t *Task) save() error {
	b, err := json.MarshalIndent(t.info, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(t.dir, ".task.json.tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("cannot record task %s: %w", t.info.ID, err)
	}
	if err := os.Rename(tmp, filepath.Join(t.dir, "task.json")); err != nil {
		return fmt.Errorf("cannot record task %s: %w", t.info.ID, err)
	}
	return nil
}

func readTaskInfo(dir string) (TaskInfo, error) {
	id := filepath.Base(dir)
	b, err := os.ReadFile(filepath.Join(dir, "task.json"))
	if errors.Is(err, fs.ErrNotExist) {
		if _, derr := os.Stat(dir); derr == nil {
			// Created but never recorded: a process died at the very start.
			return TaskInfo{ID: id, Status: TaskOpening}, nil
		}
		return TaskInfo{}, fmt.Errorf("no task %s (airlock task list shows the tasks)", id)
	}
	if err != nil {
		return TaskInfo{}, fmt.Errorf("cannot read task %s: %w", id, err)
	}
	var info TaskInfo
	if err := json.Unmarshal(b, &info); err != nil || info.ID != id {
		return TaskInfo{}, fmt.Errorf("task %s: its record is damaged (%s)", id, filepath.Join(dir, "task.json"))
	}
	return info, nil
}

// ListTasks returns the tasks recorded in the state directory, including
// those left opening or closing by a process that died.
func ListTasks(stateDir string) ([]TaskInfo, error) {
	entries, err := os.ReadDir(tasksDir(stateDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []TaskInfo
	for _, e := range entries {
		if !e.IsDir() || !taskIDRE.MatchString(e.Name()) {
			continue
		}
		dir := filepath.Join(tasksDir(stateDir), e.Name())
		info, err := readTaskInfo(dir)
		if err != nil {
			info = TaskInfo{ID: e.Name(), Status: "damaged"}
		}
		info.InUse = taskInUse(dir)
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b TaskInfo) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// forget stops the host from releasing t when it closes.
func (h *Host) forget(t *Task) {
	h.tasksMu.Lock()
	delete(h.tasks, t)
	h.tasksMu.Unlock()
}

// taskPrincipal fills the empty fields of a task's principal from the
// host's.
func (h *Host) taskPrincipal(p Principal) Principal {
	who := h.Principal()
	if p.Tenant != "" {
		who.Tenant = p.Tenant
	}
	if p.User != "" {
		who.User = p.User
	}
	return who
}

// Principal is whom the task's calls are made for.
func (t *Task) Principal() Principal { return t.who }

// releaseLanes gives back the task's leases on its principal's
// connections to partitioned servers; a connection another task still
// leases stays open.
func (t *Task) releaseLanes() {
	t.unlease.Do(func() {
		for _, s := range t.leased {
			s.releaseLane(t.who)
		}
	})
}
