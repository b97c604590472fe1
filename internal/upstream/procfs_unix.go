//go:build unix

package upstream

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// markerEnv names the variable every stdio server is started with: a
// random value per start (a family's marker). Whatever the server starts
// inherits it, so that its processes can be found even after they left its
// process group (setsid) and their parent died.
const markerEnv = "AIRLOCK_SERVER_INSTANCE"

// A procInfo is what /proc/PID/stat says about one process.
type procInfo struct {
	pid, ppid, pgrp int
	state           byte
	// start is when the process started, in clock ticks after boot: with
	// the pid, it names one process, where a pid alone may be recycled.
	start uint64
}

// A procKey names one process over time, as a pid alone cannot.
type procKey struct {
	pid   int
	start uint64
}

func (p procInfo) key() procKey { return procKey{p.pid, p.start} }

// zombie reports whether the process has exited and waits to be reaped:
// it holds no resources and cannot be signalled further.
func (p procInfo) zombie() bool { return p.state == 'Z' || p.state == 'X' }

var errNoStat = errors.New("malformed /proc stat")

// readProc reads /proc/PID/stat. It fails where there is no /proc, and for
// a process that is gone.
func readProc(pid int) (procInfo, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, err
	}
	return parseStat(pid, b)
}

// parseStat decodes /proc/PID/stat: "pid (comm) state ppid pgrp ...". The
// command name is in parentheses and may contain spaces or parentheses
// itself: the fields are counted from the last ')'.
func parseStat(pid int, b []byte) (procInfo, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, errNoStat
	}
	// f[0] is field 3 of proc(5) (the state), f[1] the parent, f[2] the
	// group and f[19] field 22, the start time.
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return procInfo{}, errNoStat
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	start, err3 := strconv.ParseUint(string(f[19]), 10, 64)
	if errors.Join(err1, err2, err3) != nil {
		return procInfo{}, errNoStat
	}
	return procInfo{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0][0], start: start}, nil
}

// scanProcs lists every process /proc shows. It fails where there is no
// /proc.
func scanProcs() ([]procInfo, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var procs []procInfo
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue // not a process
		}
		if p, err := readProc(pid); err == nil {
			procs = append(procs, p) // else it exited meanwhile
		}
	}
	return procs, nil
}

// carries reports whether process pid was started with marker as its
// markerEnv. The environment of another user's process, or of one that
// made itself undumpable, cannot be read: it does not carry it.
func carries(pid int, marker string) bool {
	if marker == "" {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	want := []byte(markerEnv + "=" + marker)
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if bytes.Equal(kv, want) {
			return true
		}
	}
	return false
}

// commandHash returns the SHA-256, in hex, of process pid's command line
// as /proc shows it: enough to recognise the process without writing its
// arguments (which may hold a credential) down.
func commandHash(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// argsHash is commandHash for a command line that /proc cannot show.
func argsHash(args []string) string {
	var b []byte
	for _, a := range args {
		b = append(append(b, a...), 0)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// cwdInside reports whether process pid works in dir or below it.
func cwdInside(pid int, dir string) bool {
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return false
	}
	cwd = strings.TrimSuffix(cwd, " (deleted)")
	return cwd == dir || strings.HasPrefix(cwd, dir+string(os.PathSeparator))
}

// Identity names this process on this machine, as "HOST/PID/START"
// (START: when it started, in clock ticks after boot), for a record that
// another process may test with Ended. It is "" where /proc cannot say.
func Identity() string {
	host, err := os.Hostname()
	if err != nil {
		return ""
	}
	p, err := readProc(os.Getpid())
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s/%d/%d", host, p.pid, p.start)
}

// Ended reports whether the process identity (Identity) names is known to
// have ended: it ran on this machine, and no process with its pid and
// start time runs now. A process of another machine, or an identity that
// cannot be read, is not known to have ended.
func Ended(identity string) bool {
	i := strings.LastIndexByte(identity, '/')
	j := strings.LastIndexByte(identity[:max(i, 0)], '/')
	if i < 0 || j < 0 {
		return false
	}
	host, err := os.Hostname()
	if err != nil || host != identity[:j] {
		return false
	}
	pid, err1 := strconv.Atoi(identity[j+1 : i])
	start, err2 := strconv.ParseUint(identity[i+1:], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return false
	}
	p, err := readProc(pid)
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	return err == nil && (p.start != start || p.zombie())
}
