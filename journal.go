package airlock

import (
	"context"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/internal/canonical"
	"github.com/airlockhq/airlock/internal/redact"
	"github.com/airlockhq/airlock/policy"
	"github.com/airlockhq/airlock/store"
)

// ResolveRecovery records what a person found out about a call whose
// outcome was unknown: applied or not-applied, once. The audit trail is
// written as DecideApproval writes it.
func ResolveRecovery(ctx context.Context, st store.Store, id string, r store.Resolution, note, by string) error {
	return withTrail(ctx, st, func(t *auditTrail) error {
		var red *redact.Redactor // the built-in credential formats
		if err := st.Journal().Resolve(ctx, id, r, red.String(note), by); err != nil {
			return fmt.Errorf("recovery record %s: %w", id, err)
		}
		rec, _ := st.Journal().Get(ctx, id)
		t.w.Append(ctx, store.Event{Event: store.EventRecoveryResolved, Server: rec.Server, Tool: rec.Tool,
			Fields: map[string]any{"recovery": id, "resolution": string(r), "by": by}})
		return nil
	})
}

// beginIntent writes the journal's intent for a call that is not a read
// and sets q.intent to its id ("" for a read, which the journal does not
// track). An error means the call must not be sent.
func (h *Host) beginIntent(ctx context.Context, q *request) error {
	q.intent = ""
	d := q.decision
	if d.Effect == policy.Read {
		return nil
	}
	in := store.Intent{ID: store.NewID("rec_"), CallID: q.call.ID, Server: q.tool.Server, Tool: q.tool.Name, RemoteTool: q.tool.Remote,
		ArgsHash: canonical.Hash(q.args), Snapshot: q.snap.ID(), Effect: string(d.Effect), Idempotent: d.Idempotent,
		Tenant: q.snap.who.Tenant, User: q.snap.who.User, CreatedAt: h.gov.now()}
	if err := h.gov.store.Journal().Begin(context.WithoutCancel(ctx), in); err != nil {
		return err
	}
	q.intent = in.ID
	return nil
}

// endIntent records a call's outcome. It runs even when the caller's
// context is cancelled: every intent ends in exactly one outcome.
func (h *Host) endIntent(id string, o store.Outcome, detail string) {
	if id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.gov.store.Journal().End(ctx, id, o, h.gov.redactor.String(detail)); err != nil {
		// The intent stays open; the next start of the host marks it
		// unknown, which is the truth as far as anyone can tell.
		h.log.Error("cannot record a call's outcome", "intent", id, "outcome", o, "error", err)
	}
}

// recoverOpen marks unknown the intents that processes which died left
// open (the store knows which writers are alive): their calls were sent,
// or may have been, and nobody saw an answer.
func (h *Host) recoverOpen(ctx context.Context) {
	n, err := h.gov.store.Journal().RecoverOpen(ctx, h.gov.now())
	if err != nil {
		h.log.Error("cannot recover the journal", "error", err)
		return
	}
	if n > 0 {
		h.log.Warn("calls of a process that died have unknown outcomes: see airlock recovery list", "count", n)
	}
}
