package postgres

import (
	"context"
	"errors"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
)

// A Vault keeps sealed secrets (the hosts' OAuth tokens and client
// registrations) in the database, for every replica: a user who logs in
// through one replica is logged in on all, and a rotating refresh token is
// spent by one replica at a time (Lock). It holds only what
// auth/secrets.SealedStore gives it: names that are hashes of the secrets'
// keys, and values sealed with a key that is not in the database.
type Vault struct{ db *DB }

// Vault returns the database's vault.
func (db *DB) Vault() Vault { return Vault{db: db} }

// Load returns the sealed value stored under name; found is false if
// there is none.
func (v Vault) Load(ctx context.Context, name string) ([]byte, bool, error) {
	var sealed []byte
	err := v.db.pool.QueryRow(ctx, `SELECT value FROM secrets WHERE name = $1`, name).Scan(&sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return sealed, true, nil
}

// Save stores sealed under name, replacing any previous value.
func (v Vault) Save(ctx context.Context, name string, sealed []byte) error {
	_, err := v.db.pool.Exec(ctx, `
INSERT INTO secrets (name, value, updated_at) VALUES ($1, $2, now())
ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`, name, sealed)
	return err
}

// Remove deletes name; a missing name is not an error.
func (v Vault) Remove(ctx context.Context, name string) error {
	_, err := v.db.pool.Exec(ctx, `DELETE FROM secrets WHERE name = $1`, name)
	return err
}

// Lock takes a session-level advisory lock named name on a connection of
// its own, which it holds until unlock: PostgreSQL drops it if this
// process dies or loses the connection. It waits until the lock is free or
// ctx ends.
func (v Vault) Lock(ctx context.Context, name string) (func(), error) {
	c, err := v.db.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	key := lockKey(name)
	if _, err := c.Exec(ctx, `SELECT pg_advisory_lock($1, $2)`, lockSecrets, key); err != nil {
		// A wait cut short may leave the connection in any state: it
		// goes, and any lock with it.
		c.Hijack().Close(context.Background())
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), lockReleaseTimeout)
		defer cancel()
		var released bool
		if err := c.QueryRow(ctx, `SELECT pg_advisory_unlock($1, $2)`, lockSecrets, key).Scan(&released); err != nil || !released {
			c.Hijack().Close(context.Background()) // the lock goes with the session
			return
		}
		c.Release()
	}, nil
}

// lockKey is the second key of name's lock: a 32-bit hash (two names that
// share one only wait for each other).
func lockKey(name string) int32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int32(h.Sum32())
}
