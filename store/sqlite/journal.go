package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/internal/sqlrow"
)

type journal struct{ db *DB }

// beginQuery and endQuery are the statements of Begin and End, which the
// DB prepares once (committer.prepare).
const (
	beginQuery = `
INSERT INTO intents (id, call_id, server, tool, remote_tool, args_hash, arguments, snapshot, effect, idempotent,
	tenant, user_name, created_at, writer)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	endQuery = `
UPDATE intents SET outcome = ?1, detail = ?2, ended_at = ?3,
	arguments = CASE WHEN ?1 = 'unknown' THEN arguments ELSE '' END
WHERE id = ?4 AND outcome IS NULL`
)

var _ store.Journal = journal{}

func (j journal) Begin(ctx context.Context, in store.Intent) error {
	created, err := in.Created(time.Now())
	if err != nil {
		return err
	}
	writer, err := j.db.writerID()
	if err != nil {
		return fmt.Errorf("begin %s: %w", in.ID, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("begin %s: cannot write the journal: %w", in.ID, err)
	}
	err = j.db.group.do(func(ctx context.Context, tx *sql.Tx) error {
		_, err := j.db.group.exec(ctx, tx, beginQuery,
			in.ID, in.CallID, in.Server, in.Tool, in.RemoteTool, in.ArgsHash, string(in.Arguments), in.Snapshot, in.Effect, in.Idempotent,
			in.Tenant, in.User, micros(created), writer)
		if isUnique(err) {
			return refusal{fmt.Errorf("begin %s: the id is taken: %w", in.ID, store.ErrConflict)}
		}
		return err
	})
	if errors.Is(err, store.ErrConflict) {
		return err
	}
	if err != nil {
		return fmt.Errorf("begin %s: cannot write the journal: %w", in.ID, err)
	}
	return nil
}

func (j journal) End(ctx context.Context, id string, outcome store.Outcome, detail string) error {
	if !outcome.Valid() {
		return fmt.Errorf("end %s: %q is not an outcome", id, outcome)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("end %s: cannot write the journal: %w", id, err)
	}
	var ended int64
	// An outcome needs no sync of its own: see committer.
	err := j.db.group.doRelaxed(func(ctx context.Context, tx *sql.Tx) error {
		res, err := j.db.group.exec(ctx, tx, endQuery,
			string(outcome), detail, micros(now()), id)
		if err == nil {
			ended, err = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("end %s: cannot write the journal: %w", id, err)
	}
	if ended == 1 {
		return nil
	}
	return store.NotEnded(j.Get(ctx, id))
}

func (j journal) RecoverOpen(ctx context.Context, at time.Time) (int, error) {
	n, err := j.db.settleGone(ctx, "intents", `outcome IS NULL`, func(w string) (int, error) {
		res, err := j.db.w.ExecContext(ctx, `
UPDATE intents SET outcome = 'unknown', detail = ?, ended_at = ?
WHERE writer = ? AND outcome IS NULL`,
			sqlrow.RecoveredDetail, micros(store.UTC(at)), w)
		if err != nil {
			return 0, fmt.Errorf("cannot write the journal: %w", err)
		}
		n, _ := res.RowsAffected()
		return int(n), nil
	})
	if err != nil {
		return n, fmt.Errorf("recover: %w", err)
	}
	j.db.sweepWriters(j.db.ownWriter())
	return n, nil
}

func scanRecord(row scanner) (store.Record, error) { return sqlrow.Record(row, fromMicros) }

func (j journal) Records(ctx context.Context, f store.RecordFilter) ([]store.Record, error) {
	which, arg := `(? OR (outcome = 'unknown' AND resolution IS NULL))`, any(f.All)
	if f.CallID != "" {
		// A call's records are found by the index intents_call, whose
		// condition SQLite must find in the query to use it.
		which, arg = `call_id = ? AND call_id <> ''`, f.CallID
	}
	out, err := queryAll(ctx, j.db.r, scanRecord, `
SELECT `+sqlrow.RecordColumns+` FROM intents
WHERE `+which+`
	AND (? = '' OR tenant = ?)
	AND (? = '' OR user_name = ?)
ORDER BY created_at, seq
LIMIT ?`,
		arg, f.Tenant, f.Tenant, f.User, f.User, limit(f.Limit))
	if err != nil {
		return nil, fmt.Errorf("list records: cannot read the journal: %w", err)
	}
	return out, nil
}

func (j journal) Get(ctx context.Context, id string) (store.Record, error) {
	r, err := scanRecord(j.db.r.QueryRowContext(ctx, `SELECT `+sqlrow.RecordColumns+` FROM intents WHERE id = ?`, id))
	if err != nil {
		return store.Record{}, found(err, "record "+id, "record "+id+": cannot read the journal")
	}
	return r, nil
}

func (j journal) Resolve(ctx context.Context, id string, res store.Resolution, note, by string) error {
	update := func() (int64, error) {
		out, err := j.db.w.ExecContext(ctx, `
UPDATE intents SET resolution = ?, note = ?, resolved_by = ?, resolved_at = ?
WHERE id = ? AND outcome = 'unknown' AND resolution IS NULL`,
			string(res), note, by, micros(now()), id)
		if err != nil {
			return 0, err
		}
		return out.RowsAffected()
	}
	return sqlrow.Resolve(id, res, update, func() (store.Record, error) { return j.Get(ctx, id) })
}

func (j journal) LateAnswer(ctx context.Context, id, answer string, at time.Time) error {
	out, err := j.db.w.ExecContext(ctx, `
UPDATE intents SET late_answer = ?, late_answer_at = ?
WHERE id = ? AND outcome = 'unknown' AND late_answer_at IS NULL`,
		answer, micros(at), id)
	if err != nil {
		return fmt.Errorf("late answer %s: cannot write the journal: %w", id, err)
	}
	if n, _ := out.RowsAffected(); n == 1 {
		return nil
	}
	return store.NoLateAnswer(j.Get(ctx, id))
}
