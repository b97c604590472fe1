package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/store"
)

// Sessions are rows of the table gateway_sessions, keyed by a hash of the
// session id: whoever reads the database cannot take a session with what
// it finds there. Whether a session is seen recently enough is decided by
// the server's clock.

var _ store.Sessions = (*DB)(nil)

// OpenSession records s; see store.Sessions. It also drops the sessions
// not seen for idle, so that the table holds the live ones only.
func (db *DB) OpenSession(ctx context.Context, s store.Session, idle time.Duration) error {
	if s.ID == "" || len(s.State) == 0 {
		return fmt.Errorf("a session without an id or a state")
	}
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if idle > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM gateway_sessions WHERE seen_at <= clock_timestamp() - $1::bigint * interval '1 microsecond'`,
				idle.Microseconds()); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO gateway_sessions (id, owner, state, seen_at) VALUES ($1, $2, $3, clock_timestamp())`,
			sessionKey(s.ID), s.Owner, string(s.State))
		return err
	})
	return inserted(err, "session", "record the session")
}

// Session returns the session id; see store.Sessions.
func (db *DB) Session(ctx context.Context, id string, idle time.Duration) (store.Session, error) {
	s := store.Session{ID: id}
	var state string
	err := db.pool.QueryRow(ctx, `
SELECT owner, state, seen_at FROM gateway_sessions
WHERE id = $1 AND ($2::bigint <= 0 OR seen_at > clock_timestamp() - $2::bigint * interval '1 microsecond')`,
		sessionKey(id), idle.Microseconds()).Scan(&s.Owner, &state, &s.SeenAt)
	if err != nil {
		return store.Session{}, found(err, "session", "read the session")
	}
	s.State, s.SeenAt = []byte(state), s.SeenAt.UTC()
	return s, nil
}

// TouchSession records that the session id was seen; see store.Sessions.
func (db *DB) TouchSession(ctx context.Context, id string, state []byte, idle time.Duration) error {
	var st *string
	if len(state) > 0 {
		v := string(state)
		st = &v
	}
	tag, err := db.pool.Exec(ctx, `
UPDATE gateway_sessions SET seen_at = clock_timestamp(), state = coalesce($3::jsonb, state)
WHERE id = $1 AND ($2::bigint <= 0 OR seen_at > clock_timestamp() - $2::bigint * interval '1 microsecond')`,
		sessionKey(id), idle.Microseconds(), st)
	if err != nil {
		return fmt.Errorf("record the session: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("session: %w", store.ErrNotFound)
	}
	return nil
}

// EndSession ends the session id; see store.Sessions.
func (db *DB) EndSession(ctx context.Context, id string) error {
	if _, err := db.pool.Exec(ctx, `DELETE FROM gateway_sessions WHERE id = $1`, sessionKey(id)); err != nil {
		return fmt.Errorf("end the session: %w", err)
	}
	return nil
}

// sessionKey is the row key of a session id.
func sessionKey(id string) string {
	sum := sha256.Sum256([]byte("airlock session\x00" + id))
	return hex.EncodeToString(sum[:])
}
