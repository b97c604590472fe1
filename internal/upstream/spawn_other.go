//go:build unix && !linux

package upstream

import (
	"os/exec"
	"syscall"
)

// Without the parent-death signal and the child subreaper (Linux only), a
// server outlives a host process that dies without closing it, and closing
// a server finds only its group: where there is no /proc, processes that
// left it cannot be seen.

func setDeathSignal(*syscall.SysProcAttr) {}

func startProcess(cmd *exec.Cmd, f *family) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	f.pgid, f.own, f.group, f.everywhere = cmd.Process.Pid, cmd.Process.Pid, true, true
	return nil
}

func forgetProcess(*family) {}

func signalProcess(p procInfo, sig syscall.Signal) {
	if q, err := readProc(p.pid); err == nil && q.start == p.start {
		syscall.Kill(p.pid, sig)
	}
}
