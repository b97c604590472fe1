//go:build unix

package secrets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

var _ Locker = (*FileStore)(nil)

// Lock takes an exclusive lock named key that holds across processes: an
// advisory lock (flock) on a file under the store's directory, named by a
// hash like the secrets. It waits until the lock is free or ctx ends. The
// kernel drops the lock of a process that dies, so a crash never leaves a
// partition locked.
func (s *FileStore) Lock(ctx context.Context, key string) (func(), error) {
	dir := filepath.Join(s.dir, "locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the lock directory: %w", pathless(err))
	}
	f, err := os.OpenFile(filepath.Join(dir, s.fileName(key)), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open a lock: %w", pathless(err))
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("take a lock: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
