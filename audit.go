package airlock

import (
	"context"

	"github.com/airlockhq/airlock/internal/canonical"
	"github.com/airlockhq/airlock/internal/upstream"
	"github.com/airlockhq/airlock/store"
)

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

// auditDecision records what hooks and policy decided about q.
func (h *Host) auditDecision(ctx context.Context, q *request) {
	d := q.r.Decision
	fields := map[string]any{"decision": d.Verdict, "rule": d.Rule, "reason": d.Reason, "effect": q.tool.Effect,
		"generation": q.snap.Generation()}
	h.argsRecord(q.tool.Name, q.args, "args", fields)
	h.audit(ctx, store.Event{Event: store.EventDecision, Server: q.tool.Server, Tool: q.tool.Name, Snapshot: q.snap.ID(), Fields: fields})
}

// recordResult writes the result of a call to the audit trail.
func (h *Host) recordResult(ctx context.Context, q *request) {
	snap, r := q.snap, q.r
	fields := map[string]any{"generation": snap.Generation(), "trace_id": r.TraceID, "tenant": upstream.Fingerprint(snap.who.Tenant)}
	if r.QueueWait > 0 {
		fields["queue_wait_ms"] = r.QueueWait.Milliseconds()
	}
	if l := q.sent; l != nil {
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
	if q.tool != nil {
		server = q.tool.Server
		if r.Structured != nil {
			h.argsRecord(q.tool.Name, r.Structured, "result", fields)
		}
	}
	h.audit(ctx, store.Event{Event: store.EventResult, Server: server, Tool: q.call.Name, Snapshot: snap.ID(),
		Class: string(r.Status), DurationMS: r.Duration.Milliseconds(), Fields: fields})
}
