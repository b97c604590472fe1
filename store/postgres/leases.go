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
// for each other), and under it deletes the key's leases that are gone,
// counts the rest and inserts one if the count is below the limit, in one
// transaction.
//
// A lease is gone when it has expired, by the server's clock
// (clock_timestamp, read after the lock is taken), never the replica's; or
// when its holder's process has ended, as PostgreSQL sees it: every DB
// that acquires or renews for a holder holds the holder's lock (a shared
// session-level advisory lock, see session), and a holder whose lock no
// session holds has no process left. Acquire and Renew write a holder's
// leases only while their own session holds its lock (they check pg_locks
// in the same statement), taking it again on a new session if it was
// lost: a lease is never written under a lock that is already gone.
//
// A lease written before the server last started (its expiry less the
// caller's ttl is earlier) waits for its ttl instead: a restart ends the
// sessions of live replicas too, and they take their locks again only at
// their next Acquire or Renew. Replicas share one ttl; a caller with a
// shorter one than a lease's could take it for a later one's. The ttl also
// remains for a replica that is alive to PostgreSQL but no longer renews
// (hung, or its machine gone without closing its connections).

var _ store.Leases = (*DB)(nil)

// errLockLost reports that a session no longer holds a lock it took.
var errLockLost = errors.New("the session holding the lock was lost")

// holderLocks is the advisory locks of lease holders in pg_locks: their
// objid is the holder's hash, as an unsigned 32-bit number.
var holderLocks = fmt.Sprintf(`%s AND objsubid = 2 AND classid::bigint = %d`, advisoryLocks, lockHolders)

// holderLocked is the SQL condition that the session whose backend the
// SQL expression pid names holds the lock of the lease holder that the
// SQL expression holder names.
func holderLocked(holder, pid string) string {
	return fmt.Sprintf(`EXISTS (SELECT 1 %s AND pid = %s AND objid::bigint = hashtext(%s)::bigint & 4294967295)`, holderLocks, pid, holder)
}

// leaseGone is the SQL condition that a row of leases is gone (see above),
// for a caller whose ttl, in microseconds, is $1. The holders whose lock a
// session holds are read from pg_locks once, not once per row.
var leaseGone = `(expires_at <= clock_timestamp()
	OR (expires_at - $1::bigint * interval '1 microsecond' > pg_postmaster_start_time()
		AND hashtext(holder)::bigint & 4294967295 NOT IN (SELECT objid::bigint ` + holderLocks + `)))`

var (
	// $1 ttl, $2 key.
	dropGoneOfKey = `DELETE FROM leases WHERE key = $2 AND ` + leaseGone
	// $1 ttl.
	dropGone = `DELETE FROM leases WHERE ` + leaseGone
	// $1 key, $2 id, $3 holder, $4 ttl, $5 the pid of the session that
	// holds the holder's lock.
	insertLease = `
INSERT INTO leases (key, id, holder, expires_at)
SELECT $1, $2, $3, clock_timestamp() + $4::bigint * interval '1 microsecond'
WHERE ` + holderLocked("$3::text", "$5::integer")
	// $1 holder, $2 ttl, $3 the pid of the session that holds the
	// holder's lock: whether it holds it, and how many leases it renewed.
	renewLeases = `
WITH held AS (SELECT ` + holderLocked("$1::text", "$3::integer") + ` AS ok),
renewed AS (
	UPDATE leases SET expires_at = clock_timestamp() + $2::bigint * interval '1 microsecond'
	WHERE holder = $1 AND expires_at > clock_timestamp() AND (SELECT ok FROM held)
	RETURNING 1)
SELECT (SELECT ok FROM held), (SELECT count(*) FROM renewed)`
)

// Acquire takes a place under key for holder, if fewer than limit leases
// that are not gone hold it; see store.Leases.
func (db *DB) Acquire(ctx context.Context, key string, limit int, holder string, ttl time.Duration) (store.Lease, error) {
	if limit < 1 || ttl < time.Millisecond {
		return store.Lease{}, fmt.Errorf("lease %s: a limit of %d or a ttl of %s is not a lease", key, limit, ttl)
	}
	l := store.Lease{ID: store.NewID("lse_"), Key: key, Holder: holder}
	var stale *session
	for range 2 {
		s, err := db.holderLock(ctx, holder, stale)
		if err != nil {
			return store.Lease{}, fmt.Errorf("lease %s: %w", key, err)
		}
		err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, lockLeases, keyHash(key)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, dropGoneOfKey, ttl.Microseconds(), key); err != nil {
				return err
			}
			var held int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM leases WHERE key = $1`, key).Scan(&held); err != nil {
				return err
			}
			if held >= limit {
				return store.ErrBusy
			}
			tag, err := tx.Exec(ctx, insertLease, key, l.ID, holder, ttl.Microseconds(), int64(s.pid))
			if err == nil && tag.RowsAffected() == 0 {
				return errLockLost
			}
			return err
		})
		switch {
		case errors.Is(err, errLockLost):
			stale = s // take the lock again on a new session, once
			continue
		case errors.Is(err, store.ErrBusy):
			return store.Lease{}, fmt.Errorf("lease %s: %d held: %w", key, limit, store.ErrBusy)
		case err != nil:
			return store.Lease{}, fmt.Errorf("lease %s: %w", key, err)
		}
		return l, nil
	}
	return store.Lease{}, fmt.Errorf("lease %s: lease holder %s: %w", key, holder, errLockLost)
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

// Renew extends holder's leases that are not gone; see store.Leases. A
// holder whose lock this DB's session lost takes it again first, on a new
// session; the leases it held meanwhile may be gone, and stay gone. Renew
// also drops every holder's leases that are gone, so that a key no one
// acquires again keeps no rows of a replica that died.
func (db *DB) Renew(ctx context.Context, holder string, ttl time.Duration) (int, error) {
	if ttl < time.Millisecond {
		return 0, fmt.Errorf("renew leases: a ttl of %s is not a lease", ttl)
	}
	var (
		stale *session
		held  bool
		n     int
	)
	for range 2 {
		s, err := db.holderLock(ctx, holder, stale)
		if err != nil {
			return 0, fmt.Errorf("renew leases: %w", err)
		}
		if err := db.pool.QueryRow(ctx, renewLeases, holder, ttl.Microseconds(), int64(s.pid)).Scan(&held, &n); err != nil {
			return 0, fmt.Errorf("renew leases: %w", err)
		}
		if held {
			break
		}
		stale = s // take the lock again on a new session, once
	}
	if !held {
		return 0, fmt.Errorf("renew leases of holder %s: %w", holder, errLockLost)
	}
	if _, err := db.pool.Exec(ctx, dropGone, ttl.Microseconds()); err != nil {
		return n, fmt.Errorf("drop leases that are gone: %w", err)
	}
	return n, nil
}

// keyHash is the second key of a lease key's advisory lock.
func keyHash(key string) int32 {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int32(h.Sum32())
}
