//go:build unix

package airlock

import (
	"os/exec"
	"syscall"
)

// setGroup starts cmd in a process group of its own, so that killGroup can
// end whatever it starts, too.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills cmd's process group.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
