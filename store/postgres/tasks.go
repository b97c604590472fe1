package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/internal/sqlrow"
)

// Tasks are rows of the table tasks, one per task id. HoldTask is one
// INSERT … ON CONFLICT DO UPDATE whose update applies only to the row of
// the same holder: PostgreSQL lets one of several racing inserts of an id
// win, and the others find the winner's row.

var _ store.Tasks = (*DB)(nil)

// HoldTask records t for its holder; see store.Tasks.
func (db *DB) HoldTask(ctx context.Context, t store.TaskRecord) (bool, error) {
	if err := t.Check(); err != nil {
		return false, err
	}
	var created any // NULL: now
	if !t.CreatedAt.IsZero() {
		created = store.UTC(t.CreatedAt)
	}
	var inserted bool
	err := db.pool.QueryRow(ctx, `
INSERT INTO tasks (`+sqlrow.TaskColumns+`)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, COALESCE($11::timestamptz, now()), now())
ON CONFLICT (id) DO UPDATE SET host = excluded.host, state_dir = excluded.state_dir, repo = excluded.repo,
	branch = excluded.branch, base = excluded.base, status = excluded.status, tenant = excluded.tenant,
	user_name = excluded.user_name, created_at = COALESCE($11::timestamptz, tasks.created_at),
	updated_at = excluded.updated_at
WHERE tasks.holder = excluded.holder
RETURNING xmax = 0`,
		t.ID, t.Holder, t.Host, t.StateDir, t.Repo, t.Branch, t.Base, t.Status, t.Tenant, t.User, created).Scan(&inserted)
	if errors.Is(err, pgx.ErrNoRows) {
		held, err := db.TaskRecord(ctx, t.ID)
		return false, store.NotHeld(t.ID, held, err)
	}
	if err != nil {
		return false, fmt.Errorf("record task %s: %w", t.ID, err)
	}
	return inserted, nil
}

// DropTask deletes the record of id that holder holds; see store.Tasks.
func (db *DB) DropTask(ctx context.Context, id, holder string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM tasks WHERE id = $1 AND holder = $2`, id, holder)
	if err != nil {
		return fmt.Errorf("drop task %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		held, err := db.TaskRecord(ctx, id)
		return store.NotHeld(id, held, err)
	}
	return nil
}

// TaskRecord returns the record of id; see store.Tasks.
func (db *DB) TaskRecord(ctx context.Context, id string) (store.TaskRecord, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+sqlrow.TaskColumns+` FROM tasks WHERE id = $1`, id)
	if err != nil {
		return store.TaskRecord{}, fmt.Errorf("read task %s: %w", id, err)
	}
	tasks, err := scanTasks(rows)
	if err != nil {
		return store.TaskRecord{}, fmt.Errorf("read task %s: %w", id, err)
	}
	if len(tasks) == 0 {
		return store.TaskRecord{}, fmt.Errorf("task %s: %w", id, store.ErrNotFound)
	}
	return tasks[0], nil
}

// TaskRecords returns every task's record; see store.Tasks.
func (db *DB) TaskRecords(ctx context.Context) ([]store.TaskRecord, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+sqlrow.TaskColumns+` FROM tasks ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("read tasks: %w", err)
	}
	tasks, err := scanTasks(rows)
	if err != nil {
		return nil, fmt.Errorf("read tasks: %w", err)
	}
	return tasks, nil
}

func scanTasks(rows pgx.Rows) ([]store.TaskRecord, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.TaskRecord, error) { return sqlrow.Task(row, utc) })
}
