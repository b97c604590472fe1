package airlock

import (
	"context"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/internal/worktree"
)

// CloseOptions tune how a task closes. The zero value works.
type CloseOptions struct {
	// Wait is how long calls in flight may finish before they are
	// cancelled. Zero means 10s.
	Wait time.Duration
}

// A CloseReport says what closing a task did, step by step, in order.
type CloseReport = worktree.CloseReport

// A CloseStep is one step of closing a task.
type CloseStep = worktree.CloseStep

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
	if err := t.lock.Exclusive(); err != nil {
		return r, err
	}
	r.Run("stop new calls", func() (string, error) {
		t.calls.stop()
		return "", nil
	})
	r.Run("finish calls in flight", func() (string, error) {
		return t.calls.drain(wait)
	})
	r.Run("stop the task's servers", func() (string, error) {
		err := t.stopServers()
		t.forgetProcesses()
		return fmt.Sprintf("%d servers", len(t.servers)), err
	})
	t.releaseOnce.Do(func() {}) // Release after Close does nothing.
	err := t.h.taskPlace().teardown(ctx, t.dir, t.info, r)
	t.lock.Unlock()
	return r, err
}

// CloseTask closes a task no process is attached to, such as one left
// behind by a process that died: it stops the servers that process left
// running, then does what Task.Close does. It works from the disk alone;
// CloseTaskWith also keeps a shared store's record in step.
func CloseTask(ctx context.Context, stateDir, id string) (*CloseReport, error) {
	return worktree.Close(ctx, stateDir, id)
}

func (t *Task) forgetProcesses() { worktree.ForgetProcesses(t.dir, t.attachment()) }

// attachment tells this process's attachments to one task apart.
func (t *Task) attachment() string { return fmt.Sprintf("%p", t) }
