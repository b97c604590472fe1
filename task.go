package airlock

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/worktree"
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
	lock    *worktree.Lock
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

	// procs records its servers' processes on disk as each starts and
	// stops: a process that dies while they start leaves the next one
	// what it needs to stop them.
	procs *procRecord
}

// TaskInfo is a task as recorded on disk.
type TaskInfo = worktree.Info

// Task states on disk. A task found "opening" or "closing" was left so by a
// process that died; closing it again finishes the job.
const (
	TaskOpening = worktree.Opening
	TaskOpen    = worktree.Open
	TaskClosing = worktree.Closing
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

// OpenTask creates a task: a worktree of the repository on the branch
// airlock/task/ID, a runtime directory beside it, and the task-scoped
// servers started in the worktree with their tools discovered. Opening is
// all or nothing: if any step fails, everything it created is undone.
//
// With a store that several places share (store.url), the task is also
// recorded there, first: an id that another place holds is refused,
// naming that place, before anything is made on disk, and a store that
// fails undoes the task (see ListTasksWith).
func (h *Host) OpenTask(ctx context.Context, id string, opts *TaskOptions) (*Task, error) {
	if err := worktree.CheckID(id); err != nil {
		return nil, err
	}
	if strings.HasPrefix(id, "-") {
		// Every later command would read it as an option.
		return nil, fmt.Errorf("task id %q: start it with a letter, a digit or _ (a leading - reads as an option: airlock task close %s would fail)", id, id)
	}
	if opts == nil {
		opts = &TaskOptions{}
	}
	for what, name := range map[string]string{"tenant": opts.Principal.Tenant, "user": opts.Principal.User} {
		if name != "" {
			if err := config.CheckPrincipal(what, name); err != nil {
				return nil, fmt.Errorf("task %s: %w", id, err)
			}
		}
	}
	repoDir := opts.Repo
	if repoDir == "" {
		repoDir = h.cfg.Dir
	}
	info := TaskInfo{ID: id, Base: opts.Base}
	if who := h.taskPrincipal(opts.Principal); who != h.Principal() {
		info.Tenant, info.User = who.Tenant, who.User
	}
	place := h.taskPlace()
	unclaim, err := place.claim(ctx, info)
	if err != nil {
		return nil, err
	}
	p, err := worktree.Create(ctx, h.opts.StateDir, repoDir, info)
	if err != nil {
		unclaim()
		return nil, err
	}
	t := &Task{h: h, dir: p.Dir, info: p.Info, lock: p.Lock}
	if err := t.start(ctx); err != nil {
		p.Abort()
		unclaim()
		return nil, err
	}
	var failed []string
	for _, s := range t.servers {
		if st := s.getStatus(); st.Err != nil {
			failed = append(failed, st.Err.Msg)
		}
	}
	if len(failed) > 0 {
		err = &Error{Kind: ConnectionError, Msg: fmt.Sprintf("task %s: not opened, its servers failed:\n%s", id, strings.Join(failed, "\n"))}
	} else {
		// The store first: a task it cannot record open is undone,
		// rather than left open on disk where no other place sees it.
		open := p.Info
		open.Status = TaskOpen
		if _, err = place.hold(ctx, open); err == nil {
			err = p.Finish()
		}
	}
	if err != nil {
		t.stopServers()
		p.Abort()
		unclaim()
		return nil, err
	}
	t.info = p.Info
	return t, nil
}

// AttachTask uses a task opened earlier, by this or another process: it
// starts the task-scoped servers in the task's worktree. Several processes
// may be attached to one task at once. A server that fails is reported in
// Servers, as with Open. With a store that several places share
// (store.url), a task another place holds is refused, naming it, and one
// of this place's is recorded there if it is not yet (it was opened
// before the store was shared).
func (h *Host) AttachTask(ctx context.Context, id string) (*Task, error) {
	if err := worktree.CheckID(id); err != nil {
		return nil, err
	}
	place := h.taskPlace()
	if _, err := place.elsewhere(ctx, id); err != nil {
		return nil, err
	}
	t := &Task{h: h, dir: worktree.Dir(h.opts.StateDir, id)}
	info, err := worktree.Read(t.dir)
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
	if _, err := place.hold(ctx, info); err != nil {
		return nil, err
	}
	if t.lock, err = worktree.LockDir(t.dir, false); err != nil {
		return nil, err
	}
	if err := t.start(ctx); err != nil {
		t.lock.Unlock()
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
	t.procs = newProcRecord(worktree.ProcPath(t.dir, t.attachment()), t.h.log)
	for _, sc := range t.h.perTask {
		s := newServer(sc.ForWorkspace(t.info.Worktree), t.dir)
		s.track = t.procs.track(s.cfg.ID)
		t.servers = append(t.servers, s)
	}
	t.h.startAll(ctx, t.life, t.servers)
	t.h.tasksMu.Lock()
	if t.h.tasks == nil {
		t.h.tasks = map[*Task]bool{}
	}
	t.h.tasks[t] = true
	t.h.tasksMu.Unlock()
	if err := t.procs.write(); err != nil {
		t.stopServers()
		return fmt.Errorf("task %s: cannot record its servers: %w", t.info.ID, err)
	}
	t.line = newLineage(append(slices.Clone(t.h.servers), t.servers...), t)
	if err := t.h.build(t.line); err != nil {
		t.stopServers()
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
		t.releaseErr = t.stopServers()
		t.forgetProcesses()
		t.lock.Unlock()
	})
	return t.releaseErr
}

// stopServers ends the task's life in this process: its servers stop, the
// host forgets it and its leases on partitioned servers are given back.
func (t *Task) stopServers() error {
	t.endLife()
	t.h.forget(t)
	err := stopAll(t.servers)
	t.releaseLanes()
	return err
}

// ListTasks returns the tasks recorded in the state directory, including
// those left opening or closing by a process that died.
func ListTasks(stateDir string) ([]TaskInfo, error) { return worktree.List(stateDir) }

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
