package worktree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A CloseReport says what closing a task did, step by step, in order.
type CloseReport struct {
	Task  string      `json:"id"`
	Steps []CloseStep `json:"steps"`
	// Stash is the commit of the git stash entry that holds the task's
	// uncommitted work, or "" when there was none to save; Restore is the
	// git command that brings that work back.
	Stash   string `json:"stash,omitempty"`
	Restore string `json:"restore,omitempty"`
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

// Run runs one step of closing and adds it to the report, with what f
// says it did or its error.
func (r *CloseReport) Run(step string, f func() (string, error)) error {
	began := time.Now()
	detail, err := f()
	s := CloseStep{Step: step, OK: err == nil, Detail: detail, Duration: time.Since(began)}
	if err != nil {
		s.Detail = err.Error()
	}
	r.Steps = append(r.Steps, s)
	return err
}

// Err returns an error naming every step that failed, or nil.
func (r *CloseReport) Err() error {
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

// Close closes the task id of the state directory, which no process may be
// attached to: it takes the task's lock alone and tears it down.
func Close(ctx context.Context, stateDir, id string) (*CloseReport, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	dir := Dir(stateDir, id)
	info, lock, err := LockToClose(dir)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	r := &CloseReport{Task: id}
	return r, Teardown(ctx, stateDir, dir, info, r)
}

// LockToClose reads the record of the task directory dir and takes its lock
// alone, as closing a task no process is attached to begins; the caller
// tears it down and unlocks.
func LockToClose(dir string) (Info, *Lock, error) {
	info, err := Read(dir)
	if err != nil {
		return Info{}, nil, err
	}
	lock, err := LockDir(dir, true)
	if err != nil {
		return Info{}, nil, err
	}
	return info, lock, nil
}

// Teardown is the part of closing a task that works from the disk alone,
// each step run and reported in r: stop the servers that attached
// processes recorded and left running (they died), save uncommitted work
// in the worktree as a git stash entry, record the task under
// closed-tasks/, and only then remove the worktree and the task directory
// dir. A failing step does not skip the later ones, except that a worktree
// whose changes could not be saved is kept. The caller holds the task's
// lock alone. Teardown returns an error naming every step of r that
// failed, the caller's included.
func Teardown(ctx context.Context, stateDir, dir string, info Info, r *CloseReport) error {
	info.Status = Closing
	Save(dir, info)

	r.Run("stop servers left by other processes", func() (string, error) {
		return stopLeftovers(dir, info.Worktree)
	})
	saved := r.Run("save uncommitted work", func() (string, error) {
		if info.Worktree == "" || !exists(info.Worktree) {
			return "no worktree", nil
		}
		// Commits made on a detached HEAD are on no branch: one is made
		// for them, or removing the worktree would leave them to git's
		// garbage collection.
		kept, err := keepDetached(ctx, info.Worktree, info.ID)
		if err != nil {
			return "", err
		}
		d, err := dirty(ctx, info.Worktree)
		if err != nil || !d {
			return join(kept, "nothing to save"), err
		}
		ref, err := stash(ctx, info.Worktree, fmt.Sprintf("airlock: uncommitted work of task %s, saved when it closed", info.ID))
		if err != nil {
			return "", err
		}
		r.Stash = ref
		r.Restore = fmt.Sprintf("git -C %s stash apply %s", shellQuote(info.Repo), short(ref))
		detail := join(kept, fmt.Sprintf("saved as stash %s of %s; get it back with: %s", short(ref), info.Repo, r.Restore))
		// What git cannot stash (a git repository inside the worktree)
		// is still there: the worktree is kept rather than lose it.
		if left, err := git(ctx, info.Worktree, "status", "--porcelain", "--untracked-files=all"); err != nil || left != "" {
			return "", fmt.Errorf("%s; but git could not save %s (a git repository inside the worktree is not stashed), so the worktree is kept: move it out of %s, then close the task again",
				detail, strings.Join(statusPaths(left), ", "), info.Worktree)
		}
		return detail, nil
	})
	record := filepath.Join(stateDir, "closed-tasks", fmt.Sprintf("%s-%s.json", info.ID, time.Now().UTC().Format("20060102T150405Z")))
	r.Run("record the task", func() (string, error) {
		return record, writeRecord(record, info, r)
	})
	r.Run("remove the worktree", func() (string, error) {
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
	r.Run("remove the task's state", func() (string, error) {
		if saved != nil {
			return "", errors.New("kept with the worktree")
		}
		return "", os.RemoveAll(dir)
	})
	writeRecord(record, info, r)
	return r.Err()
}

func writeRecord(path string, info Info, r *CloseReport) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(struct {
		Task   Info        `json:"task"`
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

// shellQuote returns s as one word of a POSIX shell command line: as it is
// when that is safe, else in single quotes.
func shellQuote(s string) string {
	safe := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._-+=:,@", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// join joins the details of a step that are not empty with "; ".
func join(details ...string) string {
	return strings.Join(slices.DeleteFunc(details, func(d string) bool { return d == "" }), "; ")
}

// keepDetached makes a branch for the worktree's HEAD when it is detached
// and no branch, tag or remote branch holds it, and says so ("" when
// there was nothing to keep).
func keepDetached(ctx context.Context, worktree, id string) (string, error) {
	if _, err := git(ctx, worktree, "symbolic-ref", "-q", "HEAD"); err == nil {
		return "", nil // on a branch
	}
	head, err := git(ctx, worktree, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return "", nil // no commit yet
	}
	held, err := git(ctx, worktree, "for-each-ref", "--contains", head, "--count=1", "--format=%(refname)", "refs/heads", "refs/tags", "refs/remotes")
	if err != nil || held != "" {
		return "", err
	}
	branch := fmt.Sprintf("airlock/task/%s-detached-%s", id, short(head))
	if _, err := git(ctx, worktree, "branch", branch, head); err != nil {
		return "", err
	}
	return fmt.Sprintf("the commits of its detached HEAD are kept on the branch %s", branch), nil
}

// statusPaths are the paths of git status --porcelain output.
func statusPaths(out string) []string {
	var paths []string
	for line := range strings.Lines(out) {
		if line = strings.TrimRight(line, "\n"); len(line) > 3 {
			paths = append(paths, line[3:])
		}
	}
	return paths
}
