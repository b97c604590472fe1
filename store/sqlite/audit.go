package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/store"
)

type audit struct{ db *DB }

var _ store.Audit = audit{}

// Append appends events in one transaction, in order: one sync for all.
// Every event is checked and encoded before anything is written.
func (a audit) Append(ctx context.Context, events ...store.Event) error {
	type row struct {
		time   int64
		fields sql.NullString
	}
	if len(events) == 0 {
		return nil
	}
	rows := make([]row, len(events))
	now := time.Now()
	for i, e := range events {
		if err := e.Check(); err != nil {
			return fmt.Errorf("append: %w", err)
		}
		if len(e.Fields) > 0 {
			b, err := json.Marshal(e.Fields)
			if err != nil {
				return fmt.Errorf("append %s: %w", e.Event, err)
			}
			rows[i].fields = sql.NullString{String: string(b), Valid: true}
		}
		t := e.Time
		if t.IsZero() {
			t = now
		}
		rows[i].time = micros(t)
	}
	tx, err := a.db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("append: cannot write the audit trail: %w", err)
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, `
INSERT INTO events (time, event, server, tool, snapshot, class, duration_ms, fields)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("append: cannot write the audit trail: %w", err)
	}
	defer stmt.Close()
	for i, e := range events {
		if _, err := stmt.ExecContext(ctx, rows[i].time, e.Event, e.Server, e.Tool, e.Snapshot, e.Class, e.DurationMS, rows[i].fields); err != nil {
			return fmt.Errorf("append %s: cannot write the audit trail: %w", e.Event, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("append: cannot write the audit trail: %w", err)
	}
	return nil
}

func (a audit) Events(ctx context.Context, since time.Time, n int) ([]store.Event, error) {
	var from int64 = -1 << 63
	if !since.IsZero() {
		from = micros(since)
	}
	rows, err := a.db.r.QueryContext(ctx, `
SELECT time, event, server, tool, snapshot, class, duration_ms, fields FROM events
WHERE time >= ?
ORDER BY time, seq
LIMIT ?`,
		from, limit(n))
	if err != nil {
		return nil, fmt.Errorf("read the audit trail: %w", err)
	}
	defer rows.Close()
	var out []store.Event
	for rows.Next() {
		var (
			e      store.Event
			t      int64
			fields sql.NullString
		)
		if err := rows.Scan(&t, &e.Event, &e.Server, &e.Tool, &e.Snapshot, &e.Class, &e.DurationMS, &fields); err != nil {
			return nil, fmt.Errorf("read the audit trail: %w", err)
		}
		e.Time = fromMicros(t)
		if fields.Valid {
			if err := json.Unmarshal([]byte(fields.String), &e.Fields); err != nil {
				return nil, fmt.Errorf("read the audit trail: event %s has malformed fields: %w", e.Event, err)
			}
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the audit trail: %w", err)
	}
	return out, nil
}
