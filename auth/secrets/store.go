// Package secrets keeps credentials (OAuth tokens, client registrations)
// out of every file the host writes in the clear.
//
// [Store] is the small interface the host uses; a real secret manager can be
// plugged in behind it. [FileStore] is the default: one file per secret
// under a directory, named by a hash of the secret's key, sealed with
// AES-256-GCM under a 32-byte key that comes from an environment variable
// (base64) or from a key file that only its owner may read (mode 0600,
// created on first use). Writes are atomic.
//
// Only the host's credential code imports it (auth/oauth today). Values are
// never logged, and errors never contain them.
package secrets

import (
	"context"
	"errors"
)

// Store keeps secret values under string keys. Implementations are safe for
// concurrent use; a Put is atomic (a concurrent Get sees the old value or
// the new one, never a mixture).
type Store interface {
	// Get returns the value stored under key, or an error matching
	// ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
	// Put stores value under key, replacing any previous value.
	Put(ctx context.Context, key string, value []byte) error
	// Delete removes key. Deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
}

// A Locker is a Store that can also serialise work on one key across
// processes: the OAuth client holds it while it refreshes a partition's
// token, so that two processes never spend one rotating refresh token.
// Lock waits until the lock is free or ctx ends; the returned function
// releases it.
type Locker interface {
	Lock(ctx context.Context, key string) (unlock func(), err error)
}

// ErrNotFound is returned (possibly wrapped) by Get for a missing key.
var ErrNotFound = errors.New("secret not found")
