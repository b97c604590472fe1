package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/store"
)

var _ store.Announcer = (*DB)(nil)

// Announce sends payload on topic with NOTIFY: every replica's Watch of
// topic hears it once the sending transaction commits.
func (db *DB) Announce(ctx context.Context, topic, payload string) error {
	_, err := db.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, channel(topic), payload)
	return err
}

// Watch LISTENs to topic on a connection of its own and calls heard for
// each notification, until ctx ends. A connection that breaks is made
// again (after 1 s, doubling to 30 s while it keeps failing), and missed
// is called once it is back: what was sent meanwhile is lost.
func (db *DB) Watch(ctx context.Context, topic string, heard func(payload string), missed func()) {
	wait := time.Second
	for first := true; ctx.Err() == nil; first = false {
		conn, err := pgx.ConnectConfig(ctx, db.conn.Copy())
		if err == nil {
			if _, err = conn.Exec(ctx, `LISTEN `+pgx.Identifier{channel(topic)}.Sanitize()); err == nil {
				wait = time.Second
				if !first {
					missed()
				}
				for {
					n, werr := conn.WaitForNotification(ctx)
					if werr != nil {
						break
					}
					heard(n.Payload)
				}
			}
			conn.Close(context.Background())
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// channel is the NOTIFY channel of topic, in a namespace of Airlock's own.
func channel(topic string) string { return "airlock_" + topic }
