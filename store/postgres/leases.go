package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/store"
)

// Leases are rows of the table leases, one per place taken. Acquire
// serializes the callers of one key with a transaction-level advisory lock
// (lockLeases, and a hash of the key: two keys that share a hash only wait
// for each other), and under it deletes the key's expired rows, counts the
// rest and inserts one if the count is below the limit, in one
// transaction. Expiry is decided by the server's clock (clock_timestamp,
// read after the lock is taken), never the replica's.

var _ store.Leases = (*DB)(nil)

// Acquire takes a place under key for holder, if fewer than limit
// unexpired leases hold it; see store.Leases.
func (db *DB) Acquire(ctx context.Context, key string, limit int, holder string, ttl time.Duration) (store.Lease, error) {
	if limit < 1 || ttl < time.Millisecond {
		return store.Lease{}, fmt.Errorf("lease %s: a limit of %d or a ttl of %s is not a lease", key, limit, ttl)
	}
	l := store.Lease{ID: store.NewID("lse_"), Key: key, Holder: holder}
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, lockLeases, keyHash(key)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM leases WHERE key = $1 AND expires_at <= clock_timestamp()`, key); err != nil {
			return err
		}
		var held int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM leases WHERE key = $1`, key).Scan(&held); err != nil {
			return err
		}
		if held >= limit {
			return store.ErrBusy
		}
		_, err := tx.Exec(ctx, `
INSERT INTO leases (key, id, holder, expires_at)
VALUES ($1, $2, $3, clock_timestamp() + $4::bigint * interval '1 microsecond')`,
			key, l.ID, holder, ttl.Microseconds())
		return err
	})
	if errors.Is(err, store.ErrBusy) {
		return store.Lease{}, fmt.Errorf("lease %s: %d held: %w", key, limit, store.ErrBusy)
	}
	if err != nil {
		return store.Lease{}, fmt.Errorf("lease %s: %w", key, err)
	}
	return l, nil
}

// Release gives l's place back; see store.Leases.
func (db *DB) Release(ctx context.Context, l store.Lease) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM leases WHERE id = $1`, l.ID)
	if err != nil {
		return fmt.Errorf("release lease %s: %w", l.Key, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("release lease %s: %w", l.Key, store.ErrNotFound)
	}
	return nil
}

// Renew extends holder's unexpired leases; see store.Leases. It also
// drops every holder's expired leases, so that a key no one acquires again
// keeps no rows of a replica that died.
func (db *DB) Renew(ctx context.Context, holder string, ttl time.Duration) (int, error) {
	if ttl < time.Millisecond {
		return 0, fmt.Errorf("renew leases: a ttl of %s is not a lease", ttl)
	}
	tag, err := db.pool.Exec(ctx, `
UPDATE leases SET expires_at = clock_timestamp() + $2::bigint * interval '1 microsecond'
WHERE holder = $1 AND expires_at > clock_timestamp()`, holder, ttl.Microseconds())
	if err != nil {
		return 0, fmt.Errorf("renew leases: %w", err)
	}
	if _, err := db.pool.Exec(ctx, `DELETE FROM leases WHERE expires_at <= clock_timestamp()`); err != nil {
		return int(tag.RowsAffected()), fmt.Errorf("drop expired leases: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// keyHash is the second key of a lease key's advisory lock.
func keyHash(key string) int32 {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int32(h.Sum32())
}
