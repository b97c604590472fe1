//go:build !unix

package sqlite

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Where there is no flock, a writer's lock file is only kept open: an open
// file cannot be removed, so a file that can be removed belongs to a writer
// that has gone.

func lockWriter(dir, id string) (*writerLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, id)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	return &writerLock{id: id, path: path, f: f}, nil
}

func (l *writerLock) release() {
	l.f.Close()
	os.Remove(l.path)
}

func writerGone(dir, id string) (gone bool, done func()) {
	if !writerIDRE.MatchString(id) {
		return false, nil
	}
	err := os.Remove(filepath.Join(dir, id))
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return true, func() {}
	}
	return false, nil
}

// logSync: where there is no O_DSYNC, a log is written plainly and synced
// after each write (datasync).
const logSync = 0

// datasync writes f's data to disk, with its metadata.
func datasync(f *os.File) error { return f.Sync() }
