package airlock

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock/internal/upstream"
)

// A host process that dies without closing its servers (SIGKILL, a crash,
// the OOM killer) takes them along: each stdio server gets the parent-death
// signal. What they started does not get it; so the host records its
// stdio servers in STATE/procs/, and the next host that opens the state
// directory ends what a dead one left (stopLeftovers). Task-scoped servers
// are recorded with their task (internal/worktree) and ended when it
// closes.

// A procRecord keeps a file listing running stdio servers as their
// processes start and stop: a Host's host-scoped ones (hostProcPath), or
// those one attachment to a task started (worktree.ProcPath). Its methods
// are safe for concurrent use.
type procRecord struct {
	path string
	log  *slog.Logger

	mu      sync.Mutex
	servers map[string]upstream.Recorded // by marker: one per process started
	failed  bool                         // a write failed and was logged
}

// hostsOpened tells apart the hosts of one process that share a state
// directory.
var hostsOpened atomic.Uint64

func newProcRecord(path string, log *slog.Logger) *procRecord {
	return &procRecord{path: path, log: log, servers: map[string]upstream.Recorded{}}
}

// hostProcPath is where a new Host records its host-scoped servers:
// STATE/procs/PID-N.json.
func hostProcPath(stateDir string) string {
	return filepath.Join(stateDir, "procs", fmt.Sprintf("%d-%d.json", os.Getpid(), hostsOpened.Add(1)))
}

// track is the upstream.Options.Track of server id.
func (r *procRecord) track(id string) func(upstream.ProcessRecord, bool) {
	return func(rec upstream.ProcessRecord, running bool) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if running {
			r.servers[rec.Marker] = upstream.Recorded{Server: id, ProcessRecord: rec}
		} else {
			delete(r.servers, rec.Marker)
		}
		if err := r.writeLocked(); err != nil && !r.failed {
			r.failed = true
			r.log.Warn("cannot record the servers' processes; if this process dies, what they started may keep running", "error", err)
		}
	}
}

// write writes the file as the servers are now.
func (r *procRecord) write() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writeLocked()
}

// writeLocked writes the file, or removes it when no server runs.
func (r *procRecord) writeLocked() error {
	if len(r.servers) == 0 {
		if err := os.Remove(r.path); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	return upstream.WriteRecord(r.path, slices.SortedFunc(maps.Values(r.servers), func(a, b upstream.Recorded) int { return cmp.Compare(a.PGID, b.PGID) }))
}

// stopLeftovers ends what host processes that died left running in the
// state directory: each server they recorded, if /proc shows it is still
// that server, and whatever it started.
func stopLeftovers(stateDir string, grace time.Duration, log *slog.Logger) {
	if grace <= 0 {
		grace = 2 * time.Second
	}
	n, err := upstream.StopRecorded(filepath.Join(stateDir, "procs"), "", grace)
	if n > 0 {
		log.Warn("stopped servers that a host process left running when it died", "found", n)
	}
	if err != nil {
		log.Warn("could not stop every server a dead host process left running", "error", err)
	}
}
