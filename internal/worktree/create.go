package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// A Pending is a task being opened: its directory, locked by this process
// alone, its record and its worktree. Finish records it open; Abort undoes
// what Create did.
type Pending struct {
	Dir  string
	Info Info
	Lock *Lock
	undo []func() // last step last
}

// Create begins opening the task info.ID: it makes the task's directory
// under stateDir, locks it, records the task as opening and adds a worktree
// of the repository repoDir is in, on the branch airlock/task/ID. Of info,
// Create reads only ID, Base (what the branch starts from: empty means HEAD,
// or the branch an earlier task of the same id left) and Tenant and User
// (recorded as they are); it fills in the rest. Creating is all or
// nothing: if a step fails, the steps before it are undone.
func Create(ctx context.Context, stateDir, repoDir string, info Info) (*Pending, error) {
	id := info.ID
	if err := CheckID(id); err != nil {
		return nil, err
	}
	repo, err := repoRoot(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(tasksDir(stateDir), 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the tasks directory: %w", err)
	}
	p := &Pending{Dir: Dir(stateDir, id)}
	if err := os.Mkdir(p.Dir, 0o700); errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("task %s already exists; attach to it, or close it first (airlock task close %s)", id, id)
	} else if err != nil {
		return nil, fmt.Errorf("cannot create the task directory: %w", err)
	}
	p.undo = append(p.undo, func() { os.RemoveAll(p.Dir) })
	fail := func(err error) (*Pending, error) {
		p.Abort()
		return nil, err
	}

	if p.Lock, err = LockDir(p.Dir, true); err != nil {
		return fail(err)
	}
	p.undo = append(p.undo, p.Lock.Unlock)

	p.Info = Info{ID: id, Repo: repo, Branch: "airlock/task/" + id, Base: info.Base,
		Worktree: filepath.Join(p.Dir, "worktree"), Status: Opening, CreatedAt: time.Now().UTC(),
		Tenant: info.Tenant, User: info.User}
	if err := Save(p.Dir, p.Info); err != nil {
		return fail(err)
	}
	if err := p.addWorktree(ctx); err != nil {
		return fail(err)
	}
	return p, nil
}

// addWorktree adds the task's worktree, on the branch an earlier task of
// the same id left or on a new one.
func (p *Pending) addWorktree(ctx context.Context) error {
	info := &p.Info
	var err error
	if branchExists(ctx, info.Repo, info.Branch) {
		if info.Base != "" {
			return fmt.Errorf("branch %s exists from an earlier task %s: delete it (git branch -D %s) or leave out the base to continue on it", info.Branch, info.ID, info.Branch)
		}
		_, err = git(ctx, info.Repo, "worktree", "add", info.Worktree, info.Branch)
	} else {
		if info.Base == "" {
			info.Base = "HEAD"
			if _, err := git(ctx, info.Repo, "rev-parse", "--verify", "--quiet", "HEAD"); err != nil {
				return fmt.Errorf("task %s: the repository %s has no commit yet, and a task's worktree starts from one: commit first (git commit --allow-empty -m start will do), or name a base with --base", info.ID, info.Repo)
			}
		}
		info.NewBranch = true
		_, err = git(ctx, info.Repo, "worktree", "add", "-b", info.Branch, info.Worktree, info.Base)
	}
	if err != nil {
		return fmt.Errorf("task %s: cannot create its worktree: %v", info.ID, err)
	}
	repo, worktree, branch, newBranch := info.Repo, info.Worktree, info.Branch, info.NewBranch
	p.undo = append(p.undo, func() {
		// A fresh context: undoing must not be cut short by the caller's.
		ctx, cancel := context.WithTimeout(context.Background(), 2*gitTimeout)
		defer cancel()
		git(ctx, repo, "worktree", "remove", "--force", worktree)
		if newBranch {
			git(ctx, repo, "branch", "-D", branch)
		}
	})
	return nil
}

// Finish records the task open and shares its lock with the processes that
// attach to it later. If it fails, the caller aborts.
func (p *Pending) Finish() error {
	p.Info.Status = Open
	if err := Save(p.Dir, p.Info); err != nil {
		return err
	}
	return p.Lock.Share()
}

// Abort undoes Create, last step first: it removes the worktree (and the
// branch, if Create made it), unlocks the task's directory and removes it.
func (p *Pending) Abort() {
	for _, u := range slices.Backward(p.undo) {
		u()
	}
	p.undo = nil
}
