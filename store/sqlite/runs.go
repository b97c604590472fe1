package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/internal/sqlrow"
)

// Runs are rows of the table runs, one per run id. SaveRun is one INSERT …
// ON CONFLICT DO UPDATE, which SQLite runs under its write lock: savers
// of one id in any number of processes take turns, and the last one's
// record stands.

var _ store.Runs = (*DB)(nil)

// saveRunQuery inserts or replaces a record: ?15 is the checkpoint (NULL
// for none), ?16 the creation time (NULL: the row's, or now for a new
// one), ?17 now.
const saveRunQuery = `
INSERT INTO runs (id, status, tenant, user_name, provider, model, task, title, steps, tool_calls,
	input_tokens, output_tokens, snapshot, error, checkpoint, created_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, COALESCE(?16, ?17), ?17)
ON CONFLICT (id) DO UPDATE SET status = excluded.status, tenant = excluded.tenant,
	user_name = excluded.user_name, provider = excluded.provider, model = excluded.model,
	task = excluded.task, title = excluded.title, steps = excluded.steps, tool_calls = excluded.tool_calls,
	input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens,
	snapshot = excluded.snapshot, error = excluded.error, checkpoint = excluded.checkpoint,
	created_at = COALESCE(?16, runs.created_at), updated_at = excluded.updated_at`

// SaveRun inserts or replaces the record of r.ID; see store.Runs.
func (db *DB) SaveRun(ctx context.Context, r store.RunRecord) error {
	return sqlrow.SaveRun(r, saveRunArgs, func(args []any) (err error) {
		if st := db.group.stmts[saveRunQuery]; st != nil {
			_, err = st.ExecContext(ctx, args...)
		} else {
			_, err = db.w.ExecContext(ctx, saveRunQuery, args...)
		}
		return err
	})
}

// SaveRunRelaxed is SaveRun committed as the journal's writes are: to the
// WAL without an fsync (committer.relaxedTx), synced within relaxedSync.
// The next Begin syncs it before it returns (committer.carry), as
// store.Runs promises: a write the agent loop sends carries the checkpoint
// saved before it to the disk.
func (db *DB) SaveRunRelaxed(ctx context.Context, r store.RunRecord) error {
	return sqlrow.SaveRun(r, saveRunArgs, func(args []any) error {
		err := db.group.relaxedTx(ctx, func(tx *sql.Tx) error {
			_, err := db.group.exec(ctx, tx, saveRunQuery, args...)
			return err
		})
		if err == nil {
			db.group.carry()
		}
		return err
	})
}

// saveRunArgs are the arguments of saveRunQuery for r.
func saveRunArgs(r store.RunRecord) []any {
	var created sql.NullInt64
	if !r.CreatedAt.IsZero() {
		created = sql.NullInt64{Int64: micros(store.UTC(r.CreatedAt)), Valid: true}
	}
	checkpoint := sql.NullString{String: string(r.Checkpoint), Valid: len(r.Checkpoint) > 0}
	return []any{r.ID, string(r.Status), r.Tenant, r.User, r.Provider, r.Model, r.Task, r.Title, r.Steps, r.ToolCalls,
		r.InputTokens, r.OutputTokens, r.Snapshot, r.Error, checkpoint, created, micros(now())}
}

// RunRecord returns the record of id, its checkpoint included; see
// store.Runs.
func (db *DB) RunRecord(ctx context.Context, id string) (store.RunRecord, error) {
	var checkpoint []byte
	r, err := scanRun(db.r.QueryRowContext(ctx, `SELECT `+sqlrow.RunColumns+`, checkpoint FROM runs WHERE id = ?`, id), &checkpoint)
	if err != nil {
		return store.RunRecord{}, found(err, "run "+id, "read run "+id)
	}
	if len(checkpoint) > 0 {
		r.Checkpoint = checkpoint
	}
	return r, nil
}

// RunRecords returns the records f selects, newest first, without their
// checkpoints; see store.Runs.
func (db *DB) RunRecords(ctx context.Context, f store.RunFilter) ([]store.RunRecord, error) {
	out, err := queryAll(ctx, db.r, func(row scanner) (store.RunRecord, error) { return scanRun(row) }, `
SELECT `+sqlrow.RunColumns+` FROM runs
WHERE (?1 = '' OR tenant = ?1) AND (?2 = '' OR user_name = ?2)
ORDER BY created_at DESC, id DESC
LIMIT ?3`,
		f.Tenant, f.User, limit(f.Limit))
	if err != nil {
		return nil, fmt.Errorf("read runs: %w", err)
	}
	return out, nil
}

// scanRun reads the columns sqlrow.RunColumns names, then into extra any that
// follow them.
func scanRun(row scanner, extra ...any) (store.RunRecord, error) {
	return sqlrow.Run(row, fromMicros, extra...)
}
