package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/internal/sqlrow"
)

// Runs are rows of the table runs, one per run id. SaveRun is one INSERT …
// ON CONFLICT DO UPDATE: of several racing saves of a new id, in any
// number of processes, PostgreSQL lets one insert and turns the others
// into updates of its row, and the last one's record stands.

var _ store.Runs = (*DB)(nil)

// saveRunQuery inserts or replaces a record: $15 is the checkpoint (NULL
// for none), $16 the creation time (NULL: the row's, or now for a new
// one).
const saveRunQuery = `
INSERT INTO runs (id, status, tenant, user_name, provider, model, task, title, steps, tool_calls,
	input_tokens, output_tokens, snapshot, error, checkpoint, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, COALESCE($16::timestamptz, now()), now())
ON CONFLICT (id) DO UPDATE SET status = excluded.status, tenant = excluded.tenant,
	user_name = excluded.user_name, provider = excluded.provider, model = excluded.model,
	task = excluded.task, title = excluded.title, steps = excluded.steps, tool_calls = excluded.tool_calls,
	input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens,
	snapshot = excluded.snapshot, error = excluded.error, checkpoint = excluded.checkpoint,
	created_at = COALESCE($16::timestamptz, runs.created_at), updated_at = excluded.updated_at`

// SaveRun inserts or replaces the record of r.ID; see store.Runs.
func (db *DB) SaveRun(ctx context.Context, r store.RunRecord) error {
	return sqlrow.SaveRun(r, saveRunArgs, func(args []any) error {
		_, err := db.pool.Exec(ctx, saveRunQuery, args...)
		return err
	})
}

// SaveRunRelaxed is SaveRun in a transaction with synchronous_commit off:
// PostgreSQL acknowledges the commit before its WAL is flushed, and
// flushes it within a few times wal_writer_delay, or with the next
// synchronous commit, whose flush covers every earlier WAL record.
func (db *DB) SaveRunRelaxed(ctx context.Context, r store.RunRecord) error {
	return sqlrow.SaveRun(r, saveRunArgs, func(args []any) error {
		return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, saveRunQuery, args...)
			return err
		})
	})
}

// saveRunArgs are the arguments of saveRunQuery for r.
func saveRunArgs(r store.RunRecord) []any {
	var created any // NULL: the row's, or now
	if !r.CreatedAt.IsZero() {
		created = store.UTC(r.CreatedAt)
	}
	var checkpoint []byte // nil: NULL
	if len(r.Checkpoint) > 0 {
		checkpoint = r.Checkpoint
	}
	return []any{r.ID, string(r.Status), r.Tenant, r.User, r.Provider, r.Model, r.Task, r.Title, r.Steps, r.ToolCalls,
		r.InputTokens, r.OutputTokens, r.Snapshot, r.Error, checkpoint, created}
}

// RunRecord returns the record of id, its checkpoint included; see
// store.Runs.
func (db *DB) RunRecord(ctx context.Context, id string) (store.RunRecord, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+sqlrow.RunColumns+`, checkpoint FROM runs WHERE id = $1`, id)
	r, err := one(rows, err, func(row pgx.CollectableRow) (store.RunRecord, error) {
		var checkpoint []byte
		r, err := scanRun(row, &checkpoint)
		if len(checkpoint) > 0 {
			r.Checkpoint = checkpoint
		}
		return r, err
	})
	if err != nil {
		return store.RunRecord{}, found(err, "run "+id, "read run "+id)
	}
	return r, nil
}

// RunRecords returns the records f selects, newest first, without their
// checkpoints; see store.Runs.
func (db *DB) RunRecords(ctx context.Context, f store.RunFilter) ([]store.RunRecord, error) {
	rows, err := db.pool.Query(ctx, `
SELECT `+sqlrow.RunColumns+` FROM runs
WHERE ($1 = '' OR tenant = $1) AND ($2 = '' OR user_name = $2)
ORDER BY created_at DESC, id DESC
LIMIT $3`,
		f.Tenant, f.User, limit(f.Limit))
	out, err := collect(rows, err, func(row pgx.CollectableRow) (store.RunRecord, error) { return scanRun(row) })
	if err != nil {
		return nil, fmt.Errorf("read runs: %w", err)
	}
	return out, nil
}

// scanRun reads the columns sqlrow.RunColumns names, then into extra any that
// follow them.
func scanRun(row pgx.CollectableRow, extra ...any) (store.RunRecord, error) {
	return sqlrow.Run(row, utc, extra...)
}
