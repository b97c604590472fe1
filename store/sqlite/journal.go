package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/internal/sqlrow"
)

type journal struct{ db *DB }

// beginQuery and endQuery are the statements of Begin and End, which the
// DB prepares once (committer.prepare); replayQuery is beginQuery for a
// row that may be there already, and endedQuery inserts the row of an
// intent that ended before its row was written (queuedRow), its outcome
// with it.
const (
	intentColumns = `id, call_id, server, tool, remote_tool, args_hash, arguments, snapshot, effect, idempotent,
	tenant, user_name, created_at, writer`
	intentInto  = ` INTO intents (` + intentColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	beginQuery  = `INSERT` + intentInto
	replayQuery = `INSERT OR IGNORE` + intentInto
	endedQuery  = `INSERT INTO intents (` + intentColumns + `, outcome, detail, ended_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	endQuery = `
UPDATE intents SET outcome = ?1, detail = ?2, ended_at = ?3,
	arguments = CASE WHEN ?1 = 'unknown' THEN arguments ELSE '' END
WHERE id = ?4 AND outcome IS NULL`
)

var (
	_ store.Journal       = journal{}
	_ store.LaterBeginner = journal{}
	_ store.LaterEnder    = journal{}
)

// Begin makes the intent durable in the writer's intent log (synced) and
// commits its row to the database (unsynced: see committer) at the same
// time, and returns once both are done: the row, which every read and the
// check of a taken id see, and the log record, which puts the row back
// after a power loss that took it.
func (j journal) Begin(ctx context.Context, in store.Intent) error {
	in, writer, log, err := j.beginning(ctx, in)
	if err != nil {
		return err
	}
	// The row is committed on a goroutine of its own while this one
	// syncs the log: the commit, which is shorter, can afford the wait
	// for a thread to take it up.
	inserted := make(chan error, 1)
	go func() { inserted <- j.db.group.do(j.insertIntent(in, writer)) }()
	carried := j.carry()
	logErr := log.appendIntent(in)
	err = <-inserted
	if logErr == nil {
		log.settle() // its row is committed, or refused
		logErr = carried()
	}
	switch {
	case err != nil && logErr == nil:
		// The record must not put back a row that was refused (or, if
		// the id was taken, stand for the row of another intent).
		// Should the void fail, recovery reads the call as unknown: a
		// call never sent taken for one that may have been, which a
		// person checks, never the other way round.
		log.void(in.ID)
	case err == nil && logErr != nil:
		// The row is in, but not durable: the call is not sent, and
		// its intent says so.
		j.db.group.do(j.rejectIntent(in.ID))
		err = logErr
	}
	if errors.Is(err, store.ErrConflict) {
		return err
	}
	if err != nil {
		return fmt.Errorf("begin %s: cannot write the journal: %w", in.ID, err)
	}
	return nil
}

// BeginLater makes the intent durable in the writer's intent log and
// returns once it is synced; its row is committed after that, within
// rowLinger, or laterLinger of its outcome (queuedRow),
// while the call goes out, ahead of anything this DB writes later, End
// among them. Should the row fail, the log keeps the record and takes no
// more (intentLog.fail): every Begin fails from then on, and recovery puts
// the row back once the writer is gone.
func (j journal) BeginLater(ctx context.Context, in store.Intent) error {
	in, writer, log, err := j.beginning(ctx, in)
	if err != nil {
		return err
	}
	carried := j.carry()
	if err := log.appendIntent(in); err != nil {
		return fmt.Errorf("begin %s: cannot write the journal: %w", in.ID, err)
	}
	row := &queuedRow{in: in, writer: writer}
	written := j.db.later.Add()
	row.write = newLater(j.insertQueued(row), func(err error) {
		switch {
		case errors.Is(err, store.ErrConflict):
			// The id is another intent's: the record must never stand
			// for that intent's row.
			log.fail(fmt.Errorf("the journal could not write intent %s, whose call may have been sent (%w): journaled calls are refused until Airlock restarts, which puts the intent back", in.ID, err))
			j.db.unqueue(in.ID)
			log.settle()
		case err != nil:
			// Refused for now (a full disk, a lock held too long): the
			// record stays open, and the next Begin writes the row
			// first, or is refused while the database refuses it.
			j.db.unqueue(in.ID) // a group that failed as a whole did not take it
			log.rowFailed(in, writer, err)
		default:
			log.settle()
		}
		written()
	}, rowLinger)
	j.db.queue(row)
	j.db.group.queueLater(row.write)
	if err := carried(); err != nil {
		// The intent is durable, the checkpoint before it may not be:
		// the call is not sent, and its intent says so, with its row if
		// that is still queued.
		if queued, _ := j.db.endQueued(in.ID, store.OutcomeRejected, notDurable); !queued {
			written := j.db.later.Add()
			j.db.group.doLater(j.rejectIntent(in.ID), func(error) { written() })
		}
		return fmt.Errorf("begin %s: cannot write the journal: %w", in.ID, err)
	}
	return nil
}

// beginning checks an intent for Begin, sets its time, and returns it with
// the writer that begins it and the writer's log.
func (j journal) beginning(ctx context.Context, in store.Intent) (store.Intent, string, *intentLog, error) {
	created, err := in.Created(time.Now())
	if err != nil {
		return in, "", nil, err
	}
	in.CreatedAt = created
	writer, log, err := j.db.intentLog()
	if err != nil {
		return in, "", nil, fmt.Errorf("begin %s: %w", in.ID, err)
	}
	if err := log.putBackRows(j.putBackRows); err != nil {
		return in, "", nil, fmt.Errorf("begin %s: cannot write the journal: %w", in.ID, err)
	}
	if err := ctx.Err(); err != nil {
		return in, "", nil, fmt.Errorf("begin %s: cannot write the journal: %w", in.ID, err)
	}
	return in, writer, log, nil
}

// carry syncs, beside the intent log, a checkpoint saved relaxed before
// this intent, so that it reaches the disk before the intent's call is
// sent (store.Runs); wait returns the sync's error, nil when none was due.
func (j journal) carry() (wait func() error) {
	if !j.db.group.carrying() {
		return func() error { return nil }
	}
	carried := make(chan error, 1)
	go func() { carried <- j.db.group.cover() }()
	return func() error { return <-carried }
}

// insertIntent is the committer's write of in's row, begun by writer.
func (j journal) insertIntent(in store.Intent, writer string) func(ctx context.Context, tx *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := j.db.group.exec(ctx, tx, beginQuery, intentRow(in, writer)...)
		if isUnique(err) {
			return refusal{fmt.Errorf("begin %s: the id is taken: %w", in.ID, store.ErrConflict)}
		}
		return err
	}
}

// A queuedRow is the row of an intent that BeginLater made durable and no
// commit has written yet: an outcome that comes meanwhile (End, EndLater)
// is written with it, one INSERT where there would be an INSERT and an
// UPDATE, without a write of its own.
type queuedRow struct {
	in      store.Intent
	writer  string
	write   *pending      // the row's write, queued to wait up to rowLinger
	outcome store.Outcome // "" while it has none
	detail  string
	endedAt time.Time
}

// queue notes row as queued.
func (db *DB) queue(row *queuedRow) {
	db.rowsMu.Lock()
	db.rows[row.in.ID] = row
	db.rowsMu.Unlock()
}

// unqueue forgets the queued row of intent id, if it is still queued.
func (db *DB) unqueue(id string) {
	db.rowsMu.Lock()
	delete(db.rows, id)
	db.rowsMu.Unlock()
}

// endQueued ends the intent id if its row is still queued, and says
// whether it was: nil if this ended it, ErrConflict if it had ended.
func (db *DB) endQueued(id string, outcome store.Outcome, detail string) (queued bool, err error) {
	db.rowsMu.Lock()
	defer db.rowsMu.Unlock()
	row := db.rows[id]
	if row == nil {
		return false, nil
	}
	if row.outcome != "" {
		return true, fmt.Errorf("end %s: it ended %s already: %w", id, row.outcome, store.ErrConflict)
	}
	row.outcome, row.detail, row.endedAt = outcome, detail, now()
	row.write.soon() // an outcome waits laterLinger at most
	return true, nil
}

// insertQueued is the committer's write of a queued row, which it takes
// from the queue: an outcome that comes after it is an UPDATE of its own.
func (j journal) insertQueued(row *queuedRow) func(ctx context.Context, tx *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		j.db.rowsMu.Lock()
		delete(j.db.rows, row.in.ID)
		in, outcome, detail, endedAt := row.in, row.outcome, row.detail, row.endedAt
		j.db.rowsMu.Unlock()
		// A group that fails after this is not tried again: the row's
		// failure stops the log, which keeps its record.
		if outcome == "" {
			return j.insertIntent(in, row.writer)(ctx, tx)
		}
		if outcome != store.OutcomeUnknown {
			in.Arguments = nil // as End drops them
		}
		_, err := j.db.group.exec(ctx, tx, endedQuery, append(intentRow(in, row.writer), string(outcome), detail, micros(endedAt))...)
		return err
	}
}

// notDurable is the detail of an intent whose call was not sent because
// the journal could not make it durable.
const notDurable = "the journal could not make the intent durable"

// rejectIntent is the committer's write that ends an intent whose call
// was not sent, because the intent could not be made durable.
func (j journal) rejectIntent(id string) func(ctx context.Context, tx *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := j.db.group.exec(ctx, tx, endQuery, string(store.OutcomeRejected), notDurable, micros(now()), id)
		return err
	}
}

// intentRow is what beginQuery inserts for in, begun by writer.
func intentRow(in store.Intent, writer string) []any {
	return []any{in.ID, in.CallID, in.Server, in.Tool, in.RemoteTool, in.ArgsHash, string(in.Arguments), in.Snapshot, in.Effect, in.Idempotent,
		in.Tenant, in.User, micros(in.CreatedAt), writer}
}

func (j journal) End(ctx context.Context, id string, outcome store.Outcome, detail string) error {
	if !outcome.Valid() {
		return fmt.Errorf("end %s: %q is not an outcome", id, outcome)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("end %s: cannot write the journal: %w", id, err)
	}
	if queued, err := j.db.endQueued(id, outcome, detail); queued {
		if err == nil {
			j.db.awaitLater() // written, with its row, before End returns
		}
		return err
	}
	var ended int64
	err := j.db.group.do(j.endIntent(id, outcome, detail, &ended))
	return j.ended(ctx, id, ended, err)
}

// EndLater queues the outcome behind what this DB wrote before, the
// intent's row among them (doLater): it is committed with the next group,
// within laterLinger.
func (j journal) EndLater(id string, outcome store.Outcome, detail string, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	if !outcome.Valid() {
		done(fmt.Errorf("end %s: %q is not an outcome", id, outcome))
		return
	}
	if queued, err := j.db.endQueued(id, outcome, detail); queued {
		done(err)
		return
	}
	var ended int64
	written := j.db.later.Add()
	j.db.group.doLater(j.endIntent(id, outcome, detail, &ended), func(err error) {
		if err == nil && ended == 1 {
			done(nil)
			written()
			return
		}
		// Why it did not end the intent takes a read, which is not the
		// committer's to wait for.
		go func() {
			defer written()
			ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
			defer cancel()
			done(j.ended(ctx, id, ended, err))
		}()
	})
}

// endIntent is the committer's write of an intent's outcome; ended is set
// to the rows it changed.
func (j journal) endIntent(id string, outcome store.Outcome, detail string, ended *int64) func(ctx context.Context, tx *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		res, err := j.db.group.exec(ctx, tx, endQuery, string(outcome), detail, micros(now()), id)
		if err == nil {
			*ended, err = res.RowsAffected()
		}
		return err
	}
}

// ended is End's answer once its write is done: nil if it ended the
// intent, else why not.
func (j journal) ended(ctx context.Context, id string, ended int64, err error) error {
	if err != nil {
		return fmt.Errorf("end %s: cannot write the journal: %w", id, err)
	}
	if ended == 1 {
		return nil
	}
	return store.NotEnded(j.get(ctx, id))
}

func (j journal) RecoverOpen(ctx context.Context, at time.Time) (int, error) {
	if err := j.replayLogs(ctx); err != nil {
		return 0, fmt.Errorf("recover: %w", err)
	}
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

// replayLogs puts back, from the intent log of each writer that is gone,
// the rows of its intents that the database does not have (a power loss
// took them before the WAL was synced), open, as the writer left them;
// RecoverOpen then ends them unknown. The rows are committed and synced
// before the log is removed. A row the database has is left as it is.
func (j journal) replayLogs(ctx context.Context) error {
	ents, err := os.ReadDir(j.db.writersDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot read the intent logs: %w", err)
	}
	own := j.db.ownWriter()
	for _, e := range ents {
		m := logFileRE.FindStringSubmatch(e.Name())
		if m == nil || m[1] == own {
			continue
		}
		writer, path := m[1], filepath.Join(j.db.writersDir(), e.Name())
		_, err := j.db.whileGone(writer, func() error {
			intents, err := readLog(path)
			if errors.Is(err, fs.ErrNotExist) {
				return nil // replayed by another process meanwhile
			}
			if err != nil {
				return err
			}
			if err := j.putBack(ctx, writer, intents); err != nil {
				return err
			}
			return os.Remove(path)
		})
		if err != nil {
			return fmt.Errorf("cannot replay the intent log of writer %s: %w", writer, err)
		}
	}
	return nil
}

// putBackRows inserts, open, the rows of intents this DB began whose rows
// the database refused (intentLog.rowFailed), in one commit; a row the
// database has is left as it is.
func (j journal) putBackRows(rows []unwrittenRow) error {
	return j.db.group.do(func(ctx context.Context, tx *sql.Tx) error {
		for _, r := range rows {
			if _, err := j.db.group.exec(ctx, tx, replayQuery, intentRow(r.in, r.writer)...); err != nil {
				return err
			}
		}
		return nil
	})
}

// putBack inserts the rows of intents that the database does not have, in
// one synced transaction.
func (j journal) putBack(ctx context.Context, writer string, intents []store.Intent) error {
	if len(intents) == 0 {
		return nil
	}
	tx, err := j.db.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, in := range intents {
		if _, err := tx.ExecContext(ctx, replayQuery, intentRow(in, writer)...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func scanRecord(row scanner) (store.Record, error) { return sqlrow.Record(row, fromMicros) }

func (j journal) Records(ctx context.Context, f store.RecordFilter) ([]store.Record, error) {
	j.db.awaitLater()
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
	j.db.awaitLater()
	return j.get(ctx, id)
}

// get is Get without waiting for the outcomes EndLater took: for End,
// which may be one of them.
func (j journal) get(ctx context.Context, id string) (store.Record, error) {
	r, err := scanRecord(j.db.r.QueryRowContext(ctx, `SELECT `+sqlrow.RecordColumns+` FROM intents WHERE id = ?`, id))
	if err != nil {
		return store.Record{}, found(err, "record "+id, "record "+id+": cannot read the journal")
	}
	return r, nil
}

func (j journal) Resolve(ctx context.Context, id string, res store.Resolution, note, by string) error {
	j.db.awaitLater()
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
	j.db.awaitLater()
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
