package airlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/canonical"
	"github.com/airlockhq/airlock/internal/catalog"
	"github.com/airlockhq/airlock/internal/redact"
	"github.com/airlockhq/airlock/internal/upstream"
	"github.com/airlockhq/airlock/policy"
	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/sqlite"
)

// governance is what the pipeline consults besides the servers: policy,
// hooks, approvals, the journal and the audit trail.
type governance struct {
	policy    *policy.Policy
	store     store.Store
	ownStore  bool // opened by the host, closed by it
	redactor  *redact.Redactor
	secrets   []string // exact secret values (secret_env), kept from models too
	before    []BeforeHook
	after     []AfterHook
	approver  Approver
	ttl       time.Duration
	principal policy.Principal
	values    func(tool string) bool // record argument and result values of this tool
	now       func() time.Time
}

// principalFor fills in the empty fields of p: from the configuration's
// tenancy, else tenant "default" and the operating-system user.
func principalFor(cfg *config.Config, p Principal) Principal {
	if p.Tenant == "" {
		p.Tenant = cfg.Tenancy.Tenant
	}
	if p.User == "" {
		p.User = cfg.Tenancy.User
	}
	if p.Tenant == "" {
		p.Tenant = "default"
	}
	if p.User == "" {
		if u, err := user.Current(); err == nil {
			p.User = u.Username
		}
	}
	return p
}

// A Principal is who the host, or a task, acts for.
type Principal struct {
	Tenant string
	User   string
}

func (p Principal) policy() policy.Principal { return policy.Principal{Tenant: p.Tenant, User: p.User} }

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
	Approve(ctx context.Context, req ApprovalRequest) (string, error)
}

// openGovernance builds the governance of a host from its configuration.
func openGovernance(cfg *config.Config, opts *Options, stateDir string) (*governance, error) {
	g := &governance{ttl: cfg.Approvals.TTL, before: opts.Before, after: opts.After, approver: opts.Approver, now: time.Now}
	if g.ttl <= 0 {
		g.ttl = time.Hour
	}
	pol, err := policy.New(&cfg.Policy, cfg.Dir)
	if err != nil {
		return nil, err
	}
	g.policy = pol
	for _, h := range cfg.Policy.Hooks {
		g.before = append(g.before, commandHook(h, cfg.Dir))
	}
	// Every secret_env value and OAuth client secret is a secret, wherever it
	// would be written.
	var secrets []string
	for _, s := range cfg.Servers {
		for _, hostVar := range s.SecretEnv {
			if v := os.Getenv(hostVar); v != "" {
				secrets = append(secrets, v)
			}
		}
		if s.OAuth != nil && s.OAuth.ClientSecretEnv != "" {
			if v := os.Getenv(s.OAuth.ClientSecretEnv); v != "" {
				secrets = append(secrets, v)
			}
		}
	}
	secrets = append(secrets, opts.Secrets...)
	g.redactor = redact.New(secrets)
	for _, v := range secrets {
		if len(v) >= redact.MinSecretLen {
			g.secrets = append(g.secrets, v)
		}
	}
	record := cfg.Audit.RecordValues
	g.values = func(tool string) bool {
		return slices.Equal(record, []string{"*"}) || slices.Contains(record, tool)
	}
	pr := principalFor(cfg, opts.Principal)
	g.principal = policy.Principal{Tenant: pr.Tenant, User: pr.User}
	if opts.Store != nil {
		g.store = opts.Store
	} else {
		db, err := OpenStore(stateDir)
		if err != nil {
			return nil, err
		}
		g.store, g.ownStore = db, true
	}
	return g, nil
}

// OpenStore opens the store a host keeps in a state directory by default:
// the SQLite database STATE/airlock.db with the journal, approvals and the
// audit trail.
func OpenStore(stateDir string) (store.Store, error) {
	db, err := sqlite.Open(filepath.Join(stateDir, "airlock.db"))
	if err != nil {
		return nil, fmt.Errorf("cannot open the journal: %w", err)
	}
	return db, nil
}

func (g *governance) close() error {
	if g.ownStore {
		return g.store.Close()
	}
	return nil
}

// audit appends an event; a failure to audit is logged, and never changes
// what a call does.
func (h *Host) audit(ctx context.Context, e store.Event) {
	e.Time = h.gov.now()
	for k, v := range e.Fields {
		if !hostFields[k] {
			e.Fields[k] = h.gov.redactor.Value(v)
		}
	}
	h.auditLog.append(e)
}

// hostFields are audit fields the host makes itself, from ids, counts,
// policy text and values already redacted: they need no second pass.
// Everything else (errors, a hook's reason, notes) may carry a server's
// or a person's text and is redacted.
var hostFields = map[string]bool{
	"decision": true, "rule": true, "effect": true, "attempt": true, "intent": true, "approval": true,
	"recovery": true, "generation": true, "tools": true, "task": true, "protocol_version": true,
	"artifact": true, "media_type": true, "size": true,
	"args": true, "args_shape": true, "args_hash": true, "result": true, "result_shape": true, "result_hash": true,
}

// argsRecord is how arguments and results appear in the audit trail: their
// shape and hash, or (where the configuration asks) their redacted values.
// The work is done by the audit writer, off the call's path: v must not
// change afterwards (arguments and results are not changed once decoded).
func (h *Host) argsRecord(tool string, v any, prefix string, fields map[string]any) {
	fields[prefix] = deferredValue{v: v, tool: tool}
}

// A deferredValue is an argument or result the audit writer turns into its
// record (see argsRecord).
type deferredValue struct {
	v    any
	tool string
}

// prepareEvent replaces deferred values by their records. It runs on the
// audit writer.
func (g *governance) prepareEvent(e *store.Event) {
	for k, f := range e.Fields {
		d, ok := f.(deferredValue)
		if !ok {
			continue
		}
		delete(e.Fields, k)
		e.Fields[k+"_shape"] = g.redactor.Shape(d.v)
		e.Fields[k+"_hash"] = canonical.Hash(d.v)
		if g.values(d.tool) {
			e.Fields[k] = g.redactor.Value(d.v)
		}
	}
}

func (h *Host) runBeforeHooks(ctx context.Context, info *CallInfo) HookVerdict {
	var v HookVerdict
	for _, hook := range h.gov.before {
		hv := hook(ctx, info)
		if stricter(v.Decision, hv.Decision) != v.Decision {
			v = hv
		}
		if v.Decision == Deny {
			break
		}
	}
	return v
}

func (h *Host) runAfterHooks(ctx context.Context, info *CallInfo, r *Result) *Result {
	for _, hook := range h.gov.after {
		hook(ctx, info, r)
	}
	return r
}

func (h *Host) auditDecision(ctx context.Context, snap *Snapshot, tool *catalog.Tool, info *CallInfo, d Decision) {
	fields := map[string]any{"decision": d.Verdict, "rule": d.Rule, "reason": d.Reason, "effect": string(tool.Effect),
		"generation": snap.Generation()}
	h.argsRecord(tool.Name, info.Arguments, "args", fields)
	h.audit(ctx, store.Event{Event: store.EventDecision, Server: tool.Server, Tool: tool.Name, Snapshot: snap.ID(), Fields: fields})
}

// approve settles a call that policy wants approved. It returns nil when the
// call may go on (a grant for exactly this call was used), else the result
// to return: approval_required, or denied.
func (h *Host) approve(ctx context.Context, snap *Snapshot, srv *server, tool *catalog.Tool, args map[string]any, d policy.Decision, reason string, r *Result) *Result {
	fail := func(kind Kind, cause error, format string, a ...any) *Result {
		return r.fail(newError(kind, tool.Server, tool.Name, cause, format, a...))
	}
	digest, err := policy.Digest(policy.DigestInput{Server: tool.Server, Tool: tool.Name, RemoteTool: tool.Remote,
		Description: tool.Description, InputSchema: tool.Input.JSON(), Arguments: args, WorkDir: srv.cfg.Cwd})
	if err != nil {
		return fail(Denied, err, "%s refused: cannot bind an approval to these arguments: %v", tool.Name, err)
	}
	approvals := h.gov.store.Approvals()
	now := h.gov.now()
	used := func(a store.Approval) *Result {
		r.ApprovalID = a.ID
		h.audit(ctx, store.Event{Event: "approval_used", Server: tool.Server, Tool: tool.Name, Snapshot: snap.ID(),
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
			Arguments: args, Principal: snap.who.policy(), Annotations: tool.Annotations}, d, h.gov.redactor.Value)
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

// Decide grants or denies a pending approval request, once.
func (h *Host) Decide(ctx context.Context, id string, grant bool, by, note string) error {
	return DecideApproval(ctx, h.gov.store, id, grant, by, h.gov.redactor.String(note))
}

// DecideApproval grants or denies a pending approval request in st, once,
// and records it in the audit trail. A grant lets exactly one call with the
// approved arguments run, until the request expires.
func DecideApproval(ctx context.Context, st store.Store, id string, grant bool, by, note string) error {
	var r *redact.Redactor // the built-in credential formats
	if err := st.Approvals().Decide(ctx, id, grant, by, r.String(note)); err != nil {
		return fmt.Errorf("approval %s: %w", id, err)
	}
	ev := store.EventApprovalDenied
	if grant {
		ev = store.EventApprovalGranted
	}
	a, _ := st.Approvals().Get(ctx, id)
	st.Audit().Append(context.WithoutCancel(ctx), store.Event{Time: time.Now(), Event: ev, Server: a.Server, Tool: a.Tool,
		Fields: map[string]any{"approval": id, "by": by}})
	return nil
}

// ResolveRecovery records what a person found out about a call whose
// outcome was unknown: applied or not-applied, once.
func ResolveRecovery(ctx context.Context, st store.Store, id string, r store.Resolution, note, by string) error {
	var red *redact.Redactor // the built-in credential formats
	if err := st.Journal().Resolve(ctx, id, r, red.String(note), by); err != nil {
		return fmt.Errorf("recovery record %s: %w", id, err)
	}
	rec, _ := st.Journal().Get(ctx, id)
	st.Audit().Append(context.WithoutCancel(ctx), store.Event{Time: time.Now(), Event: store.EventRecoveryResolved, Server: rec.Server,
		Tool: rec.Tool, Fields: map[string]any{"recovery": id, "resolution": string(r), "by": by}})
	return nil
}

// beginIntent writes the journal's intent for a call that is not a read,
// and returns its id ("" for a read, which the journal does not track).
func (h *Host) beginIntent(ctx context.Context, snap *Snapshot, tool *catalog.Tool, c Call, args map[string]any, d policy.Decision) (string, error) {
	if d.Effect == policy.Read {
		return "", nil
	}
	in := store.Intent{ID: store.NewID("rec_"), CallID: c.ID, Server: tool.Server, Tool: tool.Name, RemoteTool: tool.Remote,
		ArgsHash: canonical.Hash(args), Snapshot: snap.ID(), Effect: string(d.Effect), Idempotent: d.Idempotent,
		Tenant: snap.who.Tenant, User: snap.who.User, CreatedAt: h.gov.now()}
	if err := h.gov.store.Journal().Begin(context.WithoutCancel(ctx), in); err != nil {
		return "", err
	}
	return in.ID, nil
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

// recordResult writes the result of a call to the audit trail.
func (h *Host) recordResult(ctx context.Context, snap *Snapshot, c Call, info *CallInfo, r *Result) {
	fields := map[string]any{"generation": snap.Generation(), "trace_id": r.TraceID, "tenant": upstream.Fingerprint(snap.who.Tenant)}
	if r.QueueWait > 0 {
		fields["queue_wait_ms"] = r.QueueWait.Milliseconds()
	}
	if l := r.sent; l != nil {
		fields["connection"] = l.gen
		if id := l.conn.SessionID(); id != "" {
			fields["session"] = upstream.Fingerprint(id)
		}
	}
	if r.Err != nil {
		fields["error"] = r.Err.Msg
	}
	if r.ApprovalID != "" {
		fields["approval"] = r.ApprovalID
	}
	if r.RecoveryID != "" {
		fields["recovery"] = r.RecoveryID
	}
	server := ""
	if info != nil {
		server = info.Server
		if r.Structured != nil {
			h.argsRecord(info.Name, r.Structured, "result", fields)
		}
	}
	h.audit(ctx, store.Event{Event: store.EventResult, Server: server, Tool: c.Name, Snapshot: snap.ID(),
		Class: string(r.Status), DurationMS: r.Duration.Milliseconds(), Fields: fields})
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

// scrub replaces the exact values of configured secrets in text a model or
// a file will see. Unlike the audit trail's redaction it leaves credential-
// looking text alone: a tool may legitimately return a token the agent asked
// for, but never one the host holds for a server.
func (g *governance) scrub(s string) string {
	for _, v := range g.secrets {
		s = strings.ReplaceAll(s, v, "[REDACTED:secret]")
	}
	return s
}

// scrubValue applies scrub to every string of a decoded JSON value.
func (g *governance) scrubValue(v any) any {
	if len(g.secrets) == 0 {
		return v
	}
	switch x := v.(type) {
	case string:
		return g.scrub(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = g.scrubValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[g.scrub(k)] = g.scrubValue(e)
		}
		return out
	}
	return v
}
