//go:build unix

package sqlite

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// A writer's lock file holds an exclusive advisory lock (flock) while the
// writer lives. flock locks belong to an open file, not a process, so two
// DBs in one process exclude each other as two processes do, and the
// kernel drops the lock when its process dies, however it dies.

// lockWriter creates the lock file for id, locked. The file is locked
// under a temporary name and then renamed, so that a file under a writer's
// name is always locked while the writer lives: a prober can never catch
// one between its creation and its lock and take it for gone.
func lockWriter(dir, id string) (*writerLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, id)
	tmp := path + ".new"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	return &writerLock{id: id, path: path, f: f}, nil
}

// release removes the lock file, then drops the lock. A prober that opened
// the file before it was removed takes the lock after us and finds the
// writer gone, which it is.
func (l *writerLock) release() {
	os.Remove(l.path)
	l.f.Close()
}

// writerGone reports whether the writer with the given id has gone: its
// lock file is missing or nobody holds its lock. When it has, the caller
// holds the lock until it calls done, which also removes the file. A writer
// whose state cannot be told (a file that cannot be opened) counts as live:
// its intents stay open rather than being ended while in flight.
func writerGone(dir, id string) (gone bool, done func()) {
	if !writerIDRE.MatchString(id) {
		return false, nil
	}
	path := filepath.Join(dir, id)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return true, func() {}
	}
	if err != nil {
		return false, nil
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false, nil
	}
	return true, func() {
		os.Remove(path)
		f.Close()
	}
}

// logSync is how an intent log is opened to write: each write returns
// once its data is on disk, with only what metadata reading it back needs
// (O_DSYNC), in one system call where a write and an fdatasync take two.
const logSync = syscall.O_DSYNC

// datasync has nothing to do where logSync makes each write durable.
func datasync(*os.File) error { return nil }
