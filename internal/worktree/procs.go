package worktree

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/airlockhq/airlock/internal/upstream"
)

// A Group is the process group one of a task's servers runs in.
type Group struct {
	Server string `json:"server"`
	PGID   int    `json:"pgid"`
}

// procRecord lists the process groups one attached process started for a
// task, so that they can be stopped if that process dies.
type procRecord struct {
	PID     int     `json:"pid"`
	Servers []Group `json:"servers"`
}

// procPath is where this process records the groups of one attachment to
// the task directory dir; attachment tells apart the attachments of one
// process.
func procPath(dir, attachment string) string {
	return filepath.Join(dir, "procs", fmt.Sprintf("%d-%s.json", os.Getpid(), attachment))
}

// RecordProcesses records the process groups that this process's
// attachment to the task directory dir started, replacing what it recorded
// before, so that Teardown can stop them if this process dies.
func RecordProcesses(dir, attachment string, groups []Group) error {
	rec := procRecord{PID: os.Getpid(), Servers: groups}
	if err := os.MkdirAll(filepath.Join(dir, "procs"), 0o700); err != nil {
		return fmt.Errorf("task %s: cannot record its servers: %w", filepath.Base(dir), err)
	}
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(procPath(dir, attachment), b, 0o600); err != nil {
		return fmt.Errorf("task %s: cannot record its servers: %w", filepath.Base(dir), err)
	}
	return nil
}

// ForgetProcesses removes what RecordProcesses recorded, once the
// attachment's servers have stopped.
func ForgetProcesses(dir, attachment string) { os.Remove(procPath(dir, attachment)) }

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
