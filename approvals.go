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
	// Effect is what local policy says the tool may do (never what the
	// server says of it): an approver may treat reads differently, as
	// airlock run --yes-reads does.
	Effect Effect
}

// An Approver asks a person about a call that policy wants approved: a
// terminal prompt, a web callback, a queue. It returns Allow (granted, for
// this one call), Deny, or "" to leave the request pending, in which case
// the call ends approval_required and a later call with the same arguments
// runs once the request is granted (airlock approvals approve ID). A Deny
// holds: the same call, for the same principal, is denied without asking
// until the approval TTL has passed. Approve may be called from several
// goroutines at once.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Verdict, error)
}

// A RememberingApprover is an Approver whose person may also answer
// "always". When policy asks and no before hook is configured (a hook's
// question must be asked every time), the host calls ApproveRemember
// instead of Approve: Allow with remember true grants the call and
// remembers the answer as a rule (store.AllowRule) for the tool, as it is
// defined now, on its server as it is launched now, for the call's
// principal. Later calls that policy would ask about then run without
// asking; what policy or an argument constraint denies stays denied.
// remember is ignored with any other verdict.
type RememberingApprover interface {
	Approver
	ApproveRemember(ctx context.Context, req ApprovalRequest) (v Verdict, remember bool, err error)
}

// approve settles a call that hooks or policy want approved. It returns nil
// when the call may go on (a grant for exactly this call, asked for the
// call's own tenant and user, was used, or a rule that person remembered
// for the tool answers policy's question), else the result to return:
// approval_required, or denied (a person denied this very call within the
// approval TTL, or denies it now).
func (h *Host) approve(ctx context.Context, q *request) *Result {
	b, res := h.bindApproval(q)
	if res != nil {
		return res
	}
	if res, settled := h.priorAnswer(ctx, q, b); settled {
		return res
	}
	req, res := h.approvalRequest(ctx, q, b)
	if res != nil {
		return res
	}
	q.r.ApprovalID = req.ID
	if h.gov.approver != nil {
		if res, settled := h.askNow(ctx, q, b, req); settled {
			return res
		}
	}
	again := "call again with the same arguments"
	switch q.kind {
	case policy.KindResource:
		again = "read " + printable(q.resource) + " again"
	case policy.KindPrompt:
		again = "get the prompt again with the same arguments"
	}
	return q.fail(ApprovalRequired, nil, "%s needs a person's approval (%s): run airlock approvals approve %s, then %s",
		q.tool.Name, q.r.Decision.Reason, req.ID, again)
}

// An approvalBinding is what an approval for one call is bound to.
type approvalBinding struct {
	// digest binds a grant to exactly this call: the tool as defined now,
	// on its server as launched now, with these arguments.
	digest string
	// definition is the same without the arguments: what a remembered
	// "always" is bound to.
	definition string
	// rememberable says whether a remembered rule may answer: only
	// policy's question may be. A hook that asks must be asked again; a
	// request does not say whether a hook asked along with policy, so no
	// rule applies while hooks may ask.
	rememberable bool
}

// bindApproval computes the call's approval binding, or the denial when
// it cannot be computed.
func (h *Host) bindApproval(q *request) (approvalBinding, *Result) {
	tool, cfg := q.tool, &q.srv.cfg
	in := policy.DigestInput{Server: tool.Server, Tool: tool.Name, RemoteTool: tool.Remote,
		Description: tool.Description, InputSchema: tool.Input.JSON(), Arguments: q.args, WorkDir: cfg.Cwd,
		Launch: cfg.LaunchFingerprint()}
	digest, err := policy.Digest(in)
	if err != nil {
		return approvalBinding{}, q.fail(Denied, err, "%s refused: cannot bind an approval to these arguments: %v", tool.Name, err)
	}
	in.Arguments = nil
	definition, err := policy.Digest(in)
	if err != nil {
		return approvalBinding{}, q.fail(Denied, err, "%s refused: cannot bind an approval to this tool: %v", tool.Name, err)
	}
	return approvalBinding{digest: digest, definition: definition,
		rememberable: q.r.Decision.Rule != "hook" && len(h.gov.before) == 0}, nil
}

// priorAnswer looks for an answer a person gave before, for the call's
// tenant and user: a grant waiting for exactly this call (used, once), a
// denial of exactly this call within the approval TTL, or an "always"
// remembered for the tool as it is defined now. settled reports whether
// one was found; res is then nil when the call may go on.
func (h *Host) priorAnswer(ctx context.Context, q *request, b approvalBinding) (res *Result, settled bool) {
	tool, who, now := q.tool, q.snap.who, h.gov.now()
	approvals := h.gov.store.Approvals()
	unreadable := func(err error) (*Result, bool) {
		return h.approvalsUnreadable(q, err), true
	}

	if a, err := approvals.Consume(ctx, b.digest, who.Tenant, who.User, now); err == nil {
		return h.usedGrant(ctx, q, a), true
	} else if !errors.Is(err, store.ErrNotFound) {
		return unreadable(err)
	}

	if a, err := approvals.Denial(ctx, b.digest, who.Tenant, who.User, now.Add(-h.gov.ttl)); err == nil {
		q.r.ApprovalID = a.ID
		by := a.DecidedBy
		if by == "" {
			by = "a person"
		}
		return q.fail(Denied, nil, "%s refused: %s denied this call at %s (approval %s); the same call is refused until %s",
			tool.Name, by, a.DecidedAt.Format(time.RFC3339), a.ID, a.DecidedAt.Add(h.gov.ttl).Format(time.RFC3339)), true
	} else if !errors.Is(err, store.ErrNotFound) {
		return unreadable(err)
	}

	if !b.rememberable {
		return nil, false
	}
	rule, err := approvals.Remembered(ctx, b.definition, who.Tenant, who.User)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false
	} else if err != nil {
		return unreadable(err)
	}
	h.audit(ctx, store.Event{Event: store.EventRuleUsed, Server: tool.Server, Tool: tool.Name, Snapshot: q.snap.ID(),
		Fields: principalFields(map[string]any{"rule": rule.ID}, "", who)})
	return nil, true
}

// usedGrant records that the call uses grant a; the call goes on.
func (h *Host) usedGrant(ctx context.Context, q *request, a store.Approval) *Result {
	q.r.ApprovalID = a.ID
	h.audit(ctx, q.event(store.EventApprovalUsed, principalFields(map[string]any{"approval": a.ID}, "", q.snap.who)))
	return nil
}

// approvalsUnreadable refuses q, whose approvals the store could not
// read or write: the store's words (an address, a database's message) go
// to the operator's log, not to the model.
func (h *Host) approvalsUnreadable(q *request, err error) *Result {
	h.log.Error("cannot read or record approvals: the call is refused", "tool", q.tool.Name, "error", err)
	return q.fail(Denied, err, "%s refused: its approvals cannot be read right now (the host's store did not answer); try again later", q.tool.Name)
}

// approvalRequest returns the request for a person about the call: the
// principal's pending one for exactly this call, or a new one, recorded
// and audited.
func (h *Host) approvalRequest(ctx context.Context, q *request, b approvalBinding) (store.Approval, *Result) {
	tool, who, d, cfg := q.tool, q.snap.who, q.decision, &q.srv.cfg
	approvals := h.gov.store.Approvals()
	h.gov.requesting.Lock()
	defer h.gov.requesting.Unlock()
	pending, err := approvals.List(ctx, store.ApprovalFilter{Status: store.ApprovalPending, Tenant: who.Tenant, User: who.User})
	if err != nil {
		return store.Approval{}, h.approvalsUnreadable(q, err)
	}
	if i := slices.IndexFunc(pending, func(a store.Approval) bool { return a.Digest == b.digest && owns(who, a) }); i >= 0 {
		return pending[i], nil
	}
	summary := policy.Summary(policy.Request{Kind: q.kind, Resource: q.resource, Server: tool.Server, Tool: tool.Name,
		RemoteTool: tool.Remote, Arguments: q.args, Principal: who, Annotations: tool.Annotations}, d, h.gov.redactor.Value)
	summary = strings.TrimSpace(summary)
	if reason := q.r.Decision.Reason; reason != d.Reason {
		summary += "\nalso: " + reason // a hook asked
	}
	now := h.gov.now()
	req := store.Approval{ID: store.NewID("apr_"), Server: tool.Server, Tool: tool.Name, Digest: b.digest,
		Summary: h.gov.redactor.String(summary), Target: h.gov.redactor.String(cfg.Target()), Definition: b.definition,
		Status: store.ApprovalPending, CreatedAt: now, ExpiresAt: now.Add(h.gov.ttl), Tenant: who.Tenant, User: who.User}
	if err := approvals.Create(ctx, req); err != nil {
		return store.Approval{}, h.approvalsUnreadable(q, err)
	}
	h.audit(ctx, q.event(store.EventApprovalRequested, principalFields(map[string]any{"approval": req.ID, "rule": d.Rule}, "", who)))
	return req, nil
}

// askNow puts req to the person at hand (a terminal, a callback), for the
// principal the call is made for. settled reports whether they answered
// for good; res is then nil when they granted the call. While the person
// is asked, the request may be decided elsewhere (the console, airlock
// approvals): the question is then withdrawn (the approver's context
// ends) and that decision settles the call, within elsewherePoll.
func (h *Host) askNow(ctx context.Context, q *request, b approvalBinding, req store.Approval) (res *Result, settled bool) {
	who := q.snap.who
	ar := ApprovalRequest{ID: req.ID, Server: req.Server, Tool: req.Tool,
		Summary: req.Summary, Target: req.Target, Digest: req.Digest, ExpiresAt: req.ExpiresAt, Principal: who,
		Effect: q.decision.Effect}
	askCtx, decided := h.watchDecision(ctx, req.ID)
	var answer Verdict
	var remember bool
	var err error
	if ra, ok := h.gov.approver.(RememberingApprover); ok && b.rememberable && req.Definition != "" {
		answer, remember, err = ra.ApproveRemember(askCtx, ar)
	} else {
		answer, err = h.gov.approver.Approve(askCtx, ar)
	}
	if a, ok := decided(); ok {
		return h.decidedElsewhere(ctx, q, b, a)
	}
	switch {
	case err != nil:
		h.log.Warn("approver failed", "approval", req.ID, "error", err)
		return nil, false
	case answer != Allow && answer != Deny:
		return nil, false
	}
	as := Actor{Principal: who, By: who.User}
	ans := personsAnswer{grant: answer == Allow, remember: remember && answer == Allow, note: "answered when asked", call: q.r.CallID}
	if _, err := decideApproval(ctx, h.gov.store, h.trail, req.ID, ans, as); err != nil {
		if a, gerr := h.gov.store.Approvals().Get(ctx, req.ID); errors.Is(err, store.ErrConflict) && gerr == nil && a.Status != store.ApprovalPending {
			return h.decidedElsewhere(ctx, q, b, a) // answered elsewhere first
		}
		return h.approvalsUnreadable(q, err), true
	}
	if answer == Deny {
		return q.fail(Denied, nil, "%s refused: a person denied approval %s", q.tool.Name, req.ID), true
	}
	if a, err := h.gov.store.Approvals().Consume(ctx, b.digest, who.Tenant, who.User, h.gov.now()); err == nil {
		return h.usedGrant(ctx, q, a), true
	}
	return nil, false
}

// elsewherePoll is how often a call that is asking a person something
// (an approval, a server's question) looks in the store for an answer
// given elsewhere.
const elsewherePoll = 250 * time.Millisecond

// ErrDecidedElsewhere is the cause (context.Cause) of an Approver's
// context that ended because the request was decided elsewhere while the
// person was asked: the approver may say so and return.
var ErrDecidedElsewhere = errors.New("the approval request was decided elsewhere")

// watchElsewhere returns a context for asking a person something, which
// ends with cause once look, asked every elsewherePoll, finds it answered
// elsewhere, and settled, which stops watching and returns that answer,
// if one was found.
func watchElsewhere[T any](ctx context.Context, cause error, look func(context.Context) (T, bool)) (context.Context, func() (T, bool)) {
	askCtx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var seen T
	var found bool
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(elsewherePoll)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-askCtx.Done():
				return
			case <-tick.C:
			}
			if seen, found = look(askCtx); found {
				cancel(cause)
				return
			}
		}
	}()
	return askCtx, func() (T, bool) {
		close(done)
		<-stopped
		cancel(nil)
		return seen, found
	}
}

// watchDecision is watchElsewhere for the approval request id: it is
// answered once it is no longer pending.
func (h *Host) watchDecision(ctx context.Context, id string) (context.Context, func() (store.Approval, bool)) {
	return watchElsewhere(ctx, ErrDecidedElsewhere, func(ctx context.Context) (store.Approval, bool) {
		a, err := h.gov.store.Approvals().Get(ctx, id)
		return a, err == nil && a.Status != store.ApprovalPending
	})
}

// decidedElsewhere settles a call with the decision a made while the
// person at hand was asked: a grant is used (once, as any grant), a
// denial refuses the call; an expired request settles nothing.
func (h *Host) decidedElsewhere(ctx context.Context, q *request, b approvalBinding, a store.Approval) (*Result, bool) {
	by := a.DecidedBy
	if by == "" {
		by = "a person"
	}
	switch a.Status {
	case store.ApprovalDenied:
		return q.fail(Denied, nil, "%s refused: %s denied approval %s", q.tool.Name, by, a.ID), true
	case store.ApprovalGranted:
		who := q.snap.who
		if g, err := h.gov.store.Approvals().Consume(ctx, b.digest, who.Tenant, who.User, h.gov.now()); err == nil {
			return h.usedGrant(ctx, q, g), true
		}
	}
	return nil, false
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
	// Source names where the person acts from, such as "console", for the
	// audit trail (field "source" of every event of the act); "" for the
	// command line.
	Source string
}

// RecordSignIn writes to st's audit trail that the person as names signed
// in to (in) or out of where as.Source says (the console), at issuer, and
// whether as an operator.
func RecordSignIn(ctx context.Context, st store.Store, as Actor, in bool, issuer string) error {
	event := store.EventSignedIn
	if !in {
		event = store.EventSignedOut
	}
	return withTrail(ctx, st, func(t *auditTrail) error {
		fields := principalFields(as.sourced(map[string]any{"by": as.By, "issuer": issuer, "operator": as.AllPrincipals}), "", as.Principal)
		t.w.Append(ctx, store.Event{Event: event, Fields: fields})
		return nil
	})
}

// sourced adds as.Source to fields, when it names one.
func (as Actor) sourced(fields map[string]any) map[string]any {
	if as.Source != "" {
		fields["source"] = as.Source
	}
	return fields
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
	fields := principalFields(as.sourced(map[string]any{"action": action, "by": as.By}), "acting_", as.Principal)
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
	return listAs(ctx, st, as, "list approvals", store.EventApprovalOperator, "list",
		func(p Principal) { f.Tenant, f.User = p.Tenant, p.User },
		func() ([]store.Approval, error) { return st.Approvals().List(ctx, f) })
}

// listAs lists through list what as may see. Acting for its principal, it
// first narrows the list to the principal's own with narrow; with
// AllPrincipals, it lists every principal's, and writes event, with
// action, to the audit trail. what names the list in the error for an
// actor with no principal.
func listAs[T any](ctx context.Context, st store.Store, as Actor, what, event, action string,
	narrow func(Principal), list func() ([]T, error)) ([]T, error) {
	if !as.AllPrincipals {
		if as.Principal.Tenant == "" || as.Principal.User == "" {
			return nil, fmt.Errorf("%s: no tenant and user to act for", what)
		}
		narrow(as.Principal)
		return list()
	}
	var out []T
	err := withTrail(ctx, st, func(t *auditTrail) error {
		var err error
		if out, err = list(); err != nil {
			return err
		}
		t.w.Append(ctx, operatorEvent(as, event, action, owned{}))
		return nil
	})
	return out, err
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
	return a, shown(ctx, st, as, store.EventApprovalOperator, ownedApproval(a))
}

// shown records in the audit trail, as event, that as was shown o, when as
// is an operator reading across principals; for anyone else it records
// nothing.
func shown(ctx context.Context, st store.Store, as Actor, event string, o owned) error {
	if !as.AllPrincipals {
		return nil
	}
	return withTrail(ctx, st, func(t *auditTrail) error {
		t.w.Append(ctx, operatorEvent(as, event, "show", o))
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
	_, err := decideApproval(ctx, h.gov.store, h.trail, id, personsAnswer{grant: grant, note: h.gov.redactor.String(note)},
		Actor{Principal: h.gov.principal, By: by})
	return err
}

// DecideApproval grants or denies a pending approval request in st, once,
// for as: a request asked for its principal, or, with AllPrincipals, any
// (another principal's request is otherwise ErrOtherPrincipal). It records
// the decision in the audit trail (exported to OpenTelemetry when the
// standard environment asks for it, as a host's is; a malformed
// environment is an error, and nothing is decided). A grant lets exactly
// one call with the approved arguments, made for the request's tenant and
// user, run, until the request expires. A denial refuses that call, for
// that principal, without asking again, until the approval TTL has passed.
func DecideApproval(ctx context.Context, st store.Store, id string, grant bool, note string, as Actor) error {
	return withTrail(ctx, st, func(t *auditTrail) error {
		var r *redact.Redactor // the built-in credential formats
		_, err := decideApproval(ctx, st, t, id, personsAnswer{grant: grant, note: r.String(note)}, as)
		return err
	})
}

// RememberApproval grants the pending approval request id of st, as
// DecideApproval does, and remembers the answer as "always": a rule for
// the request's tool, as it was defined when the call was asked, on its
// server as it was launched then, for the request's tenant and user. Calls
// that policy would ask about then run without asking, on hosts without
// before hooks (a hook's question is asked every time); what policy or an
// argument constraint denies stays denied. The rule
// lasts until it is forgotten (ForgetRule); a tool or server that changes
// no longer matches it. A rule already remembered for the same tool and
// principal is returned instead of a new one. Both are written to the
// audit trail (store.EventApprovalGranted, store.EventRuleRemembered).
func RememberApproval(ctx context.Context, st store.Store, id, note string, as Actor) (store.AllowRule, error) {
	var rule store.AllowRule
	err := withTrail(ctx, st, func(t *auditTrail) error {
		var r *redact.Redactor // the built-in credential formats
		var err error
		rule, err = decideApproval(ctx, st, t, id, personsAnswer{grant: true, remember: true, note: r.String(note)}, as)
		return err
	})
	return rule, err
}

// personsAnswer is what a person answered to an approval request: grant or
// deny, "always" (remember, with a grant), why (note, redacted), and the
// call (Result.CallID) the request was asked for when the person answered
// while it waited.
type personsAnswer struct {
	grant, remember bool
	note, call      string
}

// decideApproval decides for as and writes the events to t. The decision
// event names the request's principal, and the call when there is one.
// With ans.remember, it returns the rule that remembers the grant.
func decideApproval(ctx context.Context, st store.Store, t *auditTrail, id string, ans personsAnswer, as Actor) (store.AllowRule, error) {
	ev, action := store.EventApprovalDenied, "deny"
	if ans.grant {
		ev, action = store.EventApprovalGranted, "approve"
	}
	a, err := st.Approvals().Get(ctx, id)
	if err != nil {
		return store.AllowRule{}, err // the store's error names the approval
	}
	// A request's tenant and user never change, so the check holds for the
	// decision below.
	if !as.AllPrincipals && !owns(as.Principal, a) {
		return store.AllowRule{}, otherPrincipal(id, as)
	}
	if ans.remember && a.Definition == "" {
		return store.AllowRule{}, fmt.Errorf("approval %s was asked before answers could be remembered: approve it once, without remembering; the next request can be remembered", id)
	}
	if err := st.Approvals().Decide(ctx, id, ans.grant, as.By, ans.note); err != nil {
		return store.AllowRule{}, err // the store's error names the approval and the decision
	}
	if as.AllPrincipals {
		t.w.Append(ctx, operatorEvent(as, store.EventApprovalOperator, action, ownedApproval(a)))
	}
	who := Principal{Tenant: a.Tenant, User: a.User}
	fields := principalFields(as.sourced(map[string]any{"approval": id, "by": as.By}), "", who)
	if ans.call != "" {
		fields["call"] = ans.call
	}
	t.w.Append(ctx, store.Event{Event: ev, Server: a.Server, Tool: a.Tool, Fields: fields})
	if !ans.remember {
		return store.AllowRule{}, nil
	}
	return rememberRule(ctx, st, t, a, as)
}

// rememberRule remembers the granted request a as a rule for its tool and
// principal, or returns the rule already remembered for them.
func rememberRule(ctx context.Context, st store.Store, t *auditTrail, a store.Approval, as Actor) (store.AllowRule, error) {
	approvals := st.Approvals()
	if rule, err := approvals.Remembered(ctx, a.Definition, a.Tenant, a.User); err == nil {
		return rule, nil
	}
	rule := store.AllowRule{ID: store.NewID("rule_"), Server: a.Server, Tool: a.Tool, Definition: a.Definition,
		Tenant: a.Tenant, User: a.User, CreatedBy: as.By, Approval: a.ID}
	if err := approvals.Remember(ctx, rule); errors.Is(err, store.ErrConflict) {
		// Remembered meanwhile, by another process.
		if rule, err := approvals.Remembered(ctx, a.Definition, a.Tenant, a.User); err == nil {
			return rule, nil
		}
		return store.AllowRule{}, fmt.Errorf("approval %s was granted, but cannot be remembered: %w", a.ID, err)
	} else if err != nil {
		return store.AllowRule{}, fmt.Errorf("approval %s was granted, but cannot be remembered: %w", a.ID, err)
	}
	if as.AllPrincipals {
		t.w.Append(ctx, operatorEvent(as, store.EventApprovalOperator, "remember", ownedApproval(a)))
	}
	t.w.Append(ctx, store.Event{Event: store.EventRuleRemembered, Server: a.Server, Tool: a.Tool,
		Fields: principalFields(as.sourced(map[string]any{"rule": rule.ID, "approval": a.ID, "by": as.By}), "", Principal{Tenant: a.Tenant, User: a.User})})
	return approvals.Rule(ctx, rule.ID)
}

// ListRules lists the remembered rules of st that as may see: its
// principal's own, or, with AllPrincipals, every principal's (which is
// written to the audit trail).
func ListRules(ctx context.Context, st store.Store, as Actor) ([]store.AllowRule, error) {
	var f store.RuleFilter
	return listAs(ctx, st, as, "list rules", store.EventApprovalOperator, "rules",
		func(p Principal) { f.Tenant, f.User = p.Tenant, p.User },
		func() ([]store.AllowRule, error) { return st.Approvals().Rules(ctx, f) })
}

// ForgetRule deletes the remembered rule id of st, if as may act on it: one
// remembered for its principal, or, with AllPrincipals, any (another
// principal's rule is otherwise ErrOtherPrincipal). Calls of its tool are
// asked about again. It is written to the audit trail
// (store.EventRuleForgotten), with note, redacted.
func ForgetRule(ctx context.Context, st store.Store, id, note string, as Actor) (store.AllowRule, error) {
	rule, err := st.Approvals().Rule(ctx, id)
	if err != nil {
		return store.AllowRule{}, err
	}
	who := Principal{Tenant: rule.Tenant, User: rule.User}
	if !as.AllPrincipals && as.Principal != who {
		return store.AllowRule{}, fmt.Errorf("rule %s: %w than %s/%s", id, ErrOtherPrincipal, as.Principal.Tenant, as.Principal.User)
	}
	return rule, withTrail(ctx, st, func(t *auditTrail) error {
		if err := st.Approvals().Forget(ctx, id); err != nil {
			return err
		}
		if as.AllPrincipals {
			t.w.Append(ctx, operatorEvent(as, store.EventApprovalOperator, "forget",
				owned{"rule", rule.ID, rule.Server, rule.Tool, who}))
		}
		var r *redact.Redactor // the built-in credential formats
		fields := principalFields(as.sourced(map[string]any{"rule": id, "by": as.By}), "", who)
		if note != "" {
			fields["note"] = r.String(note)
		}
		t.w.Append(ctx, store.Event{Event: store.EventRuleForgotten, Server: rule.Server, Tool: rule.Tool, Fields: fields})
		return nil
	})
}
