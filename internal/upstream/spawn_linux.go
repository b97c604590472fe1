//go:build linux

package upstream

import (
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Every stdio server is started with the parent-death signal, SIGKILL: if
// the host process dies without closing it, however it dies, the kernel
// ends the server. The kernel sends the signal when the *thread* that
// started the server ends, not the process (prctl(2); golang.org/issue/27505),
// and the Go runtime ends a thread when a goroutine locked to it returns
// without unlocking. So servers are started by one goroutine locked to its
// thread for as long as any server it started runs: no other goroutine can
// run on that thread, and so none can end it.
//
// The host process is also a child subreaper (PR_SET_CHILD_SUBREAPER): a
// process a server started that left its group (setsid) and lost its
// parent is reparented to the host instead of init, where closing the
// server finds it (family.stop). A subreaper becomes the parent of every
// orphan below it; it waits only for those it knows are a server's
// (reapOrphans), so that it never takes an exit status that an exec.Cmd
// elsewhere in the program waits for.
var spawner registry

// orphanInterval is how often the spawning goroutine looks at this
// process's children for orphans of running servers: to learn which are
// (only a running process shows its marker) and to reap those that exited.
const orphanInterval = 2 * time.Second

// A registry is this process's running stdio servers and the goroutine
// that starts them. Its methods are safe for concurrent use.
type registry struct {
	subreaperOnce sync.Once
	subreaper     bool // this process is a child subreaper

	mu       sync.Mutex
	jobs     chan func() // to the spawning goroutine; nil while no server runs
	running  int         // servers started (or starting) and not forgotten
	families map[*family]bool
}

// setDeathSignal asks the kernel to SIGKILL the command when the thread
// that starts it ends.
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

// startProcess starts cmd, a server whose processes make up f, on the
// spawning thread, and fills in f. The server stays registered, and the
// spawning goroutine alive, until forgetProcess(f).
func startProcess(cmd *exec.Cmd, f *family) error {
	r := &spawner
	r.subreaperOnce.Do(func() {
		r.subreaper = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == nil
	})
	r.mu.Lock()
	if r.jobs == nil {
		r.jobs = make(chan func())
		go r.run(r.jobs)
	}
	r.running++
	jobs := r.jobs
	r.mu.Unlock()

	done := make(chan error, 1)
	jobs <- func() { done <- cmd.Start() }
	if err := <-done; err != nil {
		forgetProcess(nil)
		return err
	}
	f.pgid, f.own, f.group = cmd.Process.Pid, cmd.Process.Pid, true
	// Without the subreaper, an orphan goes to init (or another subreaper)
	// and only its marker tells where it came from.
	f.everywhere = !r.subreaper
	r.mu.Lock()
	if r.families == nil {
		r.families = map[*family]bool{}
	}
	r.families[f] = true
	r.mu.Unlock()
	return nil
}

// forgetProcess ends what startProcess began for f, once the server and
// its family have stopped (or could not be stopped). The last one lets the
// spawning goroutine, and its thread, go.
func forgetProcess(f *family) {
	r := &spawner
	r.mu.Lock()
	defer r.mu.Unlock()
	if f != nil {
		delete(r.families, f)
	}
	if r.running--; r.running == 0 {
		close(r.jobs)
		r.jobs = nil
	}
}

// run is the spawning goroutine: it starts servers, and reaps the orphans
// of running ones, until jobs is closed (no server runs).
func (r *registry) run(jobs chan func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tick := time.NewTicker(orphanInterval)
	defer tick.Stop()
	known := map[procKey]bool{}
	for {
		select {
		case job, ok := <-jobs:
			if !ok {
				return
			}
			job()
		case <-tick.C:
			r.reapOrphans(known)
		}
	}
}

// reapOrphans reaps this process's children that are exited orphans of
// running servers: processes of a server's group other than its leader,
// and processes found to carry a server's marker while they ran. known
// carries that finding from one call to the next, since an exited
// process's environment is gone.
func (r *registry) reapOrphans(known map[procKey]bool) {
	procs, err := ownChildren()
	if err != nil {
		return
	}
	r.mu.Lock()
	families := slices.Collect(maps.Keys(r.families))
	r.mu.Unlock()
	seen := map[procKey]bool{}
	for _, p := range procs {
		orphan, checked := known[p.key()]
		if !checked {
			orphan = orphanOf(p, families)
		}
		if p.zombie() {
			if orphan {
				reap(p.pid)
			}
			continue
		}
		seen[p.key()] = orphan
	}
	clear(known)
	maps.Copy(known, seen)
}

// ownChildren lists this process's children: from the kernel's list of
// each thread's children where it keeps one (CONFIG_PROC_CHILDREN), else
// from a scan of every process.
func ownChildren() ([]procInfo, error) {
	self := os.Getpid()
	lists, _ := filepath.Glob("/proc/self/task/*/children")
	if len(lists) == 0 {
		procs, err := scanProcs()
		return slices.DeleteFunc(procs, func(p procInfo) bool { return p.ppid != self }), err
	}
	var children []procInfo
	for _, path := range lists {
		b, _ := os.ReadFile(path)
		for f := range strings.FieldsSeq(string(b)) {
			pid, _ := strconv.Atoi(f)
			if p, err := readProc(pid); err == nil && p.ppid == self {
				children = append(children, p)
			}
		}
	}
	return children, nil
}

// orphanOf reports whether p, a child of this process, belongs to one of
// families without being its leader (which its exec.Cmd waits for).
func orphanOf(p procInfo, families []*family) bool {
	for _, f := range families {
		if p.pid == f.own {
			return false
		}
	}
	for _, f := range families {
		if p.pgrp == f.pgid || (!p.zombie() && carries(p.pid, f.marker)) {
			return true
		}
	}
	return false
}

// signalProcess sends sig to p if p is still the process that was scanned:
// through a pidfd, which names one process, after checking its start time,
// so that a pid recycled meanwhile is never hit.
func signalProcess(p procInfo, sig syscall.Signal) {
	fd, err := unix.PidfdOpen(p.pid, 0)
	if errors.Is(err, unix.ENOSYS) {
		if q, err := readProc(p.pid); err == nil && q.start == p.start {
			syscall.Kill(p.pid, sig)
		}
		return
	}
	if err != nil {
		return // gone
	}
	defer unix.Close(fd)
	if q, err := readProc(p.pid); err != nil || q.start != p.start {
		return
	}
	unix.PidfdSendSignal(fd, sig, nil, 0)
}
