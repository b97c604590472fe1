package airlock

import (
	"context"
	"time"

	"github.com/airlockhq/airlock/internal/catalog"
	"github.com/airlockhq/airlock/internal/telemetry"
	"github.com/airlockhq/airlock/policy"
	"github.com/airlockhq/airlock/store"
)

// Reading a resource and getting a prompt run the front of a tool call's
// pipeline (call.go) on a request of their own: registered with the host
// and the task, counted in the turn, hooks and policy (ask: an approval
// bound to exactly what is read or got), the route and backpressure. They
// change nothing, so nothing is journaled; what the server answers is
// checked and turned into what the caller sees by readResource and
// getPrompt. q.tool stands for what is accessed: for a resource, the
// method with the URI as its description, so that an approval, and a
// remembered "always", is bound to that one URI on that server.

// access runs q through the stages every access shares and sends it with
// send when they let it through. q.tool, q.srv and q.args are set; the
// result is q.r.
func (h *Host) access(ctx context.Context, q *request, kind policy.Kind, resource string, send func(context.Context, *request) *Result) *Result {
	snap, r, tool := q.snap, q.r, q.tool
	q.kind, q.resource = kind, resource
	ctx, leave, err := h.calls.enter(ctx)
	if err != nil {
		return r.fail(newError(Cancelled, tool.Server, tool.Name, err, "the host is closing"))
	}
	defer leave()
	if t := snap.task; t != nil {
		var leave func()
		if ctx, leave, err = t.calls.enter(ctx); err != nil {
			return r.fail(newError(Cancelled, tool.Server, tool.Name, err, "task %s is closing", t.info.ID))
		}
		defer leave()
	}
	if t := snap.turn; t != nil && h.cfg.Limits.MaxCallsPerTurn > 0 {
		if n := t.calls.Add(1); n > int64(h.cfg.Limits.MaxCallsPerTurn) {
			return q.fail(Denied, nil, "refused: this turn already made %d calls (limits.max_calls_per_turn); end the turn", h.cfg.Limits.MaxCallsPerTurn)
		}
	}
	q.info = &CallInfo{ToolCallID: q.call.ID, Name: tool.Name, Server: tool.Server, RemoteName: tool.Remote,
		Arguments: q.args, Snapshot: snap.ID(), Effect: tool.Effect}
	if snap.task != nil {
		q.info.Task = snap.task.info.ID
	}
	hook := h.runBeforeHooks(ctx, q.info)
	q.decision = h.gov.policy.Decide(policy.Request{Kind: kind, Resource: resource, Server: tool.Server, Tool: tool.Name,
		RemoteTool: tool.Remote, Arguments: q.args, Principal: snap.who})
	r.Decision = Decision{Verdict: q.decision.Verdict, Rule: q.decision.Rule, Reason: q.decision.Reason}
	if hook.Decision != "" && policy.Stricter(r.Decision.Verdict, hook.Decision) != r.Decision.Verdict {
		r.Decision = Decision{Verdict: hook.Decision, Rule: "hook", Reason: hook.Reason}
	}
	h.auditDecision(ctx, q)
	switch r.Decision.Verdict {
	case Allow:
	case Ask:
		if res := h.approve(ctx, q); res != nil {
			return res
		}
	default:
		return q.fail(Denied, nil, "%s refused: %s", tool.Name, r.Decision.Reason)
	}
	if err := h.routeCall(ctx, q); err != nil {
		return r.fail(err)
	}
	leaveTenant, err := h.tenants.enter(snap.who.Tenant)
	if err != nil {
		return q.fail(Busy, err, "%s: %v", tool.Name, err)
	}
	defer leaveTenant()
	wait, release, err := q.route.acquire(ctx)
	r.QueueWait = wait
	if err != nil {
		if ctx.Err() != nil {
			return q.fail(Cancelled, err, "%s: cancelled while waiting for server %s", tool.Name, tool.Server)
		}
		return q.fail(Busy, err, "%s: %v", tool.Name, err)
	}
	defer release()
	h.audit(ctx, q.event(store.EventCallSent, map[string]any{"attempt": 1}))
	q.sent = q.link
	res := send(ctx, q)
	if res.Status == OK {
		q.srv.setStatus(func(st *ServerStatus) { st.LastOK = time.Now() })
	}
	return res
}

// newAccess starts the request of an access through snap, for tool (what
// is accessed) on srv.
func newAccess(ctx context.Context, snap *Snapshot, id string, tool *catalog.Tool, srv *server, args map[string]any) *request {
	return &request{call: Call{ID: id, Name: tool.Name}, snap: snap, tool: tool, srv: srv, args: args,
		r: &Result{ToolCallID: id, CallID: store.NewID("call_"), Snapshot: snap.ID(), TraceID: telemetry.TraceID(ctx)}}
}
