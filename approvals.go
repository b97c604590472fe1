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
// by its digest to these arguments, this definition of the tool and this
// launch of its server.
type ApprovalRequest struct {
	ID      string
	Server  string
	Tool    string // local name
	Summary string // for people; secrets in the arguments are redacted
	// Target is where the call goes: the server's command line or URL
	// (config.Server.Target), secrets redacted.
	Target    string
	Digest    string
	ExpiresAt time.Time
	// Principal is whom the call is made for: only that tenant's and
	// user's call may use the grant.
	Principal Principal
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
// when the call may go on (a grant for exactly this call, asked for the
// call's own tenant and user, was used), else the result to return:
// approval_required, or denied.
func (h *Host) approve(ctx context.Context, q *request) *Result {
	snap, tool, args, d, r, cfg := q.snap, q.tool, q.args, q.decision, q.r, &q.srv.cfg
	reason, fail := r.Decision.Reason, q.fail
	digest, err := policy.Digest(policy.DigestInput{Server: tool.Server, Tool: tool.Name, RemoteTool: tool.Remote,
		Description: tool.Description, InputSchema: tool.Input.JSON(), Arguments: args, WorkDir: cfg.Cwd,
		Launch: cfg.LaunchFingerprint()})
	if err != nil {
		return fail(Denied, err, "%s refused: cannot bind an approval to these arguments: %v", tool.Name, err)
	}
	approvals := h.gov.store.Approvals()
	now := h.gov.now()
	who := snap.who
	used := func(a store.Approval) *Result {
		r.ApprovalID = a.ID
		h.audit(ctx, q.event(store.EventApprovalUsed, principalFields(map[string]any{"approval": a.ID}, "", who)))
		return nil
	}

	// A grant waiting for exactly this call (same tool definition, same
	// arguments), asked for this tenant and user, is used, once.
	if a, err := approvals.Consume(ctx, digest, who.Tenant, who.User, now); err == nil {
		return used(a)
	} else if !errors.Is(err, store.ErrNotFound) {
		return fail(Denied, err, "%s refused: approvals cannot be read: %v", tool.Name, err)
	}

	// Otherwise there is a request for a person: this principal's pending
	// one for this call, or a new one.
	var req store.Approval
	pending, err := approvals.List(ctx, store.ApprovalFilter{Status: store.ApprovalPending, Tenant: who.Tenant, User: who.User})
	if err != nil {
		return fail(Denied, err, "%s refused: approvals cannot be read: %v", tool.Name, err)
	}
	if i := slices.IndexFunc(pending, func(a store.Approval) bool { return a.Digest == digest && owns(who, a) }); i >= 0 {
		req = pending[i]
	} else {
		summary := policy.Summary(policy.Request{Server: tool.Server, Tool: tool.Name, RemoteTool: tool.Remote,
			Arguments: args, Principal: who, Annotations: tool.Annotations}, d, h.gov.redactor.Value)
		summary = strings.TrimSpace(summary)
		if reason != d.Reason {
			summary += "\nalso: " + reason // a hook asked
		}
		req = store.Approval{ID: store.NewID("apr_"), Server: tool.Server, Tool: tool.Name, Digest: digest,
			Summary: h.gov.redactor.String(summary), Target: h.gov.redactor.String(cfg.Target()), Status: store.ApprovalPending,
			CreatedAt: now, ExpiresAt: now.Add(h.gov.ttl), Tenant: who.Tenant, User: who.User}
		if err := approvals.Create(ctx, req); err != nil {
			return fail(Denied, err, "%s refused: the approval request cannot be recorded: %v", tool.Name, err)
		}
		h.audit(ctx, q.event(store.EventApprovalRequested, principalFields(map[string]any{"approval": req.ID, "rule": d.Rule}, "", who)))
	}
	r.ApprovalID = req.ID

	// A person at hand (a terminal, a callback) may answer now, for the
	// principal the call is made for.
	if h.gov.approver != nil {
		answer, err := h.gov.approver.Approve(ctx, ApprovalRequest{ID: req.ID, Server: req.Server, Tool: req.Tool,
			Summary: req.Summary, Target: req.Target, Digest: req.Digest, ExpiresAt: req.ExpiresAt, Principal: who})
		switch {
		case err != nil:
			h.log.Warn("approver failed", "approval", req.ID, "error", err)
		case answer == Allow || answer == Deny:
			as := Actor{Principal: who, By: who.User}
			if err := decideApproval(ctx, h.gov.store, h.trail, req.ID, answer == Allow, "answered when asked", as, q.r.CallID); err != nil {
				return fail(Denied, err, "%s refused: %v", tool.Name, err)
			}
			if answer == Deny {
				return fail(Denied, nil, "%s refused: a person denied approval %s", tool.Name, req.ID)
			}
			if a, err := approvals.Consume(ctx, digest, who.Tenant, who.User, h.gov.now()); err == nil {
				return used(a)
			}
		}
	}
	return fail(ApprovalRequired, nil, "%s needs a person's approval (%s): run airlock approvals approve %s, then call again with the same arguments",
		tool.Name, reason, req.ID)
}

// ErrOtherPrincipal is returned (wrapped) for an approval request or a
// journal record that was made for another tenant or user than the one
// acting on it.
var ErrOtherPrincipal = errors.New("it was asked for another tenant or user")

// An Actor is who acts, outside a call, on what the host keeps for a
// principal (approval requests, journal records): the principal whose
// requests and records a person may list, show, decide and resolve, and
// the person, for the audit trail.
type Actor struct {
	// Principal is the tenant and user whose requests and records may be
	// acted on.
	Principal Principal
	// By names the person acting (an account, a login), for the audit
	// trail.
	By string
	// AllPrincipals lets an operator act on the requests and records of
	// every tenant and user. Every use is written to the audit trail
	// (store.EventApprovalOperator, store.EventRecoveryOperator: who
	// acted, as whom, on whose request or record).
	AllPrincipals bool
}

// An owned thing is an approval request or a journal record, for the
// audit trail of an operator acting on it: its id (under field), where
// its call goes, and whose it is.
type owned struct {
	field, id, server, tool string
	who                     Principal
}

func ownedApproval(a store.Approval) owned {
	return owned{"approval", a.ID, a.Server, a.Tool, Principal{Tenant: a.Tenant, User: a.User}}
}

func ownedRecord(r store.Record) owned {
	return owned{"recovery", r.ID, r.Server, r.Tool, Principal{Tenant: r.Tenant, User: r.User}}
}

// owns reports whether a was asked for who.
func owns(who Principal, a store.Approval) bool {
	return a.Tenant == who.Tenant && a.User == who.User
}

// principalFields adds to fields whose call or request an event is about,
// under names that start with prefix: the tenant and the user, by the
// names they have everywhere else (tenancy:, a task's principal, the
// approvals and recovery commands), so that one principal reads the same
// in every command and event.
func principalFields(fields map[string]any, prefix string, who Principal) map[string]any {
	fields[prefix+"tenant"] = who.Tenant
	fields[prefix+"user"] = who.User
	return fields
}

// operatorEvent records a use of as.AllPrincipals: event names what was
// acted on (approvals or recovery records), action what was done (list,
// show, approve, deny, resolve), and o the request or record, or the zero
// owned for a list.
func operatorEvent(as Actor, event, action string, o owned) store.Event {
	fields := principalFields(map[string]any{"action": action, "by": as.By}, "acting_", as.Principal)
	if o.id != "" {
		fields[o.field] = o.id
		principalFields(fields, "", o.who)
	}
	return store.Event{Event: event, Server: o.server, Tool: o.tool, Fields: fields}
}

// ListApprovals lists the approval requests of st that f selects and as
// may see: its principal's own, or, with AllPrincipals, every principal's
// (which is written to the audit trail).
func ListApprovals(ctx context.Context, st store.Store, f store.ApprovalFilter, as Actor) ([]store.Approval, error) {
	if !as.AllPrincipals {
		if as.Principal.Tenant == "" || as.Principal.User == "" {
			return nil, fmt.Errorf("list approvals: no tenant and user to act for")
		}
		f.Tenant, f.User = as.Principal.Tenant, as.Principal.User
		return st.Approvals().List(ctx, f)
	}
	var list []store.Approval
	err := withTrail(ctx, st, func(t *auditTrail) error {
		var err error
		if list, err = st.Approvals().List(ctx, f); err != nil {
			return err
		}
		t.w.Append(ctx, operatorEvent(as, store.EventApprovalOperator, "list", owned{}))
		return nil
	})
	return list, err
}

// GetApproval returns the approval request id of st, if as may see it: one
// asked for its principal, or, with AllPrincipals, any (which is written
// to the audit trail). Another principal's request is ErrOtherPrincipal.
func GetApproval(ctx context.Context, st store.Store, id string, as Actor) (store.Approval, error) {
	a, err := st.Approvals().Get(ctx, id)
	if err != nil {
		return store.Approval{}, err
	}
	if !as.AllPrincipals {
		if !owns(as.Principal, a) {
			return store.Approval{}, otherPrincipal(id, as)
		}
		return a, nil
	}
	return a, withTrail(ctx, st, func(t *auditTrail) error {
		t.w.Append(ctx, operatorEvent(as, store.EventApprovalOperator, "show", ownedApproval(a)))
		return nil
	})
}

// otherPrincipal is the error for a request id that as may not act on. It
// does not say whose the request is.
func otherPrincipal(id string, as Actor) error {
	return fmt.Errorf("approval %s: %w than %s/%s", id, ErrOtherPrincipal, as.Principal.Tenant, as.Principal.User)
}

// Decide grants or denies a pending approval request, once, and records it
// in the host's audit trail. It acts for the host's principal: another
// tenant's or user's request is ErrOtherPrincipal.
func (h *Host) Decide(ctx context.Context, id string, grant bool, by, note string) error {
	return decideApproval(ctx, h.gov.store, h.trail, id, grant, h.gov.redactor.String(note),
		Actor{Principal: h.gov.principal, By: by}, "")
}

// DecideApproval grants or denies a pending approval request in st, once,
// for as: a request asked for its principal, or, with AllPrincipals, any
// (another principal's request is otherwise ErrOtherPrincipal). It records
// the decision in the audit trail (exported to OpenTelemetry when the
// standard environment asks for it, as a host's is; a malformed
// environment is an error, and nothing is decided). A grant lets exactly
// one call with the approved arguments, made for the request's tenant and
// user, run, until the request expires.
func DecideApproval(ctx context.Context, st store.Store, id string, grant bool, note string, as Actor) error {
	return withTrail(ctx, st, func(t *auditTrail) error {
		var r *redact.Redactor // the built-in credential formats
		return decideApproval(ctx, st, t, id, grant, r.String(note), as, "")
	})
}

// decideApproval decides for as and writes the events to t; note is
// redacted. The decision event names the request's principal, and the
// call (Result.CallID) when a person answered while it waited.
func decideApproval(ctx context.Context, st store.Store, t *auditTrail, id string, grant bool, note string, as Actor, call string) error {
	ev, action := store.EventApprovalDenied, "deny"
	if grant {
		ev, action = store.EventApprovalGranted, "approve"
	}
	a, err := st.Approvals().Get(ctx, id)
	if err != nil {
		return err // the store's error names the approval
	}
	// A request's tenant and user never change, so the check holds for the
	// decision below.
	if !as.AllPrincipals && !owns(as.Principal, a) {
		return otherPrincipal(id, as)
	}
	if err := st.Approvals().Decide(ctx, id, grant, as.By, note); err != nil {
		return err // the store's error names the approval and the decision
	}
	if as.AllPrincipals {
		t.w.Append(ctx, operatorEvent(as, store.EventApprovalOperator, action, ownedApproval(a)))
	}
	fields := principalFields(map[string]any{"approval": id, "by": as.By}, "", Principal{Tenant: a.Tenant, User: a.User})
	if call != "" {
		fields["call"] = call
	}
	t.w.Append(ctx, store.Event{Event: ev, Server: a.Server, Tool: a.Tool, Fields: fields})
	return nil
}
