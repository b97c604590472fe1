package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/store"
)

// The mailbox is the table gateway_mail: a row per message, taken by the
// DELETE that collects it.

var _ store.Mailbox = (*DB)(nil)

// Post leaves data under box; see store.Mailbox. It also drops the
// expired messages of every box.
func (db *DB) Post(ctx context.Context, box string, data []byte, ttl time.Duration) error {
	if box == "" || ttl < time.Millisecond {
		return fmt.Errorf("a message without a box or a ttl")
	}
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM gateway_mail WHERE expires_at <= clock_timestamp()`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
INSERT INTO gateway_mail (box, data, expires_at)
VALUES ($1, $2, clock_timestamp() + $3::bigint * interval '1 microsecond')`, box, data, ttl.Microseconds())
		return err
	})
	return inserted(err, "mailbox", "post a message")
}

// Collect takes the message under box; see store.Mailbox.
func (db *DB) Collect(ctx context.Context, box string) ([]byte, error) {
	var data []byte
	err := db.pool.QueryRow(ctx, `DELETE FROM gateway_mail WHERE box = $1 AND expires_at > clock_timestamp() RETURNING data`, box).Scan(&data)
	if err != nil {
		return nil, found(err, "mailbox", "collect a message")
	}
	return data, nil
}
