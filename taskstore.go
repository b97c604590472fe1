package airlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/worktree"
	"github.com/airlockhq/airlock/store"
)

// Tasks across replicas. A task's worktree is a directory on one machine,
// under one state directory: the place that holds it. When several places
// share a store (store.url) that keeps task records (store.Tasks), each
// task also has a record there, so that every process sharing the store
// sees it, knows where it lives, and cannot open another task of the same
// id. A state directory's own SQLite database is no other place's: tasks
// stay on disk only.
//
// A place is named by an id kept in its state directory (tasks/.holder),
// made when it first records a task, with its machine's name and the state
// directory's path beside it for people. The id, not the machine's name,
// decides whose a record is: a machine that is renamed (a laptop on
// another network, a pod rescheduled onto the same volume) still holds
// its tasks, and two state directories on one machine are two places.
//
// The disk stays the source of truth for the worktree; the store's record
// is written in step with it. Opening records the task (opening) before
// anything is made on disk: the store is the one place that can settle a
// race for an id between replicas, and a store that cannot be reached
// refuses the task while there is still nothing to undo. The record
// becomes open before the disk does, so that a store that fails then
// undoes the whole task rather than leaving one open on disk that others
// cannot see. Closing marks the record closing, tears the task down on
// disk, and drops the record only once the task's state is gone; a
// record a store failure left behind is dropped by closing the task again
// on its place.

// holderFile is the file, under the state directory, that keeps the
// place's id.
func holderFile(stateDir string) string {
	return filepath.Join(stateDir, "tasks", ".holder")
}

// A taskPlace is a state directory and the store that records its
// tasks, if one does.
type taskPlace struct {
	tasks    store.Tasks // nil: the tasks are on disk only
	stateDir string      // absolute
	host     string
}

// placeOf returns the place of stateDir, whose tasks st records if it
// keeps task records; st may be nil.
func placeOf(st store.Store, stateDir string) *taskPlace {
	p := &taskPlace{stateDir: stateDir}
	p.tasks, _ = st.(store.Tasks)
	if abs, err := filepath.Abs(stateDir); err == nil {
		p.stateDir = abs
	}
	p.host, _ = os.Hostname()
	return p
}

// taskPlace returns the host's place: its state directory, with its store
// when the configuration shares that with other places (store.url).
func (h *Host) taskPlace() *taskPlace {
	var st store.Store
	if h.cfg.Store.URL != "" {
		st = h.gov.store
	}
	return placeOf(st, h.opts.StateDir)
}

// holder returns the place's id, or "" when it has none yet. With
// create, it makes one if there is none.
func (p *taskPlace) holder(create bool) (string, error) {
	path := holderFile(p.stateDir)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
		return "", fmt.Errorf("the state directory's id (%s) is empty: remove the file, and airlock makes another", path)
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("cannot read the state directory's id: %w", err)
	case !create:
		return "", nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("cannot create the tasks directory: %w", err)
	}
	// Written aside and linked into place: of processes that make it at
	// once, one link wins and all read the winner's.
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, []byte(store.NewID("plc_")+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("cannot record the state directory's id: %w", err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("cannot record the state directory's id: %w", err)
	}
	return p.holder(false)
}

// record is info as the store keeps it, held by holder.
func (p *taskPlace) record(holder string, info TaskInfo) store.TaskRecord {
	return store.TaskRecord{ID: info.ID, Holder: holder, Host: p.host, StateDir: p.stateDir,
		Repo: info.Repo, Branch: info.Branch, Base: info.Base, Status: info.Status,
		Tenant: info.Tenant, User: info.User, CreatedAt: info.CreatedAt}
}

// hold records info for this place, as it now is on disk. A task another
// place holds is refused with what to do.
func (p *taskPlace) hold(ctx context.Context, info TaskInfo) (inserted bool, err error) {
	if p.tasks == nil {
		return false, nil
	}
	holder, err := p.holder(true)
	if err != nil {
		return false, err
	}
	inserted, err = p.tasks.HoldTask(ctx, p.record(holder, info))
	if errors.Is(err, store.ErrConflict) {
		if _, werr := p.elsewhere(ctx, info.ID); werr != nil {
			return false, werr
		}
		// Its holder dropped it since.
		return false, fmt.Errorf("task %s was held by another state directory a moment ago; try again", info.ID)
	}
	if err != nil {
		return false, fmt.Errorf("task %s: cannot record it in the store (%w); check that the store (store.url) answers, and try again", info.ID, err)
	}
	return inserted, nil
}

// claim records the task id as opening on this place, before anything of
// it is made on disk, and returns what undoes that: it drops the record if
// claim made it. A task another place holds is refused. A record this
// place holds already is left alone: it is an open task's (opening it
// again fails on disk) or one a store failure left, and neither is this
// opening's to change or drop.
func (p *taskPlace) claim(ctx context.Context, info TaskInfo) (undo func(), err error) {
	nothing := func() {}
	if p.tasks == nil {
		return nothing, nil
	}
	if recorded, err := p.elsewhere(ctx, info.ID); err != nil || recorded {
		return nothing, err
	}
	info.Status = TaskOpening
	inserted, err := p.hold(ctx, info)
	if err != nil || !inserted {
		return nothing, err
	}
	return func() {
		// The caller's context may have ended: that is often why.
		ctx, cancel := context.WithTimeout(context.Background(), dropTimeout)
		defer cancel()
		p.drop(ctx, info.ID)
	}, nil
}

// dropTimeout bounds dropping a record when opening a task is undone.
const dropTimeout = 10 * time.Second

// drop deletes this place's record of id. No record is no error.
func (p *taskPlace) drop(ctx context.Context, id string) error {
	if p.tasks == nil {
		return nil
	}
	holder, err := p.holder(false)
	if err != nil || holder == "" {
		return err
	}
	err = p.tasks.DropTask(ctx, id, holder)
	switch {
	case err == nil, errors.Is(err, store.ErrNotFound):
		return nil
	case errors.Is(err, store.ErrConflict):
		_, err = p.elsewhere(ctx, id)
		return err
	}
	return fmt.Errorf("task %s: cannot drop its record in the store (%w); when the store (store.url) answers, close it again (airlock task close %s)", id, err, id)
}

// elsewhere returns the error that says where the task id lives when
// another place holds it. Otherwise it reports whether this place holds a
// record of id.
func (p *taskPlace) elsewhere(ctx context.Context, id string) (recorded bool, err error) {
	if p.tasks == nil {
		return false, nil
	}
	r, err := p.tasks.TaskRecord(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("task %s: cannot read its record in the store (%w); check that the store (store.url) answers, and try again", id, err)
	}
	holder, err := p.holder(false)
	if err != nil {
		return false, err
	}
	if holder == r.Holder {
		return true, nil
	}
	return false, fmt.Errorf("task %s is %s on %s, in the state directory %s: use it there, or close it there (airlock task close %s) to use the id here, or choose another id",
		id, r.Status, r.Host, r.StateDir, id)
}

// A ListedTask is a task as a listing of every place's tasks shows it.
type ListedTask struct {
	// TaskInfo is the task as recorded on disk, for a task of this state
	// directory, or as the store records it, for another's: its Worktree
	// is then the path on that machine, and InUse is false.
	TaskInfo
	// Host is the name of the machine that holds the task's worktree,
	// and StateDir the state directory there.
	Host     string
	StateDir string
	// Local reports whether the task is this state directory's.
	Local bool
}

// ListTasksWith returns the tasks of every place that shares st, oldest
// first: those of stateDir from its disk, as ListTasks does, and those of
// other places from the store. A task this state directory holds in the
// store and no longer has on disk (a store failure left its record) is
// listed too, as the store has it: closing it drops the record. A store
// that keeps no task records lists stateDir's tasks only.
func ListTasksWith(ctx context.Context, st store.Store, stateDir string) ([]ListedTask, error) {
	local, err := ListTasks(stateDir)
	if err != nil {
		return nil, err
	}
	p := placeOf(st, stateDir)
	out := make([]ListedTask, 0, len(local))
	onDisk := map[string]bool{}
	for _, info := range local {
		out = append(out, ListedTask{TaskInfo: info, Host: p.host, StateDir: p.stateDir, Local: true})
		onDisk[info.ID] = true
	}
	if p.tasks == nil {
		return out, nil
	}
	holder, err := p.holder(false)
	if err != nil {
		return nil, err
	}
	records, err := p.tasks.TaskRecords(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot read the tasks of the other replicas (%w); check that the store (store.url) answers", err)
	}
	for _, r := range records {
		mine := holder != "" && r.Holder == holder
		if mine && onDisk[r.ID] {
			continue
		}
		out = append(out, ListedTask{
			TaskInfo: TaskInfo{ID: r.ID, Repo: r.Repo, Branch: r.Branch, Base: r.Base,
				Worktree: filepath.Join(r.StateDir, "tasks", r.ID, "worktree"), Status: r.Status,
				CreatedAt: r.CreatedAt, Tenant: r.Tenant, User: r.User},
			Host: r.Host, StateDir: r.StateDir, Local: mine,
		})
	}
	slices.SortStableFunc(out, func(a, b ListedTask) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// CloseTaskWith is CloseTask for a state directory whose tasks st
// records (st may be nil, or keep no task records: then it is CloseTask).
// The record is marked closing first and dropped once the task's state is
// gone, a step of the report. A task another place holds is refused,
// naming that place; one whose only trace is this place's record in the
// store (a store failure left it) has the record dropped.
func CloseTaskWith(ctx context.Context, st store.Store, stateDir, id string) (*CloseReport, error) {
	if err := worktree.CheckID(id); err != nil {
		return nil, err
	}
	p := placeOf(st, stateDir)
	recorded, err := p.elsewhere(ctx, id)
	if err != nil {
		return nil, err
	}
	dir := worktree.Dir(stateDir, id)
	if _, err := os.Stat(dir); recorded && errors.Is(err, fs.ErrNotExist) {
		r := &CloseReport{Task: id}
		r.Run(forgetStep, func() (string, error) { return "no task on disk", p.drop(ctx, id) })
		return r, r.Err()
	}
	info, lock, err := worktree.LockToClose(dir)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	r := &CloseReport{Task: id}
	return r, p.teardown(ctx, dir, info, r)
}

// forgetStep is the step of closing a task that drops its record in the
// store.
const forgetStep = "drop the task's record in the store"

// teardown tears the task of dir down (worktree.Teardown) with its record
// in the store in step: marked closing before, dropped after, once the
// task's state is gone. The caller holds the task's lock alone.
func (p *taskPlace) teardown(ctx context.Context, dir string, info TaskInfo, r *CloseReport) error {
	if p.tasks != nil {
		closing := info
		closing.Status = TaskClosing
		// A store that fails here fails the drop below too, which the
		// report shows.
		p.hold(ctx, closing)
	}
	worktree.Teardown(ctx, p.stateDir, dir, info, r)
	if _, err := os.Stat(dir); p.tasks != nil && errors.Is(err, fs.ErrNotExist) {
		r.Run(forgetStep, func() (string, error) { return "", p.drop(ctx, info.ID) })
	}
	return r.Err()
}
