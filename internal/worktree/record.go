package worktree

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"
)

// Info is a task as recorded on disk.
type Info struct {
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
	Opening = "opening"
	Open    = "open"
	Closing = "closing"
)

var idRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckID reports whether id can name a task (and so a directory and a
// branch).
func CheckID(id string) error {
	if !idRE.MatchString(id) {
		return fmt.Errorf("task id %q: use 1 to 64 letters, digits, _ or -", id)
	}
	return nil
}

func tasksDir(stateDir string) string { return filepath.Join(stateDir, "tasks") }

// Dir returns the directory of the task id: STATE/tasks/ID.
func Dir(stateDir, id string) string { return filepath.Join(tasksDir(stateDir), id) }

// Save records info in the task directory dir, replacing the record
// whole.
func Save(dir string, info Info) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ".task.json.tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("cannot record task %s: %w", info.ID, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "task.json")); err != nil {
		return fmt.Errorf("cannot record task %s: %w", info.ID, err)
	}
	return nil
}

// Read returns the record of the task directory dir. A directory without
// one is a task whose process died at the very start: it is opening.
func Read(dir string) (Info, error) {
	id := filepath.Base(dir)
	b, err := os.ReadFile(filepath.Join(dir, "task.json"))
	if errors.Is(err, fs.ErrNotExist) {
		if _, derr := os.Stat(dir); derr == nil {
			// Created but never recorded: a process died at the very start.
			return Info{ID: id, Status: Opening}, nil
		}
		return Info{}, fmt.Errorf("no task %s (airlock task list shows the tasks)", id)
	}
	if err != nil {
		return Info{}, fmt.Errorf("cannot read task %s: %w", id, err)
	}
	var info Info
	if err := json.Unmarshal(b, &info); err != nil || info.ID != id {
		return Info{}, fmt.Errorf("task %s: its record is damaged (%s)", id, filepath.Join(dir, "task.json"))
	}
	return info, nil
}

// List returns the tasks recorded in the state directory, oldest first,
// including those left opening or closing by a process that died.
func List(stateDir string) ([]Info, error) {
	entries, err := os.ReadDir(tasksDir(stateDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, e := range entries {
		if !e.IsDir() || !idRE.MatchString(e.Name()) {
			continue
		}
		dir := Dir(stateDir, e.Name())
		info, err := Read(dir)
		if err != nil {
			info = Info{ID: e.Name(), Status: "damaged"}
		}
		info.InUse = inUse(dir)
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b Info) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}
