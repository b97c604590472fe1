package airlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/redact"
	"github.com/airlockhq/airlock/policy"
	"github.com/airlockhq/airlock/store"
)

// An ApprovalRequest is what a person is asked to approve: one call, bound
// by its digest to these arguments and this definition of the tool.
type ApprovalRequest struct {
	ID        string
	Server    string
	Tool      string // local name
	Summary   string // for people; secrets in the arguments are redacted
	Digest    string
	ExpiresAt time.Time
}

// An Approver asks a person about a call that policy wants approved: a
// terminal prompt, a web callback, a queue. It returns Allow (granted, for
// this one call), Deny, or "" to leave the request pending, in which case
// the call ends approval_required and a later call with the same arguments
// runs once the request is granted (airlock approvals approve ID). Approve
// may be called from several goroutines at once.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Verdict, error)
}

// approve settles a call that hooks or policy want approved. It returns nil
// when the call may go on (a grant for exactly this call was used), else
// the result to return: approval_required, or denied.
func (h *Host) approve(ctx context.Context, q *request) *Result {
	snap, tool, args, d, r := q.snap, q.tool, q.args, q.decision, q.r
	reason, fail := r.Decision.Reason, q.fail
	digest, err := policy.Digest(policy.DigestInput{Server: tool.Server, Tool: tool.Name, RemoteTool: tool.Remote,
		Description: tool.Description, InputSchema: tool.Input.JSON(), Arguments: args, WorkDir: q.srv.cfg.Cwd})
	if err != nil {
		return fail(Denied, err, "%s refused: cannot bind an approval to these arguments: %v", tool.Name, err)
	}
	approvals := h.gov.store.Approvals()
	now := h.gov.now()
	used := func(a store.Approval) *Result {
		r.ApprovalID = a.ID
		h.audit(ctx, store.Event{Event: store.EventApprovalUsed, Server: tool.Server, Tool: tool.Name, Snapshot: snap.ID(),
			Fields: map[string]any{"approval": a.ID}})
		return nil
	}

	// A grant waiting for exactly this call (same tool definition, same
	// arguments) is used, once.
	if a, err := approvals.Consume(ctx, digest, now); err == nil {
		return used(a)
	} else if !errors.Is(err, store.ErrNotFound) {
		return fail(Denied, err, "%s refused: approvals cannot be read: %v", tool.Name, err)
	}

	// Otherwise there is a request for a person: the pending one for this
	// call, or a new one.
	var req store.Approval
	pending, err := approvals.List(ctx, store.ApprovalFilter{Status: store.ApprovalPending, Tenant: snap.who.Tenant})
	if err != nil {
		return fail(Denied, err, "%s refused: approvals cannot be read: %v", tool.Name, err)
	}
	if i := slices.IndexFunc(pending, func(a store.Approval) bool { return a.Digest == digest }); i >= 0 {
		req = pending[i]
	} else {
		summary := policy.Summary(policy.Request{Server: tool.Server, Tool: tool.Name, RemoteTool: tool.Remote,
			Arguments: args, Principal: snap.who, Annotations: tool.Annotations}, d, h.gov.redactor.Value)
		summary = strings.TrimSpace(summary)
		if reason != d.Reason {
			summary += "\nalso: " + reason // a hook asked
		}
		req = store.Approval{ID: store.NewID("apr_"), Server: tool.Server, Tool: tool.Name, Digest: digest,
			Summary: h.gov.redactor.String(summary), Status: store.ApprovalPending,
			CreatedAt: now, ExpiresAt: now.Add(h.gov.ttl), Tenant: snap.who.Tenant, User: snap.who.User}
		if err := approvals.Create(ctx, req); err != nil {
			return fail(Denied, err, "%s refused: the approval request cannot be recorded: %v", tool.Name, err)
		}
		h.audit(ctx, store.Event{Event: store.EventApprovalRequested, Server: tool.Server, Tool: tool.Name, Snapshot: snap.ID(),
			Fields: map[string]any{"approval": req.ID, "rule": d.Rule}})
	}
	r.ApprovalID = req.ID

	// A person at hand (a terminal, a callback) may answer now.
	if h.gov.approver != nil {
		answer, err := h.gov.approver.Approve(ctx, ApprovalRequest{ID: req.ID, Server: req.Server, Tool: req.Tool,
			Summary: req.Summary, Digest: req.Digest, ExpiresAt: req.ExpiresAt})
		switch {
		case err != nil:
			h.log.Warn("approver failed", "approval", req.ID, "error", err)
		case answer == Allow || answer == Deny:
			if err := h.Decide(ctx, req.ID, answer == Allow, snap.who.User, "answered when asked"); err != nil {
				return fail(Denied, err, "%s refused: %v", tool.Name, err)
			}
			if answer == Deny {
				return fail(Denied, nil, "%s refused: a person denied approval %s", tool.Name, req.ID)
			}
			if a, err := approvals.Consume(ctx, digest, h.gov.now()); err == nil {
				return used(a)
			}
		}
	}
	return fail(ApprovalRequired, nil, "%s needs a person's approval (%s): run airlock approvals approve %s, then call again with the same arguments",
		tool.Name, reason, req.ID)
}

// Decide grants or denies a pending approval request, once, and records it
// in the host's audit trail.
func (h *Host) Decide(ctx context.Context, id string, grant bool, by, note string) error {
	return decideApproval(ctx, h.gov.store, h.trail, id, grant, by, h.gov.redactor.String(note))
}

// DecideApproval grants or denies a pending approval request in st, once,
// and records it in the audit trail (exported to OpenTelemetry when the
// standard environment asks for it, as a host's is; a malformed
// environment is an error, and nothing is decided). A grant lets exactly
// one call with the approved arguments run, until the request expires.
func DecideApproval(ctx context.Context, st store.Store, id string, grant bool, by, note string) error {
	return withTrail(ctx, st, func(t *auditTrail) error {
		var r *redact.Redactor // the built-in credential formats
		return decideApproval(ctx, st, t, id, grant, by, r.String(note))
	})
}

// decideApproval decides and writes the event to t; note is redacted.
func decideApproval(ctx context.Context, st store.Store, t *auditTrail, id string, grant bool, by, note string) error {
	if err := st.Approvals().Decide(ctx, id, grant, by, note); err != nil {
		return fmt.Errorf("approval %s: %w", id, err)
	}
	ev := store.EventApprovalDenied
	if grant {
		ev = store.EventApprovalGranted
	}
	a, _ := st.Approvals().Get(ctx, id)
	t.w.Append(ctx, store.Event{Event: ev, Server: a.Server, Tool: a.Tool, Fields: map[string]any{"approval": id, "by": by}})
	return nil
}
