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

// ProcPath is where this process records the servers of one attachment
// to the task directory dir (replacing what it recorded before), so that
// Teardown can stop them if this process dies; attachment tells apart the
// attachments of one process.
func ProcPath(dir, attachment string) string {
	return filepath.Join(dir, "procs", fmt.Sprintf("%d-%s.json", os.Getpid(), attachment))
}

// ForgetProcesses removes what this process recorded at ProcPath, once
// the attachment's servers have stopped.
func ForgetProcesses(dir, attachment string) { os.Remove(ProcPath(dir, attachment)) }

// stopLeftovers stops the server processes that attached processes
// recorded and did not take down themselves (they died).
func stopLeftovers(dir, worktree string) (string, error) {
	n, err := upstream.StopRecorded(filepath.Join(dir, "procs"), worktree, 2*time.Second)
	return fmt.Sprintf("%d found", n), err
}
