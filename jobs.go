package airlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/internal/redact"
	"github.com/airlockhq/airlock/store"
)

// Jobs are the tool calls that `airlock serve` runs as MCP tasks (a
// server's tasks: mapping): kept in the store, so that a person may list
// them, look at one, and cancel one, as for approval requests and journal
// records: those of as's principal, or, with AllPrincipals, every
// principal's (written to the audit trail).

// ErrNoJobs reports a store that keeps no jobs.
var ErrNoJobs = errors.New("this store keeps no tasks")

func jobsOf(st store.Store) (store.Jobs, error) {
	js, ok := st.(store.Jobs)
	if !ok {
		return nil, ErrNoJobs
	}
	return js, nil
}

// ListJobs lists the jobs of st that f selects and as may see. Jobs whose
// gateway is gone are settled first (failed, as lost).
func ListJobs(ctx context.Context, st store.Store, f store.JobFilter, as Actor) ([]store.Job, error) {
	js, err := jobsOf(st)
	if err != nil {
		return nil, err
	}
	if _, err := js.RecoverJobs(ctx, time.Now()); err != nil {
		return nil, err
	}
	return listAs(ctx, st, as, "list tasks", store.EventJobOperator, "list",
		func(p Principal) { f.Tenant, f.User, f.Principal = p.Tenant, p.User, true },
		func() ([]store.Job, error) { return js.ListJobs(ctx, f) })
}

// GetJob returns the job id of st, if as may see it. Another principal's
// job is ErrOtherPrincipal.
func GetJob(ctx context.Context, st store.Store, id string, as Actor) (store.Job, error) {
	j, err := jobFor(ctx, st, id, as)
	if err != nil {
		return j, err
	}
	return j, shown(ctx, st, as, store.EventJobOperator, ownedJob(j))
}

// CancelJob cancels the job id of st for as: it settles cancelled, and the
// gateway that runs its call cancels the call within a second (the server
// is told). A job that has settled already is store.ErrConflict.
func CancelJob(ctx context.Context, st store.Store, id, note string, as Actor) error {
	return withTrail(ctx, st, func(t *auditTrail) error {
		j, err := jobFor(ctx, st, id, as)
		if err != nil {
			return err
		}
		if j.Status.Terminal() {
			return fmt.Errorf("task %s is %s already: %w", id, j.Status, store.ErrConflict)
		}
		var red *redact.Redactor // the built-in credential formats
		note = red.String(note)
		msg := "cancelled by " + as.By
		if note != "" {
			msg += ": " + note
		}
		js, _ := jobsOf(st)
		if err := js.UpdateJob(ctx, id, store.JobUpdate{Status: store.JobCancelled, Message: msg}); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return fmt.Errorf("task %s settled meanwhile: %w", id, err)
			}
			return err
		}
		if as.AllPrincipals {
			t.w.Append(ctx, operatorEvent(as, store.EventJobOperator, "cancel", ownedJob(j)))
		}
		t.w.Append(ctx, store.Event{Event: store.EventJobCancelled, Server: j.Server, Tool: j.Tool,
			Fields: principalFields(as.sourced(map[string]any{"task": id, "by": as.By, "note": note}), "", Principal{Tenant: j.Tenant, User: j.User})})
		return nil
	})
}

// jobFor reads a job that as may act on.
func jobFor(ctx context.Context, st store.Store, id string, as Actor) (store.Job, error) {
	js, err := jobsOf(st)
	if err != nil {
		return store.Job{}, err
	}
	j, err := js.Job(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return store.Job{}, fmt.Errorf("task %s: %w (or it expired)", id, err)
		}
		return store.Job{}, err
	}
	if !as.AllPrincipals && (j.Tenant != as.Principal.Tenant || j.User != as.Principal.User) {
		return store.Job{}, fmt.Errorf("task %s: %w than %s/%s", id, ErrOtherPrincipal, as.Principal.Tenant, as.Principal.User)
	}
	return j, nil
}

func ownedJob(j store.Job) owned {
	return owned{"task", j.ID, j.Server, j.Tool, Principal{Tenant: j.Tenant, User: j.User}}
}
