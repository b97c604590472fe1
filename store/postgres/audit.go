package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/internal/sqlrow"
)

type audit struct{ db *DB }

var _ store.Audit = audit{}

// insertEvent is the statement Append sends once for each event, all of
// them in one batch.
const insertEvent = `
INSERT INTO events (time, event, server, tool, snapshot, class, duration_ms, fields, chain_n, chain_prev, chain_sum)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`

// Append appends events in one transaction, in order, as sqlrow.Append
// does. The transaction takes the audit lock first, so that appends from
// every replica run one at a time: each reads the newest link, links its
// events to it and seals the new head before the next begins, and the
// seqs it takes are greater than those of every append committed before
// it.
func (a audit) Append(ctx context.Context, events ...store.Event) error {
	return sqlrow.Append(events, a.db.auditKey, func(key store.ChainKey, rows []store.StoredEvent, now time.Time) error {
		return a.appendIn(ctx, key, rows, now)
	})
}

// appendIn appends rows, the events of an Append, in a transaction of
// their own.
func (a audit) appendIn(ctx context.Context, key store.ChainKey, rows []store.StoredEvent, now time.Time) error {
	err := pgx.BeginFunc(ctx, a.db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, lockSpace, lockAudit); err != nil {
			return err
		}
		queryRow := func(query string) sqlrow.Row { return tx.QueryRow(ctx, query) }
		link, rows, err := sqlrow.Base(key, a.db.mark.Begun(a.db.keyFile), queryRow, pgx.ErrNoRows, rows, now)
		if err != nil {
			return err
		}
		var b pgx.Batch
		for _, r := range rows {
			link = key.Next(link, r.Event, r.Fields)
			e := r.Event
			var fields *string
			if r.Fields != nil {
				s := string(r.Fields)
				fields = &s
			}
			b.Queue(insertEvent, e.Time, e.Event, e.Server, e.Tool, e.Snapshot, e.Class, e.DurationMS, fields,
				link.N, link.Prev, link.Sum)
		}
		h := key.Head(link)
		b.Queue(`
INSERT INTO audit_head (id, n, sum, seal) VALUES (1, $1, $2, $3)
ON CONFLICT (id) DO UPDATE SET n = excluded.n, sum = excluded.sum, seal = excluded.seal`,
			h.N, h.Sum, h.Seal)
		return tx.SendBatch(ctx, &b).Close()
	})
	if err != nil {
		return fmt.Errorf("append %s: cannot write the audit trail: %w", rows[0].Event.Event, err)
	}
	a.db.mark.Set(a.db.keyFile)
	return nil
}

func readHead(ctx context.Context, q querier) (*store.ChainHead, error) {
	return sqlrow.Head(q.QueryRow(ctx, sqlrow.HeadQuery), pgx.ErrNoRows)
}

// auditKey returns the audit trail's key, read from its file the first
// time. If there is no file, create makes one (mode 0600), and otherwise
// auditKey returns nil.
func (db *DB) auditKey(create bool) (store.ChainKey, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.key != nil {
		return db.key, nil
	}
	if create {
		if err := db.keyWanted(); err != nil {
			return nil, err
		}
	}
	key, err := store.LoadChainKey(db.keyFile, create)
	if err != nil {
		return nil, err
	}
	db.key = key
	return key, nil
}

// keyWanted refuses to make a new key file when the trail in the database
// was chained already: its key is another replica's, which this one must
// be given (a key of its own would break the chain for every replica, for
// good).
func (db *DB) keyWanted() error {
	if _, err := os.Lstat(db.keyFile); !errors.Is(err, fs.ErrNotExist) {
		return nil // there is a key (or LoadChainKey says what is wrong)
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	head, err := readHead(ctx, db.pool)
	if err != nil {
		return fmt.Errorf("cannot read the audit trail's head: %w", err)
	}
	if head != nil {
		return fmt.Errorf("the audit trail in this database was chained with a key this replica does not have: copy the audit key file from another replica to %s (store.audit_key); nothing is appended until then", db.keyFile)
	}
	return nil
}

func (a audit) Events(ctx context.Context, since time.Time, n int) ([]store.Event, error) {
	rows, err := a.db.pool.Query(ctx, `
SELECT `+sqlrow.EventColumns+` FROM events
WHERE time >= $1
ORDER BY time, seq
LIMIT $2`,
		store.UTC(since), limit(n))
	out, err := collect(rows, err, scanEvent)
	if err != nil {
		return nil, fmt.Errorf("read the audit trail: %w", err)
	}
	return out, nil
}

// Tail reads a page as sqlrow.Tail does. Its positions are seq, which
// Append takes while it holds the audit lock.
func (a audit) Tail(ctx context.Context, since time.Time, after int64, n int) (store.EventPage, error) {
	const where = `WHERE time >= $1 AND seq > $2 AND seq <= $3`
	from := store.UTC(since)
	newest := func() (seq int64, err error) {
		err = a.db.pool.QueryRow(ctx, `SELECT COALESCE(max(seq), 0) FROM events`).Scan(&seq)
		return seq, err
	}
	events := func(upTo int64) ([]store.Event, error) {
		rows, err := a.db.pool.Query(ctx, sqlrow.NewestEvents(where, "$4"), from, after, upTo, limit(n))
		return collect(rows, err, scanEvent)
	}
	count := func(upTo int64) (all int, err error) {
		err = a.db.pool.QueryRow(ctx, `SELECT count(*) FROM events `+where, from, after, upTo).Scan(&all)
		return all, err
	}
	return sqlrow.Tail(after, n, newest, events, count)
}

func scanEvent(row pgx.CollectableRow) (store.Event, error) { return sqlrow.Event(row, utc) }

// Verify reads the head and the events in one read-only, repeatable-read
// transaction, which sees the trail as one commit left it while replicas
// go on appending.
func (a audit) Verify(ctx context.Context) (store.ChainReport, error) {
	key, err := a.db.auditKey(false)
	if err != nil {
		return store.ChainReport{}, fmt.Errorf("verify the audit trail: %w", err)
	}
	tx, err := a.db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return store.ChainReport{}, fmt.Errorf("verify the audit trail: %w", err)
	}
	defer tx.Rollback(context.Background())
	head, err := readHead(ctx, tx)
	if err != nil {
		return store.ChainReport{}, fmt.Errorf("verify the audit trail: %w", err)
	}
	rows, err := tx.Query(ctx, sqlrow.ChainQuery)
	if err != nil {
		return store.ChainReport{}, fmt.Errorf("verify the audit trail: %w", err)
	}
	defer rows.Close()
	return sqlrow.Verify(key, head, a.db.mark.Begun(a.db.keyFile), rows, utc, "put the audit key file back (the file every replica is given)")
}
