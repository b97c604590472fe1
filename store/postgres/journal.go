package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/internal/sqlrow"
)

type journal struct{ db *DB }

var (
	_ store.Journal       = journal{}
	_ store.LaterBeginner = journal{}
	_ store.LaterEnder    = journal{}
)

// beginQuery inserts an intent only while its writer's lock is held by the
// writer's session ($15, the backend pid): a session lost since the lock
// was taken inserts nothing, rather than an intent that another replica
// would take for a dead writer's.
var beginQuery = `
INSERT INTO intents (id, call_id, server, tool, remote_tool, args_hash, arguments, snapshot, effect, idempotent,
	tenant, user_name, created_at, writer)
SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::text, $10::boolean,
	$11::text, $12::text, $13::timestamptz, $14::bigint
WHERE ` + writerHeld("$14", "$15")

func (j journal) Begin(ctx context.Context, in store.Intent) error {
	created, err := in.Created(time.Now())
	if err != nil {
		return err
	}
	var stale *session
	for range 2 {
		s, err := j.db.writerLock(ctx, stale)
		if err != nil {
			return fmt.Errorf("begin %s: %w", in.ID, err)
		}
		ended := j.db.flusher.mark()
		tag, err := j.db.pool.Exec(ctx, beginQuery,
			in.ID, in.CallID, in.Server, in.Tool, in.RemoteTool, in.ArgsHash, string(in.Arguments), in.Snapshot, in.Effect, in.Idempotent,
			in.Tenant, in.User, store.UTC(created), s.writer, int64(s.pid))
		if isUnique(err) {
			return fmt.Errorf("begin %s: the id is taken: %w", in.ID, store.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("begin %s: cannot write the journal: %w", in.ID, err)
		}
		if tag.RowsAffected() == 1 {
			// Committed synchronously: the outcomes committed before
			// it are on disk too.
			j.db.flusher.covered(ended)
			return nil
		}
		// The lock's session is gone: take a new lock, once.
		stale = s
	}
	return fmt.Errorf("begin %s: cannot write the journal: the journal's writer lock was lost", in.ID)
}

// BeginLater is Begin: a synchronous commit both makes the intent durable
// and writes its row, so there is nothing to write after it.
func (j journal) BeginLater(ctx context.Context, in store.Intent) error { return j.Begin(ctx, in) }

func (j journal) End(ctx context.Context, id string, outcome store.Outcome, detail string) error {
	if !outcome.Valid() {
		return fmt.Errorf("end %s: %q is not an outcome", id, outcome)
	}
	// An outcome needs no flush of its own (see outcomeFlusher): the
	// row it updates sets synchronous_commit off for this statement's
	// transaction only, which commits right after it, without waiting
	// for the WAL to reach the disk.
	tag, err := j.db.pool.Exec(ctx, `
UPDATE intents SET outcome = $1::text, detail = $2, ended_at = $3,
	arguments = CASE WHEN $1::text = 'unknown' THEN arguments ELSE '' END
WHERE id = $4 AND outcome IS NULL
RETURNING set_config('synchronous_commit', 'off', true)`,
		string(outcome), detail, now(), id)
	if err != nil {
		return fmt.Errorf("end %s: cannot write the journal: %w", id, err)
	}
	if tag.RowsAffected() == 1 {
		j.db.flusher.noteEnded(id)
		return nil
	}
	return store.NotEnded(j.get(ctx, id))
}

func (j journal) EndLater(id string, outcome store.Outcome, detail string, done func(error)) {
	j.db.later.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), laterTimeout)
		defer cancel()
		err := j.End(ctx, id, outcome, detail)
		if done != nil {
			done(err)
		}
	})
}

// laterTimeout bounds the write of an outcome that EndLater took.
const laterTimeout = 30 * time.Second

// RecoverOpen ends the open intents of each writer whose lock it can take,
// holding the lock (for its transaction) while it does: a writer whose
// lock is free has no session left, and a new one never takes its id.
func (j journal) RecoverOpen(ctx context.Context, at time.Time) (int, error) {
	n, err := j.db.settleGone(ctx, "intents", `outcome IS NULL`, func(tx pgx.Tx, w int64) (int, error) {
		tag, err := tx.Exec(ctx, `
UPDATE intents SET outcome = 'unknown', detail = $1, ended_at = $2
WHERE writer = $3 AND outcome IS NULL`,
			sqlrow.RecoveredDetail, store.UTC(at), w)
		if err != nil {
			return 0, fmt.Errorf("cannot write the journal: %w", err)
		}
		return int(tag.RowsAffected()), nil
	})
	if err != nil {
		return n, fmt.Errorf("recover: %w", err)
	}
	return n, nil
}

func scanRecord(row pgx.CollectableRow) (store.Record, error) { return sqlrow.Record(row, utc) }

func (j journal) Records(ctx context.Context, f store.RecordFilter) ([]store.Record, error) {
	j.db.later.Wait()
	which, arg := `($1 OR (outcome = 'unknown' AND resolution IS NULL))`, any(f.All)
	if f.CallID != "" {
		// A call's records are found by the index intents_call, whose
		// condition a generic plan must find in the query to use it.
		which, arg = `call_id = $1 AND call_id <> ''`, f.CallID
	}
	rows, err := j.db.pool.Query(ctx, `
SELECT `+sqlrow.RecordColumns+` FROM intents
WHERE `+which+`
	AND ($2 = '' OR tenant = $2)
	AND ($3 = '' OR user_name = $3)
ORDER BY created_at, seq
LIMIT $4`,
		arg, f.Tenant, f.User, limit(f.Limit))
	out, err := collect(rows, err, scanRecord)
	if err != nil {
		return nil, fmt.Errorf("list records: cannot read the journal: %w", err)
	}
	return out, nil
}

func (j journal) Get(ctx context.Context, id string) (store.Record, error) {
	j.db.later.Wait()
	return j.get(ctx, id)
}

// get is Get without waiting for the outcomes EndLater took: for End,
// which may be one of them.
func (j journal) get(ctx context.Context, id string) (store.Record, error) {
	rows, err := j.db.pool.Query(ctx, `SELECT `+sqlrow.RecordColumns+` FROM intents WHERE id = $1`, id)
	r, err := one(rows, err, scanRecord)
	if err != nil {
		return store.Record{}, found(err, "record "+id, "record "+id+": cannot read the journal")
	}
	return r, nil
}

func (j journal) Resolve(ctx context.Context, id string, res store.Resolution, note, by string) error {
	j.db.later.Wait()
	update := func() (int64, error) {
		tag, err := j.db.pool.Exec(ctx, `
UPDATE intents SET resolution = $1, note = $2, resolved_by = $3, resolved_at = $4
WHERE id = $5 AND outcome = 'unknown' AND resolution IS NULL`,
			string(res), note, by, now(), id)
		return tag.RowsAffected(), err
	}
	return sqlrow.Resolve(id, res, update, func() (store.Record, error) { return j.Get(ctx, id) })
}

func (j journal) LateAnswer(ctx context.Context, id, answer string, at time.Time) error {
	j.db.later.Wait()
	tag, err := j.db.pool.Exec(ctx, `
UPDATE intents SET late_answer = $1, late_answer_at = $2
WHERE id = $3 AND outcome = 'unknown' AND late_answer_at IS NULL`,
		answer, store.UTC(at), id)
	if err != nil {
		return fmt.Errorf("late answer %s: cannot write the journal: %w", id, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	return store.NoLateAnswer(j.Get(ctx, id))
}

// collect reads every row of a query, as scan reads it, nil for none; err
// is the query's.
func collect[T any](rows pgx.Rows, err error, scan pgx.RowToFunc[T]) ([]T, error) {
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, scan)
	if len(out) == 0 {
		out = nil
	}
	return out, err
}

// one reads the only row of a query, or returns pgx.ErrNoRows.
func one[T any](rows pgx.Rows, err error, scan pgx.RowToFunc[T]) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	return pgx.CollectExactlyOneRow(rows, scan)
}
