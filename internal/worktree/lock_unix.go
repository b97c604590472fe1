//go:build unix

package worktree

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// A Lock is an advisory lock on a task's directory. Processes attached to
// a task share it; opening and closing hold it alone. The kernel drops a
// dead process's lock, so a crash never leaves a task locked.
type Lock struct {
	f  *os.File
	id string
}

// LockDir locks the task directory dir, alone if exclusive, or shared with
// other attached processes.
func LockDir(dir string, exclusive bool) (*Lock, error) {
	id := filepath.Base(dir)
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("task %s: cannot lock it: %w", id, err)
	}
	l := &Lock{f: f, id: id}
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

func (l *Lock) flock(how int) error {
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

// Share turns an exclusive lock into a shared one.
func (l *Lock) Share() error { return l.flock(syscall.LOCK_SH) }

// Exclusive turns a shared lock into an exclusive one, if no other process
// holds the lock.
func (l *Lock) Exclusive() error { return l.flock(syscall.LOCK_EX) }

// Unlock releases the lock. It is idempotent, and does nothing on a nil
// Lock.
func (l *Lock) Unlock() {
	if l != nil && l.f != nil {
		l.f.Close() // closing the descriptor releases the lock
		l.f = nil
	}
}

// inUse reports whether some process holds the lock of the task directory
// dir.
func inUse(dir string) bool {
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
