package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"syscall"
)

// ProcsInGroup returns, in ascending order, the processes of process group
// pgid that are still running: zombies, which have exited and only wait to be
// reaped, are left out. Tests use it to check that closing a server left
// nothing of its process group behind.
func ProcsInGroup(pgid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() {
			continue // Not a process.
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue // It exited while we looked.
		}
		if err != nil {
			return nil, err
		}
		st, err := parseStat(data)
		if err != nil {
			return nil, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		if st.pgrp == pgid && st.state != 'Z' && st.state != 'X' {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids, nil
}

// procStat holds the fields of /proc/PID/stat that ProcsInGroup needs.
type procStat struct {
	state byte
	pgrp  int
}

// parseStat decodes /proc/PID/stat: "pid (comm) state ppid pgrp ...". The
// command name may itself contain spaces and parentheses, so the fields are
// counted from the last closing parenthesis.
func parseStat(data []byte) (procStat, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, errors.New("no command name")
	}
	fields := bytes.Fields(data[i+1:])
	if len(fields) < 3 || len(fields[0]) != 1 {
		return procStat{}, fmt.Errorf("malformed fields after the command name: %q", data[i+1:])
	}
	pgrp, err := strconv.Atoi(string(fields[2]))
	if err != nil {
		return procStat{}, fmt.Errorf("process group: %w", err)
	}
	return procStat{state: fields[0][0], pgrp: pgrp}, nil
}
