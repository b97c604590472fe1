package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/internal/sqlrow"
)

// Tasks are rows of the table tasks, one per task id. HoldTask reads the
// id's row and inserts or replaces it in one transaction, which holds
// SQLite's write lock from its start (BEGIN IMMEDIATE): racing callers in
// any number of processes take turns.

var _ store.Tasks = (*DB)(nil)

// HoldTask records t for its holder; see store.Tasks.
func (db *DB) HoldTask(ctx context.Context, t store.TaskRecord) (bool, error) {
	if err := t.Check(); err != nil {
		return false, err
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("record task %s: %w", t.ID, err)
	}
	defer tx.Rollback()
	held, err := taskRecord(ctx, tx, t.ID)
	inserted := errors.Is(err, store.ErrNotFound)
	switch {
	case inserted:
	case err != nil:
		return false, err
	case held.Holder != t.Holder:
		return false, store.NotHeld(t.ID, held, nil)
	}
	now := store.UTC(time.Now())
	created := t.CreatedAt
	if created.IsZero() {
		created = now
		if !inserted {
			created = held.CreatedAt
		}
	}
	_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO tasks (`+sqlrow.TaskColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		t.ID, t.Holder, t.Host, t.StateDir, t.Repo, t.Branch, t.Base, t.Status, t.Tenant, t.User, micros(created), micros(now))
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		return false, fmt.Errorf("record task %s: %w", t.ID, err)
	}
	return inserted, nil
}

// DropTask deletes the record of id that holder holds; see store.Tasks.
func (db *DB) DropTask(ctx context.Context, id, holder string) error {
	res, err := db.w.ExecContext(ctx, `DELETE FROM tasks WHERE id = ? AND holder = ?`, id, holder)
	if err != nil {
		return fmt.Errorf("drop task %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		held, err := db.TaskRecord(ctx, id)
		return store.NotHeld(id, held, err)
	}
	return nil
}

// TaskRecord returns the record of id; see store.Tasks.
func (db *DB) TaskRecord(ctx context.Context, id string) (store.TaskRecord, error) {
	return taskRecord(ctx, db.r, id)
}

// TaskRecords returns every task's record; see store.Tasks.
func (db *DB) TaskRecords(ctx context.Context) ([]store.TaskRecord, error) {
	out, err := queryAll(ctx, db.r, scanTask, `SELECT `+sqlrow.TaskColumns+` FROM tasks ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("read tasks: %w", err)
	}
	return out, nil
}

func taskRecord(ctx context.Context, q querier, id string) (store.TaskRecord, error) {
	t, err := scanTask(q.QueryRowContext(ctx, `SELECT `+sqlrow.TaskColumns+` FROM tasks WHERE id = ?`, id))
	if err != nil {
		return store.TaskRecord{}, found(err, "task "+id, "read task "+id)
	}
	return t, nil
}

func scanTask(row scanner) (store.TaskRecord, error) { return sqlrow.Task(row, fromMicros) }
