package main

import (
	"fmt"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
)

type taskJSON struct {
	ID        string  `json:"id"`
	Worktree  string  `json:"worktree"`
	Status    string  `json:"status"`
	CreatedAt *string `json:"created_at"`
	Branch    string  `json:"branch"`
	Repo      string  `json:"repo"`
	InUse     bool    `json:"in_use"`

	created time.Time // for text
}

func taskOutput(t airlock.TaskInfo) taskJSON {
	out := taskJSON{ID: t.ID, Worktree: t.Worktree, Status: t.Status, Branch: t.Branch, Repo: t.Repo, InUse: t.InUse, created: t.CreatedAt}
	if !t.CreatedAt.IsZero() {
		s := t.CreatedAt.UTC().Format(time.RFC3339)
		out.CreatedAt = &s
	}
	return out
}

func (e *env) taskOpen(o *options, pos []string) error {
	repo := o.repo
	if repo == "" {
		repo = "."
	}
	h, _, err := e.openHost(&o.common)
	if err != nil {
		return err
	}
	s := &session{h: h}
	defer e.closeSession(s)
	task, err := h.OpenTask(e.ctx, pos[0], &airlock.TaskOptions{Repo: repo, Base: o.base})
	if err != nil {
		return taskError(err)
	}
	s.task = task
	info := task.Info()
	info.InUse = false
	if o.json {
		out := struct {
			taskJSON
			Servers []serverJSON `json:"servers"`
			Tools   int          `json:"tools"`
		}{taskOutput(info), toolsOutput(task.Snapshot(), task.Servers()).Servers, len(task.Snapshot().Tools())}
		return writeJSON(e.stdout, out)
	}
	fmt.Fprintf(e.stdout, "Task %s is open: worktree %s on branch %s, %s.\n", info.ID, info.Worktree, info.Branch, plural(len(task.Snapshot().Tools()), "tool"))
	fmt.Fprintf(e.stdout, "Use it with --task %s; close it with airlock task close %s.\n", info.ID, info.ID)
	return nil
}

// listedTaskJSON is a task in task list: where it lives, besides what
// its record says.
type listedTaskJSON struct {
	taskJSON
	Host     string `json:"host"`
	StateDir string `json:"state_dir"`
	Local    bool   `json:"local"`
}

func (e *env) taskList(o *options, _ []string) error {
	cfg, st, err := e.configAndStore(&o.common, e.sharedStore)
	if err != nil {
		return err
	}
	defer closeShared(st)
	tasks, err := airlock.ListTasksWith(e.ctx, st, stateDir(&o.common, cfg))
	if err != nil {
		return usageError("cannot list tasks: %v", err)
	}
	out := make([]listedTaskJSON, 0, len(tasks))
	for _, t := range tasks {
		out = append(out, listedTaskJSON{taskOutput(t.TaskInfo), t.Host, t.StateDir, t.Local})
	}
	listing := tasksListing
	if st != nil {
		listing = sharedTasksListing
	}
	return listing.print(e.stdout, o.json, out)
}

// sharedStore opens the store that cfg shares with other places
// (store.url), or returns nil when it names none.
func (e *env) sharedStore(c *common, cfg *config.Config) (store.Store, error) {
	if cfg.Store.URL == "" {
		return nil, nil
	}
	st, err := airlock.OpenConfiguredStore(cfg, stateDir(c, cfg))
	if err != nil {
		return nil, usageError("%v", err)
	}
	return st, nil
}

// closeShared closes what sharedStore opened, if anything.
func closeShared(st store.Store) {
	if st != nil {
		st.Close()
	}
}

// taskRow is a task's row in task list: its id, status, whether it is in
// use and when it was created.
func taskRow(t listedTaskJSON) []string {
	inUse, created := "no", "-"
	if t.InUse {
		inUse = "yes"
	}
	if !t.created.IsZero() {
		created = localTime(t.created)
	}
	return []string{t.ID, t.Status, inUse, created}
}

var tasksListing = listing[listedTaskJSON]{
	key:    "tasks",
	none:   "No tasks are open.",
	header: []string{"TASK", "STATUS", "IN USE", "CREATED", "WORKTREE"},
	row:    func(t listedTaskJSON) []string { return append(taskRow(t), t.Worktree) },
}

// sharedTasksListing is task list with a shared store: every place's
// tasks, with the machine each is on.
var sharedTasksListing = listing[listedTaskJSON]{
	key:    "tasks",
	none:   "No tasks are open.",
	header: []string{"TASK", "STATUS", "IN USE", "CREATED", "HOST", "WORKTREE"},
	row: func(t listedTaskJSON) []string {
		host := t.Host
		if t.Local {
			host += " (here)"
		}
		return append(taskRow(t), host, t.Worktree)
	},
}

func (e *env) taskClose(o *options, pos []string) error {
	cfg, st, err := e.configAndStore(&o.common, e.sharedStore)
	if err != nil {
		return err
	}
	defer closeShared(st)
	report, err := airlock.CloseTaskWith(e.ctx, st, stateDir(&o.common, cfg), pos[0])
	if report == nil {
		return usageError("%v", err)
	}
	type stepJSON struct {
		Step       string `json:"step"`
		OK         bool   `json:"ok"`
		Detail     string `json:"detail"`
		DurationMS int64  `json:"duration_ms"`
	}
	out := struct {
		ID     string     `json:"id"`
		Status string     `json:"status"`
		Steps  []stepJSON `json:"steps"`
		// Where the task's uncommitted work went, if it had any.
		Stash   string `json:"stash,omitempty"`
		Restore string `json:"restore,omitempty"`
	}{ID: report.Task, Status: "closed", Steps: []stepJSON{}, Stash: report.Stash, Restore: report.Restore}
	if err != nil {
		out.Status = "failed"
	}
	for _, s := range report.Steps {
		out.Steps = append(out.Steps, stepJSON{s.Step, s.OK, s.Detail, s.Duration.Milliseconds()})
	}
	if o.json {
		if werr := writeJSON(e.stdout, out); werr != nil {
			return werr
		}
	} else {
		col := coloursFor(e.stdout)
		for _, s := range out.Steps {
			mark := col.green("✓")
			if !s.OK {
				mark = col.red("✗")
			}
			line := fmt.Sprintf("%s %s", mark, s.Step)
			if s.Detail != "" {
				line += ": " + s.Detail
			}
			fmt.Fprintln(e.stdout, line)
		}
	}
	if err != nil {
		return &exitError{code: exitServer, msg: err.Error()}
	}
	return nil
}
