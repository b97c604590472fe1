// Package sqlrow holds what the SQL backends do alike with the rows of
// their tables: it reads them into store types (records.go, jobs.go) and
// the audit trail's events and chain (audit.go), so that SQLite and PostgreSQL turn
// a row into a record the same way, and tells a missing or a taken row by
// the store's errors. The backends' tables have the same columns; what
// differs is how their drivers hand back a time, which each reader takes
// as a function: time.Time for PostgreSQL, int64 microseconds for SQLite.
// A column that may be NULL is scanned into a pointer, which both drivers
// set to nil for NULL.
//
// Only store/sqlite and store/postgres import it.
package sqlrow

import (
	"errors"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/store"
)

// A Row is a row a driver has read: *sql.Row, *sql.Rows, pgx.Row or
// pgx.CollectableRow.
type Row interface{ Scan(dest ...any) error }

// Rows are the rows of a query, read one at a time: *sql.Rows or pgx.Rows.
type Rows interface {
	Row
	Next() bool
	Err() error
}

// Found wraps err, from reading the one row a statement should find: the
// driver's noRows is store.ErrNotFound, after missing, and any other error
// follows failed. A nil err stays nil.
func Found(err, noRows error, missing, failed string) error {
	if errors.Is(err, noRows) {
		return fmt.Errorf("%s: %w", missing, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", failed, err)
	}
	return nil
}

// Inserted wraps err, from a statement that inserts a row: a unique or
// primary key violation, which unique says err is, is store.ErrConflict,
// after taken, and any other error follows failed. A nil err stays nil.
func Inserted(err error, unique bool, taken, failed string) error {
	if unique {
		return fmt.Errorf("%s: %w", taken, store.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", failed, err)
	}
	return nil
}

// RecoveredDetail is the detail of an intent that RecoverOpen ended.
const RecoveredDetail = "the process that sent the call ended before its outcome was recorded"

// SettleWriters settles, by settle, the rows that each of writers left
// unsettled, but own's (the DB's own writer, which is live), and returns
// how many it settled in all, up to the first error. settle says how many
// rows of a writer it settled: none if the writer is not gone.
func SettleWriters[W comparable](writers []W, own W, settle func(W) (int, error)) (int, error) {
	total := 0
	for _, w := range writers {
		if w == own {
			continue
		}
		n, err := settle(w)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// optional is at(*t), or the zero time for NULL.
func optional[T any](t *T, at func(T) time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return at(*t)
}
