//go:build unix

package upstream

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// setGroup makes the command the leader of a new process group, so that
// closing the server can signal every process it started: wrappers such as
// npx or sh -c otherwise leave the real server behind as an orphan.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to every process in the group pgid.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// groupAlive reports whether any process of the group pgid is still running.
// On Linux, zombies (exited, not yet reaped by their new parent) do not
// count: they hold no resources and cannot be killed further.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	if pids, err := liveGroupMembers(pgid); err == nil {
		return len(pids) > 0
	}
	return true
}

// liveGroupMembers lists the non-zombie processes of group pgid from /proc.
// It fails where /proc is not available.
func liveGroupMembers(pgid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// The command name is in parentheses and may contain spaces or
		// parentheses itself: the fields we want follow the last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := bytes.Fields(stat[i+1:])
		// fields[0] is the state, fields[1] the parent, fields[2] the group.
		if len(fields) < 3 || string(fields[0]) == "Z" {
			continue
		}
		if g, err := strconv.Atoi(string(fields[2])); err == nil && g == pgid {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// StopLeftover ends the process group pgid if it still has a live process
// working in dir (or below): a server left behind by a host process that
// died. Checking the working directory keeps a recycled group id from
// hitting an unrelated process. It reports whether it found the group.
func StopLeftover(pgid int, dir string, grace time.Duration) (bool, error) {
	pids, err := liveGroupMembers(pgid)
	if err != nil || len(pids) == 0 {
		return false, err
	}
	inside := false
	for _, pid := range pids {
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if err != nil {
			continue
		}
		cwd = strings.TrimSuffix(cwd, " (deleted)")
		if cwd == dir || strings.HasPrefix(cwd, dir+string(os.PathSeparator)) {
			inside = true
			break
		}
	}
	if !inside {
		return false, nil
	}
	signalGroup(pgid, syscall.SIGTERM)
	if waitUntil(grace, func() bool { return !groupAlive(pgid) }) {
		return true, nil
	}
	signalGroup(pgid, syscall.SIGKILL)
	if waitUntil(grace, func() bool { return !groupAlive(pgid) }) {
		return true, nil
	}
	return true, fmt.Errorf("processes of group %d survived SIGKILL", pgid)
}
