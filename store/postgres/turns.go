package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/store"
)

// Turns are rows of the table turn_calls, one per turn: its calls and when
// it expires, by the server's clock. CountTurnCall is one statement: the
// upsert takes the turn's row lock, so concurrent calls of one turn, on
// any replica, count one after another. The same statement drops a few
// expired turns (sweptPerCall), more than a call can create, so that the
// table holds about the live turns only.

var _ store.Turns = (*DB)(nil)

// sweptPerCall is how many expired turns each call drops at most.
const sweptPerCall = 16

// CountTurnCall counts one call in the turn key; see store.Turns.
func (db *DB) CountTurnCall(ctx context.Context, key string, limit int, ttl time.Duration) (int, error) {
	if limit < 1 || ttl < time.Millisecond {
		return 0, fmt.Errorf("turn %s: a limit of %d or a ttl of %s counts no turn", key, limit, ttl)
	}
	var n int
	err := db.pool.QueryRow(ctx, `
WITH swept AS (
	DELETE FROM turn_calls WHERE key IN (
		SELECT key FROM turn_calls WHERE expires_at <= clock_timestamp() AND key <> $1
		LIMIT $4 FOR UPDATE SKIP LOCKED)
)
INSERT INTO turn_calls AS t (key, calls, expires_at)
VALUES ($1, 1, clock_timestamp() + $3::bigint * interval '1 microsecond')
ON CONFLICT (key) DO UPDATE SET
	calls = CASE WHEN t.expires_at <= clock_timestamp() THEN 1 ELSE LEAST(t.calls + 1, $2::integer + 1) END,
	expires_at = EXCLUDED.expires_at
RETURNING calls`, key, limit, ttl.Microseconds(), sweptPerCall).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count a call of turn %s: %w", key, err)
	}
	return n, nil
}
