package sqlrow

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/store"
)

// ApprovalColumns are the columns of an approval that Approval reads, in
// its order, with status, the expression of the approval's status as of
// the time of the query, in place of the column status.
func ApprovalColumns(status string) string {
	return `id, server, tool, digest, summary, target, definition, ` + status + `,
	created_at, expires_at, tenant, user_name, decided_by, decided_at, note, used_at`
}

// Approval reads an approval, from the columns ApprovalColumns names.
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

// CreateApproval records ap, pending, by insert, which is given when it
// was created (store.Approval.Created); unique says whether insert's error
// is a unique key violation, an id that is taken.
func CreateApproval(ap store.Approval, insert func(created time.Time) error, unique func(error) bool) error {
	return insertCreated(ap, insert, unique, "create approval "+ap.ID+": the id is taken", "create approval "+ap.ID+": cannot write the store")
}

// Decide grants or denies, as grant says, the pending approval id by
// update: the conditional UPDATE of a pending request (one not expired,
// to grant it) to status, which says how many rows it changed. If none,
// get reads the request, to say why (store.NotDecided).
func Decide(id string, grant bool, update func(status string) (int64, error), get func() (store.Approval, error)) error {
	status, verb := "denied", "deny"
	if grant {
		status, verb = "granted", "grant"
	}
	n, err := update(status)
	if err != nil {
		return fmt.Errorf("%s approval %s: cannot write the store: %w", verb, id, err)
	}
	if n == 1 {
		return nil
	}
	ap, err := get()
	return store.NotDecided(verb, ap, err)
}

// RuleColumns are the columns of an allow rule that Rule reads, in its
// order.
const RuleColumns = `id, server, tool, definition, tenant, user_name, created_at, created_by, approval`

// Rule reads an allow rule, from the columns RuleColumns names.
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

// RememberRule records r by insert, which is given when it was created
// (store.AllowRule.Created); unique says whether insert's error is a
// unique key violation: an id that is taken, or a rule for the same tool
// and principal.
func RememberRule(r store.AllowRule, insert func(created time.Time) error, unique func(error) bool) error {
	return insertCreated(r, insert, unique, "remember rule "+r.ID+": its id, or a rule for this tool of "+r.Tenant+"/"+r.User+", is taken", "remember rule "+r.ID+": cannot write the store")
}

// A creation is a record whose Created says when a backend records it as
// created, or why it refuses it: store.Approval, store.AllowRule.
type creation interface {
	Created(now time.Time) (time.Time, error)
}

// insertCreated inserts v by insert, given when v was created, or fails
// as v.Created says; the error of insert is as Inserted wraps it.
func insertCreated(v creation, insert func(created time.Time) error, unique func(error) bool, taken, failed string) error {
	created, err := v.Created(time.Now())
	if err != nil {
		return err
	}
	err = insert(created)
	return Inserted(err, unique(err), taken, failed)
}

// RecordColumns are the columns of a journal record that Record reads, in
// its order.
const RecordColumns = `id, call_id, server, tool, remote_tool, args_hash, arguments, snapshot, effect, idempotent,
	tenant, user_name, created_at, outcome, detail, ended_at, resolution, note, resolved_by, resolved_at,
	late_answer, late_answer_at`

// Record reads a journal record, from the columns RecordColumns names.
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

// RunColumns are the columns of a run's record but its checkpoint, which
// only a backend's RunRecord reads, that Run reads, in its order.
const RunColumns = `id, status, tenant, user_name, provider, model, task, title, steps, tool_calls,
	input_tokens, output_tokens, snapshot, error, created_at, updated_at`

// Run reads a run's record but its checkpoint, from the columns RunColumns
// names, then into extra any that follow them.
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

// TaskColumns are the columns of a task's record that Task reads, in its
// order: all of them.
const TaskColumns = `id, holder, host, state_dir, repo, branch, base, status, tenant, user_name, created_at, updated_at`

// Task reads a task's record, from the columns TaskColumns names.
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

// InputColumns are the columns of an input request that Input reads, in
// its order: ask is the request as JSON.
const InputColumns = `ask, status, answer, answered_by, created_at, settled_at`

// Input reads an input request, from the columns InputColumns names.
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

// SettleInput settles the pending input request id by update: the
// conditional UPDATE of a pending request, which says how many rows it
// changed. If none, get reads the request, to say why: it is settled
// already (store.ErrConflict), or missing. verb ("answer" or "withdraw")
// begins the errors.
func SettleInput(verb, id string, update func() (int64, error), get func() (store.InputAsk, error)) error {
	n, err := update()
	if err != nil {
		return fmt.Errorf("%s input request %s: %w", verb, id, err)
	}
	if n == 1 {
		return nil
	}
	a, err := get()
	if err != nil {
		return err
	}
	return fmt.Errorf("%s input request %s: it is %s already: %w", verb, id, a.Status, store.ErrConflict)
}

// SaveRun checks r and saves it by save, which is given the arguments that
// args makes of r; save's error is wrapped here, once.
func SaveRun(r store.RunRecord, args func(store.RunRecord) []any, save func(args []any) error) error {
	if err := r.Check(); err != nil {
		return err
	}
	if err := save(args(r)); err != nil {
		return fmt.Errorf("save run %s: %w", r.ID, err)
	}
	return nil
}

// Resolve records res, a person's resolution of the unknown outcome id, by
// update: the conditional UPDATE of an unresolved record of an unknown
// outcome, which says how many rows it changed. If none, get reads the
// record, to say why (store.NotResolved).
func Resolve(id string, res store.Resolution, update func() (int64, error), get func() (store.Record, error)) error {
	if !res.Valid() {
		return fmt.Errorf("resolve %s: %q is not a resolution (applied or not-applied)", id, res)
	}
	n, err := update()
	if err != nil {
		return fmt.Errorf("resolve %s: cannot write the journal: %w", id, err)
	}
	if n == 1 {
		return nil
	}
	return store.NotResolved(get())
}
