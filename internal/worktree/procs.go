package worktree

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/airlockhq/airlock/internal/upstream"
)

// A Group is one of a task's servers and its processes: its process group
// and what identifies them for a later process (upstream.ProcessRecord).
type Group = upstream.Recorded

// procPath is where this process records the servers of one attachment to
// the task directory dir; attachment tells apart the attachments of one
// process.
func procPath(dir, attachment string) string {
	return filepath.Join(dir, "procs", fmt.Sprintf("%d-%s.json", os.Getpid(), attachment))
}

// RecordProcesses records the servers that this process's attachment to
// the task directory dir started, replacing what it recorded before, so
// that Teardown can stop them if this process dies.
func RecordProcesses(dir, attachment string, groups []Group) error {
	if err := upstream.WriteRecord(procPath(dir, attachment), groups); err != nil {
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
	n, err := upstream.StopRecorded(filepath.Join(dir, "procs"), worktree, 2*time.Second)
	return fmt.Sprintf("%d found", n), err
}
