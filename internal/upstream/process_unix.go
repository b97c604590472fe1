//go:build unix

package upstream

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// setGroup makes the command the leader of a new process group, so that
// closing the server can signal every process it started: wrappers such as
// npx or sh -c otherwise leave the real server behind as an orphan. On
// Linux the command also gets the parent-death signal (spawn_linux.go).
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
}

// signalGroup sends sig to every process in the group pgid.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// A family is the processes of one stdio server: its process group, the
// processes that carry its marker (those that left the group with setsid
// and were orphaned included), and whatever any of them started.
type family struct {
	pgid   int    // the leader's pid, which names its group
	marker string // its markerEnv value; "" when unknown
	group  bool   // the group pgid is the server's (a recorded group may have been recycled)
	// own is a pid an exec.Cmd of this process waits for (the leader):
	// stop never reaps it, so that Cmd.Wait gets its exit status.
	own int
	// everywhere makes stop look for the marker among every process, not
	// only among this process's children: what an orphan is reparented to
	// when this process is not a child subreaper, or for the leftovers of a
	// host process that died.
	everywhere bool
}

// A sweep finds a family's processes, scan after scan, remembering which
// processes it found to be members: once a member has exited, only that
// memory says that its zombie may be reaped.
type sweep struct {
	f      *family
	self   int
	member map[procKey]bool // found to be a member (true) or not (false)
}

func (f *family) sweep() *sweep {
	return &sweep{f: f, self: os.Getpid(), member: map[procKey]bool{}}
}

// scan returns the family's live processes, and reaps its zombies that are
// children of this process (orphans reparented here). It fails where there
// is no /proc.
func (s *sweep) scan() ([]procInfo, error) {
	procs, err := scanProcs()
	if err != nil {
		return nil, err
	}
	children := map[int][]procInfo{}
	var found []procInfo
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p)
		if s.isMember(p) {
			found = append(found, p)
		}
	}
	// What a member started belongs to the family too, even if it left the
	// group and dropped the marker.
	for i := 0; i < len(found); i++ {
		for _, c := range children[found[i].pid] {
			if !s.member[c.key()] {
				s.member[c.key()] = true
				found = append(found, c)
			}
		}
	}
	isMember := map[int]bool{}
	for _, p := range found {
		isMember[p.pid] = true
	}
	var live []procInfo
	for _, p := range found {
		switch {
		case !p.zombie():
			live = append(live, p)
		case p.ppid == s.self && p.pid != s.f.own && !reap(p.pid):
			live = append(live, p) // its other threads are still exiting
		case isMember[p.ppid] && p.ppid != s.self:
			// Its parent, a member too, has yet to exit, or exited after
			// this scan read the child: then it is reparented, to this
			// process (a child subreaper), which must reap it, or to init.
			// Until the next scan sees where it went, it counts as live.
			live = append(live, p)
		}
	}
	return live, nil
}

func (s *sweep) isMember(p procInfo) bool {
	k := p.key()
	if m, ok := s.member[k]; ok {
		return m
	}
	switch {
	case s.f.group && p.pgrp == s.f.pgid:
		s.member[k] = true
	case p.zombie():
		return false // its environment is gone: nothing to remember
	case s.f.everywhere || p.ppid == s.self:
		s.member[k] = carries(p.pid, s.f.marker)
	default:
		s.member[k] = false
	}
	return s.member[k]
}

// stop ends the family: SIGTERM, up to grace for it to exit, then SIGKILL
// and up to grace again. It reports whether it found any live process.
// Where there is no /proc, the group is all it can see.
func (f *family) stop(grace time.Duration) (bool, error) {
	s := f.sweep()
	live, err := s.scan()
	gone := func() bool {
		live, _ = s.scan()
		return len(live) == 0
	}
	switch {
	case err != nil && (!f.group || syscall.Kill(-f.pgid, 0) != nil):
		return false, nil
	case err != nil:
		gone = func() bool { return syscall.Kill(-f.pgid, 0) != nil }
	case len(live) == 0:
		return false, nil
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		if f.group {
			signalGroup(f.pgid, sig)
		}
		for _, p := range live {
			signalProcess(p, sig)
		}
		if waitUntil(grace, gone) {
			return true, nil
		}
	}
	return true, fmt.Errorf("processes of group %d survived SIGKILL", f.pgid)
}

// A ProcessRecord identifies a stdio server's processes well enough for
// another host process to end them after the one that started them died,
// and never to take an unrelated process for them.
type ProcessRecord struct {
	// PGID is the leader's pid, which is also its process group.
	PGID int `json:"pgid"`
	// Start is the leader's start time in clock ticks after boot, and
	// Command the SHA-256 of its command line: with PGID they tell the
	// leader from a process that got its pid later.
	Start   uint64 `json:"start,omitempty"`
	Command string `json:"command,omitempty"`
	// Marker is the value of AIRLOCK_SERVER_INSTANCE that the server and
	// everything it starts inherit.
	Marker string `json:"marker,omitempty"`
}

// StopLeftover ends what a server left running when the host process that
// started it died: the processes of its group, if one of them is still the
// server's, and every process that carries its marker, with whatever those
// started. A process is the server's if it carries the marker, if it is the
// recorded leader (same pid, start time and command line), or, for a
// record without either (written by an older version), if it works in dir
// or below (dir empty: never). It reports whether it found any.
func StopLeftover(rec ProcessRecord, dir string, grace time.Duration) (bool, error) {
	f := &family{pgid: rec.PGID, marker: rec.Marker, everywhere: true}
	if pids, err := liveGroupMembers(rec.PGID); err == nil {
		for _, p := range pids {
			if recorded(p, rec, dir) {
				f.group = true
				break
			}
		}
	}
	if !f.group && rec.Marker == "" {
		return false, nil
	}
	return f.stop(grace)
}

// recorded reports whether process p is one that rec describes.
func recorded(p procInfo, rec ProcessRecord, dir string) bool {
	switch {
	case carries(p.pid, rec.Marker):
		return true
	case rec.Start != 0:
		return p.pid == rec.PGID && p.start == rec.Start && commandHash(p.pid) == rec.Command
	case rec.Marker == "" && dir != "":
		return cwdInside(p.pid, dir)
	}
	return false
}

// liveGroupMembers lists the live processes of group pgid from /proc.
func liveGroupMembers(pgid int) ([]procInfo, error) {
	procs, err := scanProcs()
	if err != nil {
		return nil, err
	}
	var members []procInfo
	for _, p := range procs {
		if p.pgrp == pgid && !p.zombie() {
			members = append(members, p)
		}
	}
	return members, nil
}

// reap collects the exit status of pid, a child of this process that has
// exited, so that it does not stay a zombie. It reports false while pid
// cannot be reaped yet: a process whose first thread exited shows as a
// zombie while its other threads are still exiting.
func reap(pid int) bool {
	var ws syscall.WaitStatus
	for {
		wpid, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue // the runtime's preemption signal
		}
		return wpid != 0 || err != nil
	}
}
