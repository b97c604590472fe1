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
	ctx, leave, res := h.admit(ctx, q)
	if res != nil {
		return res
	}
	defer leave()
	q.describe()
	if res := h.govern(ctx, q, policy.Request{Kind: kind, Resource: resource, Server: tool.Server, Tool: tool.Name,
		RemoteTool: tool.Remote, Arguments: q.args, Principal: snap.who}); res != nil {
		return res
	}
	if err := h.routeCall(ctx, q); err != nil {
		return r.fail(err)
	}
	release, res := h.room(ctx, q)
	if res != nil {
		return res
	}
	defer release()
	h.auditSent(ctx, q, 1, map[string]any{})
	q.sent = q.link
	res = send(ctx, q)
	if res.Status == OK {
		q.srv.setStatus(func(st *ServerStatus) { st.LastOK = time.Now() })
	}
	return res
}

// newAccess starts the request of an access through snap, for tool (what
// is accessed) on srv.
func newAccess(ctx context.Context, snap *Snapshot, kind policy.Kind, id string, tool *catalog.Tool, srv *server, args map[string]any) *request {
	return &request{call: Call{ID: id, Name: tool.Name}, snap: snap, kind: kind, tool: tool, srv: srv, args: args,
		r: &Result{ToolCallID: id, CallID: store.NewID("call_"), Snapshot: snap.ID(), TraceID: telemetry.TraceID(ctx)}}
}
