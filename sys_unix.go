//go:build unix

package airlock

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// A taskLock is an advisory lock on a task's directory. Processes attached
// to a task share it; opening and closing hold it alone. The kernel drops a
// dead process's lock, so a crash never leaves a task locked.
type taskLock struct {
	f  *os.File
	id string
}

func lockTask(dir string, exclusive bool) (*taskLock, error) {
	id := filepath.Base(dir)
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("task %s: cannot lock it: %w", id, err)
	}
	l := &taskLock{f: f, id: id}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if err := l.flock(how); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

func (l *taskLock) flock(how int) error {
	err := syscall.Flock(int(l.f.Fd()), how|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		if how == syscall.LOCK_EX {
			return fmt.Errorf("task %s is in use by another airlock process; stop it there first", l.id)
		}
		return fmt.Errorf("task %s is being opened or closed by another airlock process", l.id)
	}
	if err != nil {
		return fmt.Errorf("task %s: cannot lock it: %w", l.id, err)
	}
	return nil
}

// share turns an exclusive lock into a shared one.
func (l *taskLock) share() error { return l.flock(syscall.LOCK_SH) }

// exclusive turns a shared lock into an exclusive one, if no other process
// holds the lock.
func (l *taskLock) exclusive() error { return l.flock(syscall.LOCK_EX) }

func (l *taskLock) unlock() {
	if l != nil && l.f != nil {
		l.f.Close() // closing the descriptor releases the lock
		l.f = nil
	}
}

// taskInUse reports whether some process holds the task's lock.
func taskInUse(dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

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
