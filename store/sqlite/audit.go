package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/internal/sqlrow"
)

type audit struct{ db *DB }

var _ store.Audit = audit{}

// Append appends events in one transaction, in order, as sqlrow.Append
// does: one sync for all. The links are computed inside the transaction,
// which holds SQLite's write lock, so that every writer extends the newest
// link.
func (a audit) Append(ctx context.Context, events ...store.Event) error {
	return sqlrow.Append(events, a.db.auditKey, func(key store.ChainKey, rows []store.StoredEvent, now time.Time) error {
		// The trail needs no sync of its own (committer.relaxedTx).
		var appendErr error
		err := a.db.group.relaxedTx(ctx, func(tx *sql.Tx) error {
			appendErr = a.appendIn(ctx, tx, key, rows, now)
			return appendErr
		})
		if err != nil && appendErr == nil {
			return fmt.Errorf("append: cannot write the audit trail: %w", err)
		}
		if err == nil {
			a.db.mark.Set(a.db.keyPath())
		}
		return err
	})
}

// appendIn appends rows, the events of an Append, in tx.
func (a audit) appendIn(ctx context.Context, tx *sql.Tx, key store.ChainKey, rows []store.StoredEvent, now time.Time) error {
	queryRow := func(query string) sqlrow.Row { return a.db.group.queryRow(ctx, tx, query) }
	link, rows, err := sqlrow.Base(key, a.db.mark.Begun(a.db.keyPath()), queryRow, sql.ErrNoRows, rows, now)
	if err != nil {
		return fmt.Errorf("append: cannot read the audit trail's chain: %w", err)
	}
	// The rows go in statements of insertRows rows, then one statement
	// for each row left: a statement costs the driver more than a row.
	args := make([]any, 0, insertRows*eventValues)
	for len(rows) > 0 {
		query, n := insertOne, 1
		if len(rows) >= insertRows {
			query, n = insertMany, insertRows
		}
		args = args[:0]
		for _, r := range rows[:n] {
			link = key.Next(link, r.Event, r.Fields)
			e := r.Event
			fields := sql.NullString{String: string(r.Fields), Valid: r.Fields != nil}
			args = append(args, micros(e.Time), e.Event, e.Server, e.Tool, e.Snapshot, e.Class, e.DurationMS, fields,
				link.N, link.Prev, link.Sum)
		}
		if _, err := a.db.group.exec(ctx, tx, query, args...); err != nil {
			return fmt.Errorf("append %s: cannot write the audit trail: %w", rows[0].Event.Event, err)
		}
		rows = rows[n:]
	}
	h := key.Head(link)
	if _, err := a.db.group.exec(ctx, tx, headQuery, h.N, h.Sum, h.Seal); err != nil {
		return fmt.Errorf("append: cannot write the audit trail: %w", err)
	}
	return nil
}

// headQuery writes the audit trail's head. Append prepares it once, with
// the queries that read the head and the newest link (committer.prepare).
const headQuery = `
INSERT INTO audit_head (id, n, sum, seal) VALUES (1, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET n = excluded.n, sum = excluded.sum, seal = excluded.seal`

// insertRows is how many events one statement of Append inserts, at most.
const insertRows = 32

// eventValues is how many values an event's row holds.
const eventValues = 11

// insertOne and insertMany insert one event and insertRows events. They
// are prepared once, when the DB opens (see committer.prepare).
var (
	insertOne  = insertEvents(1)
	insertMany = insertEvents(insertRows)
)

// insertEvents returns the statement that inserts n events. A row that
// fails ends it without undoing the rows before it (OR FAIL), which spares
// SQLite a statement journal for each statement of many rows; Append rolls
// back its whole transaction on any error anyway.
func insertEvents(n int) string {
	row := "(?" + strings.Repeat(", ?", eventValues-1) + ")"
	return `INSERT OR FAIL INTO events (time, event, server, tool, snapshot, class, duration_ms, fields, chain_n, chain_prev, chain_sum)
VALUES ` + row + strings.Repeat(",\n"+row, n-1)
}

func readHead(ctx context.Context, q querier) (*store.ChainHead, error) {
	return sqlrow.Head(q.QueryRowContext(ctx, sqlrow.HeadQuery), sql.ErrNoRows)
}

func (a audit) Events(ctx context.Context, since time.Time, n int) ([]store.Event, error) {
	rows, err := a.db.r.QueryContext(ctx, `
SELECT `+sqlrow.EventColumns+` FROM events
WHERE time >= ?
ORDER BY time, seq
LIMIT ?`,
		sinceMicros(since), limit(n))
	if err != nil {
		return nil, fmt.Errorf("read the audit trail: %w", err)
	}
	return scanEvents(rows)
}

// Tail reads a page as sqlrow.Tail does. Its positions are seq, which
// Append assigns while it holds the write lock.
func (a audit) Tail(ctx context.Context, since time.Time, after int64, n int) (store.EventPage, error) {
	// A reader that follows the trail asks often for the few events after
	// a recent position: then seq, not the time index, finds them (the
	// unary + keeps SQLite from using the index on time).
	where := `WHERE time >= ? AND seq > ? AND seq <= ?`
	if after > 0 {
		where = `WHERE +time >= ? AND seq > ? AND seq <= ?`
	}
	from := sinceMicros(since)
	newest := func() (seq int64, err error) {
		err = a.db.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM events`).Scan(&seq)
		return seq, err
	}
	events := func(upTo int64) ([]store.Event, error) {
		return queryAll(ctx, a.db.r, scanEvent, sqlrow.NewestEvents(where, "?"), from, after, upTo, limit(n))
	}
	count := func(upTo int64) (all int, err error) {
		err = a.db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM events `+where, from, after, upTo).Scan(&all)
		return all, err
	}
	return sqlrow.Tail(after, n, newest, events, count)
}

// sinceMicros is the lower bound of a query for events at or after since;
// the zero time is no bound.
func sinceMicros(since time.Time) int64 {
	if since.IsZero() {
		return -1 << 63
	}
	return micros(since)
}

// scanEvents reads rows that start with sqlrow.EventColumns, and closes them.
func scanEvents(rows *sql.Rows) ([]store.Event, error) {
	out, err := scanAll(rows, scanEvent)
	if err != nil {
		return nil, fmt.Errorf("read the audit trail: %w", err)
	}
	return out, nil
}

func scanEvent(row scanner) (store.Event, error) { return sqlrow.Event(row, fromMicros) }

// Verify reads the head and the events in one read transaction, which
// sees the trail as one commit left it while writers go on appending.
func (a audit) Verify(ctx context.Context) (store.ChainReport, error) {
	key, err := a.db.auditKey(false)
	if err != nil {
		return store.ChainReport{}, fmt.Errorf("verify the audit trail: %w", err)
	}
	tx, err := a.db.r.BeginTx(ctx, nil)
	if err != nil {
		return store.ChainReport{}, fmt.Errorf("verify the audit trail: %w", err)
	}
	defer tx.Rollback()
	head, err := readHead(ctx, tx)
	if err != nil {
		return store.ChainReport{}, fmt.Errorf("verify the audit trail: %w", err)
	}
	rows, err := tx.QueryContext(ctx, sqlrow.ChainQuery)
	if err != nil {
		return store.ChainReport{}, fmt.Errorf("verify the audit trail: %w", err)
	}
	defer rows.Close()
	return sqlrow.Verify(key, head, a.db.mark.Begun(a.db.keyPath()), rows, fromMicros, "put "+keyFile+" back beside the database")
}
