package airlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/upstream"
)

// CloseOptions tune how a task closes. The zero value works.
type CloseOptions struct {
	// Wait is how long calls in flight may finish before they are
	// cancelled. Zero means 10s.
	Wait time.Duration
}

// A CloseReport says what closing a task did, step by step, in order.
type CloseReport struct {
	Task  string      `json:"id"`
	Steps []CloseStep `json:"steps"`
}

// A CloseStep is one step of closing a task.
type CloseStep struct {
	Step     string        `json:"step"`
	OK       bool          `json:"ok"`
	Detail   string        `json:"detail,omitempty"`
	Duration time.Duration `json:"-"`
}

// OK reports whether every step succeeded.
func (r *CloseReport) OK() bool {
	for _, s := range r.Steps {
		if !s.OK {
			return false
		}
	}
	return true
}

func (r *CloseReport) run(step string, f func() (string, error)) error {
	began := time.Now()
	detail, err := f()
	s := CloseStep{Step: step, OK: err == nil, Detail: detail, Duration: time.Since(began)}
	if err != nil {
		s.Detail = err.Error()
	}
	r.Steps = append(r.Steps, s)
	return err
}

func (r *CloseReport) err() error {
	var failed []string
	for _, s := range r.Steps {
		if !s.OK {
			failed = append(failed, s.Step+": "+s.Detail)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("task %s did not close cleanly: %s", r.Task, strings.Join(failed, "; "))
}

// Close ends the task, in the reverse order of opening, each step bounded in
// time and reported: stop new calls; let calls in flight finish, then cancel
// them; stop the task's servers (their whole process groups); save what must
// not be lost (uncommitted changes in the worktree become a git stash entry,
// and the task's record is kept under closed-tasks/); only then remove the
// worktree and the task's state. A failing step does not skip the later
// ones, except that a worktree whose changes could not be saved is kept. It
// fails while another process is attached to the task.
func (t *Task) Close(ctx context.Context, opts *CloseOptions) (*CloseReport, error) {
	if opts == nil {
		opts = &CloseOptions{}
	}
	wait := opts.Wait
	if wait <= 0 {
		wait = 10 * time.Second
	}
	r := &CloseReport{Task: t.info.ID}
	if err := t.lock.exclusive(); err != nil {
		return r, err
	}
	r.run("stop new calls", func() (string, error) {
		t.calls.stop()
		return "", nil
	})
	r.run("finish calls in flight", func() (string, error) {
		return t.calls.drain(wait)
	})
	r.run("stop the task's servers", func() (string, error) {
		t.endLife()
		t.h.forget(t)
		err := stopAll(t.servers)
		t.releaseLanes()
		t.forgetProcesses()
		return fmt.Sprintf("%d servers", len(t.servers)), err
	})
	t.releaseOnce.Do(func() {}) // Release after Close does nothing.
	teardown(ctx, t.h.opts.StateDir, t.dir, t.info, r)
	t.lock.unlock()
	return r, r.err()
}

// CloseTask closes a task no process is attached to, such as one left
// behind by a process that died: it stops the servers that process left
// running, then does what Task.Close does.
func CloseTask(ctx context.Context, stateDir, id string) (*CloseReport, error) {
	if err := checkTaskID(id); err != nil {
		return nil, err
	}
	dir := filepath.Join(tasksDir(stateDir), id)
	info, err := readTaskInfo(dir)
	if err != nil {
		return nil, err
	}
	lock, err := lockTask(dir, true)
	if err != nil {
		return nil, err
	}
	defer lock.unlock()
	r := &CloseReport{Task: id}
	teardown(ctx, stateDir, dir, info, r)
	return r, r.err()
}

// teardown is the part of closing that works from the disk alone. The
// caller holds the task's lock exclusively.
func teardown(ctx context.Context, stateDir, dir string, info TaskInfo, r *CloseReport) {
	info.Status = TaskClosing
	t := &Task{dir: dir, info: info}
	t.save()

	r.run("stop servers left by other processes", func() (string, error) {
		return stopLeftovers(dir, info.Worktree)
	})
	saved := r.run("save uncommitted work", func() (string, error) {
		if info.Worktree == "" || !exists(info.Worktree) {
			return "no worktree", nil
		}
		d, err := dirty(ctx, info.Worktree)
		if err != nil || !d {
			return "nothing to save", err
		}
		ref, err := stash(ctx, info.Worktree, fmt.Sprintf("airlock: uncommitted work of task %s, saved when it closed", info.ID))
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("saved as stash %s of %s (git stash list)", short(ref), info.Repo), nil
	})
	record := filepath.Join(stateDir, "closed-tasks", fmt.Sprintf("%s-%s.json", info.ID, time.Now().UTC().Format("20060102T150405Z")))
	r.run("record the task", func() (string, error) {
		return record, writeRecord(record, info, r)
	})
	r.run("remove the worktree", func() (string, error) {
		if saved != nil {
			return "", errors.New("kept: its uncommitted work could not be saved")
		}
		if info.Repo == "" {
			return "no worktree was created", nil
		}
		if exists(info.Worktree) {
			if _, err := git(ctx, info.Repo, "worktree", "remove", "--force", info.Worktree); err != nil {
				return "", err
			}
		}
		_, err := git(ctx, info.Repo, "worktree", "prune")
		detail := info.Worktree
		if info.NewBranch {
			detail += "; the branch " + info.Branch + " is kept"
		}
		return detail, err
	})
	r.run("remove the task's state", func() (string, error) {
		if saved != nil {
			return "", errors.New("kept with the worktree")
		}
		return "", os.RemoveAll(dir)
	})
	writeRecord(record, info, r)
}

// stopLeftovers stops the server processes that attached processes
// recorded and did not take down themselves (they died).
func stopLeftovers(dir, worktree string) (string, error) {
	recs, _ := filepath.Glob(filepath.Join(dir, "procs", "*.json"))
	stopped := 0
	var errs []error
	for _, path := range recs {
		var rec procRecord
		if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &rec) == nil {
			for _, g := range rec.Servers {
				found, err := upstream.StopLeftover(g.PGID, worktree, 2*time.Second)
				if found {
					stopped++
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("server %s: %v", g.Server, err))
				}
			}
		}
		os.Remove(path)
	}
	return fmt.Sprintf("%d found", stopped), errors.Join(errs...)
}

func writeRecord(path string, info TaskInfo, r *CloseReport) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(struct {
		Task   TaskInfo    `json:"task"`
		Closed time.Time   `json:"closed_at"`
		Steps  []CloseStep `json:"steps"`
	}{info, time.Now().UTC(), r.Steps}, "", "  ")
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

func short(ref string) string {
	if len(ref) > 12 {
		return ref[:12]
	}
	return ref
}

// procRecord lists the process groups one attached process started for a
// task, so that they can be stopped if that process dies.
type procRecord struct {
	PID     int `json:"pid"`
	Servers []struct {
		Server string `json:"server"`
		PGID   int    `json:"pgid"`
	} `json:"servers"`
}

func (t *Task) procPath() string {
	return filepath.Join(t.dir, "procs", fmt.Sprintf("%d-%p.json", os.Getpid(), t))
}

func (t *Task) recordProcesses() error {
	var rec procRecord
	rec.PID = os.Getpid()
	for _, s := range t.servers {
		if conn := s.current(); conn != nil && conn.PGID() > 0 {
			rec.Servers = append(rec.Servers, struct {
				Server string `json:"server"`
				PGID   int    `json:"pgid"`
			}{s.cfg.ID, conn.PGID()})
		}
	}
	if err := os.MkdirAll(filepath.Join(t.dir, "procs"), 0o700); err != nil {
		return fmt.Errorf("task %s: cannot record its servers: %w", t.info.ID, err)
	}
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(t.procPath(), b, 0o600); err != nil {
		return fmt.Errorf("task %s: cannot record its servers: %w", t.info.ID, err)
	}
	return nil
}

func (t *Task) forgetProcesses() { os.Remove(t.procPath()) }
