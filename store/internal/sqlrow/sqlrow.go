// Package sqlrow reads the rows of the SQL backends' tables into store
// types, so that SQLite and PostgreSQL turn a row into a record the same
// way. The backends' tables have the same columns; what differs is how
// their drivers hand back a time, which each reader takes as a function:
// time.Time for PostgreSQL, int64 microseconds for SQLite. A column that
// may be NULL is scanned into a pointer, which both drivers set to nil for
// NULL.
//
// Only store/sqlite and store/postgres import it.
package sqlrow

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
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

// optional is at(*t), or the zero time for NULL.
func optional[T any](t *T, at func(T) time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return at(*t)
}

// Approval reads an approval, from the columns id, server, tool, digest,
// summary, target, definition, status, created_at, expires_at, tenant,
// user_name, decided_by, decided_at, note and used_at.
func Approval[T any](row Row, at func(T) time.Time) (store.Approval, error) {
	var (
		ap                store.Approval
		created, expires  T
		decidedAt, usedAt *T
		status            string
	)
	err := row.Scan(&ap.ID, &ap.Server, &ap.Tool, &ap.Digest, &ap.Summary, &ap.Target, &ap.Definition, &status, &created, &expires,
		&ap.Tenant, &ap.User, &ap.DecidedBy, &decidedAt, &ap.Note, &usedAt)
	if err != nil {
		return store.Approval{}, err
	}
	ap.Status = store.ApprovalStatus(status)
	ap.CreatedAt = at(created)
	ap.ExpiresAt = at(expires)
	ap.DecidedAt = optional(decidedAt, at)
	ap.UsedAt = optional(usedAt, at)
	return ap, nil
}

// Rule reads an allow rule, from the columns id, server, tool, definition,
// tenant, user_name, created_at, created_by and approval.
func Rule[T any](row Row, at func(T) time.Time) (store.AllowRule, error) {
	var (
		r       store.AllowRule
		created T
	)
	if err := row.Scan(&r.ID, &r.Server, &r.Tool, &r.Definition, &r.Tenant, &r.User, &created, &r.CreatedBy, &r.Approval); err != nil {
		return store.AllowRule{}, err
	}
	r.CreatedAt = at(created)
	return r, nil
}

// Record reads a journal record, from the columns id, call_id, server,
// tool, remote_tool, args_hash, arguments, snapshot, effect, idempotent,
// tenant, user_name, created_at, outcome, detail, ended_at, resolution,
// note, resolved_by, resolved_at, late_answer and late_answer_at.
func Record[T any](row Row, at func(T) time.Time) (store.Record, error) {
	var (
		r                          store.Record
		args                       string
		created                    T
		outcome, resolved          *string
		endedAt, resolveAt, lateAt *T
	)
	err := row.Scan(&r.ID, &r.CallID, &r.Server, &r.Tool, &r.RemoteTool, &r.ArgsHash, &args, &r.Snapshot, &r.Effect,
		&r.Idempotent, &r.Tenant, &r.User, &created, &outcome, &r.Detail, &endedAt, &resolved, &r.Note,
		&r.ResolvedBy, &resolveAt, &r.LateAnswer, &lateAt)
	if err != nil {
		return store.Record{}, err
	}
	if args != "" {
		r.Arguments = json.RawMessage(args)
	}
	r.CreatedAt = at(created)
	r.Status = store.OutcomeOpen
	if outcome != nil {
		r.Status = store.Outcome(*outcome)
	}
	r.EndedAt = optional(endedAt, at)
	if resolved != nil {
		r.Resolved, r.Resolution = true, store.Resolution(*resolved)
	}
	r.ResolvedAt = optional(resolveAt, at)
	r.LateAnswerAt = optional(lateAt, at)
	return r, nil
}

// Run reads a run's record but its checkpoint, from the columns id,
// status, tenant, user_name, provider, model, task, title, steps,
// tool_calls, input_tokens, output_tokens, snapshot, error, created_at and
// updated_at, then into extra any that follow them.
func Run[T any](row Row, at func(T) time.Time, extra ...any) (store.RunRecord, error) {
	var (
		r                store.RunRecord
		created, updated T
	)
	err := row.Scan(append([]any{&r.ID, &r.Status, &r.Tenant, &r.User, &r.Provider, &r.Model, &r.Task, &r.Title,
		&r.Steps, &r.ToolCalls, &r.InputTokens, &r.OutputTokens, &r.Snapshot, &r.Error, &created, &updated}, extra...)...)
	r.CreatedAt, r.UpdatedAt = at(created), at(updated)
	return r, err
}

// Task reads a task's record, from the columns id, holder, host,
// state_dir, repo, branch, base, status, tenant, user_name, created_at and
// updated_at.
func Task[T any](row Row, at func(T) time.Time) (store.TaskRecord, error) {
	var (
		t                store.TaskRecord
		created, updated T
	)
	err := row.Scan(&t.ID, &t.Holder, &t.Host, &t.StateDir, &t.Repo, &t.Branch, &t.Base, &t.Status,
		&t.Tenant, &t.User, &created, &updated)
	t.CreatedAt, t.UpdatedAt = at(created), at(updated)
	return t, err
}

// Input reads an input request, from the columns ask (the request as
// JSON), status, answer, answered_by, created_at and settled_at.
func Input[T any](row Row, at func(T) time.Time) (store.InputAsk, error) {
	var (
		ask, answer []byte
		status      string
		by          *string
		created     T
		settled     *T
	)
	if err := row.Scan(&ask, &status, &answer, &by, &created, &settled); err != nil {
		return store.InputAsk{}, err
	}
	var a store.InputAsk
	if err := json.Unmarshal(ask, &a); err != nil {
		return store.InputAsk{}, fmt.Errorf("input request: %w", err)
	}
	a.Status, a.CreatedAt, a.SettledAt = store.InputStatus(status), at(created), optional(settled, at)
	if len(answer) > 0 {
		a.Answer = answer
	}
	if by != nil {
		a.AnsweredBy = *by
	}
	return a, nil
}

// Event reads an audit event, from the columns time, event, server, tool,
// snapshot, class, duration_ms and fields.
func Event[T any](row Row, at func(T) time.Time) (store.Event, error) {
	var (
		e      store.Event
		t      T
		fields *string
	)
	if err := row.Scan(&t, &e.Event, &e.Server, &e.Tool, &e.Snapshot, &e.Class, &e.DurationMS, &fields); err != nil {
		return store.Event{}, err
	}
	e.Time = at(t)
	if fields != nil {
		if err := json.Unmarshal([]byte(*fields), &e.Fields); err != nil {
			return store.Event{}, fmt.Errorf("event %s has malformed fields: %w", e.Event, err)
		}
	}
	return e, nil
}

// ChainEntries yields the entries of rows for store.VerifyChain, from the
// columns seq, time, event, server, tool, snapshot, class, duration_ms,
// fields, chain_n, chain_prev and chain_sum, then an error if reading them
// failed. The caller closes rows.
func ChainEntries[T any](rows Rows, at func(T) time.Time) iter.Seq2[store.ChainEntry, error] {
	return func(yield func(store.ChainEntry, error) bool) {
		for rows.Next() {
			var (
				c      store.ChainEntry
				t      T
				fields *string
				n      *int64
				l      store.ChainLink
			)
			if err := rows.Scan(&c.Seq, &t, &c.Event.Event, &c.Event.Server, &c.Event.Tool, &c.Event.Snapshot,
				&c.Event.Class, &c.Event.DurationMS, &fields, &n, &l.Prev, &l.Sum); err != nil {
				yield(c, err)
				return
			}
			c.Event.Time = at(t)
			if fields != nil {
				c.Fields = []byte(*fields)
			}
			if n != nil {
				l.N = *n
				c.Link = &l
			}
			if !yield(c, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(store.ChainEntry{}, err)
		}
	}
}
