package airlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/catalog"
	"github.com/airlockhq/airlock/internal/schema"
	"github.com/airlockhq/airlock/internal/telemetry"
	"github.com/airlockhq/airlock/internal/upstream"
	"github.com/airlockhq/airlock/policy"
	"github.com/airlockhq/airlock/store"
)

// Call runs one tool call through the pipeline, resolving its name against
// snap (the snapshot of the caller's turn). It never panics on bad input and
// always returns a Result; Result.Status says what happened.
//
// Nothing reaches a server unless the name is in the snapshot, the
// arguments are strict JSON, hooks and policy let the call through (a
// person approving it when policy says ask), the arguments match the tool's
// input schema, and a call that may change the world is written to the
// journal first. The value that was checked is the value that is sent.
func (h *Host) Call(ctx context.Context, snap *Snapshot, c Call) *Result {
	began := time.Now()
	r := &Result{ToolCallID: c.ID, Snapshot: snap.ID(), TraceID: telemetry.TraceID(ctx)}
	var info *CallInfo
	defer func() {
		r.Duration = time.Since(began)
		// A server's secret never reaches the caller, even in an error.
		r.Content = h.gov.scrub(r.Content)
		if r.Err != nil {
			r.Err.Msg = h.gov.scrub(r.Err.Msg)
		}
		h.recordResult(ctx, snap, c, info, r)
	}()

	// A call is registered with the host, and with its task, so that
	// closing either can wait for it or cancel it; once closing has begun,
	// new calls are refused.
	hostCtx, leave, err := h.calls.enter(ctx)
	if err != nil {
		return r.fail(newError(Cancelled, "", c.Name, err, "the host is closing"))
	}
	defer leave()
	ctx = hostCtx
	if t := snap.task; t != nil {
		taskCtx, leave, err := t.calls.enter(ctx)
		if err != nil {
			return r.fail(newError(Cancelled, "", c.Name, err, "task %s is closing", t.info.ID))
		}
		defer leave()
		ctx = taskCtx
	}

	// A turn may make only so many calls: a model stuck in a loop stops
	// here, before any server sees it.
	if t := snap.turn; t != nil && h.cfg.Limits.MaxCallsPerTurn > 0 {
		if n := t.calls.Add(1); n > int64(h.cfg.Limits.MaxCallsPerTurn) {
			return r.fail(newError(Denied, "", c.Name, nil,
				"refused: this turn already made %d tool calls (limits.max_calls_per_turn); end the turn", h.cfg.Limits.MaxCallsPerTurn))
		}
	}

	// Resolve the local name in the turn's snapshot. A name the model made
	// up, or one from another snapshot, reaches no server.
	tool, ok := snap.snap.Lookup(c.Name)
	if !ok {
		if srv := snap.loginPending(c.Name); srv != nil {
			// Its server lists no tools until someone logs in; the person
			// is told so, not the model that a tool does not exist.
			return r.fail(newError(AuthRequired, srv.cfg.ID, c.Name, nil,
				"%s: server %s lists its tools only after a login: run airlock auth login %s", c.Name, srv.cfg.ID, srv.cfg.ID))
		}
		return r.fail(newError(UnknownTool, "", c.Name, nil, "unknown tool %q: it is not in the catalog", c.Name))
	}
	srv := snap.servers[tool.Server]
	fail := func(kind Kind, cause error, format string, args ...any) *Result {
		return r.fail(newError(kind, tool.Server, tool.Name, cause, format, args...))
	}

	// Decode the arguments strictly: duplicate keys, keys that differ only
	// in case, invalid UTF-8 and deep nesting are refused, so that no later
	// stage (or the server's own decoder) can see a different value.
	args, err := decodeArguments(c.Arguments)
	if err == nil {
		err = tool.Input.CheckCaseVariants(args)
	}
	if err != nil {
		return fail(InvalidArguments, err, "invalid arguments for %s: %v", tool.Name, err)
	}
	info = &CallInfo{ToolCallID: c.ID, Name: tool.Name, Server: tool.Server, RemoteName: tool.Remote,
		Arguments: args, Snapshot: snap.ID(), Effect: tool.Effect}
	if snap.task != nil {
		info.Task = snap.task.info.ID
	}

	// Before hooks, then policy: the stricter verdict wins, and a server's
	// own annotations never make a call more permitted.
	hook := h.runBeforeHooks(ctx, info)
	d := h.gov.policy.Decide(policy.Request{Server: tool.Server, Tool: tool.Name, RemoteTool: tool.Remote,
		Arguments: args, Principal: snap.who, Annotations: tool.Annotations})
	verdict, rule, reason := d.Verdict, d.Rule, d.Reason
	if hook.Decision != "" && policy.Stricter(verdict, hook.Decision) != verdict {
		verdict, rule, reason = hook.Decision, "hook", hook.Reason
	}
	r.Decision = Decision{Verdict: verdict, Rule: rule, Reason: reason}
	h.auditDecision(ctx, snap, tool, info, r.Decision)
	switch verdict {
	case policy.Allow:
	case policy.Ask:
		if res := h.approve(ctx, snap, srv, tool, args, d, reason, r); res != nil {
			return res
		}
	default: // deny, and anything unforeseen: fail closed
		return fail(Denied, nil, "%s refused: %s", tool.Name, reason)
	}

	// Validate against the input schema of this snapshot.
	if err := tool.Input.Validate(args); err != nil {
		return fail(InvalidArguments, err, "invalid arguments for %s: %v", tool.Name, err)
	}

	// Find the server's live connection: the snapshot's own, so a task's
	// tools reach that task's servers and no other's.
	// A partitioned server's connection is the one of the principal the
	// call is made for.
	rt, cerr := h.routeFor(srv, snap.who)
	if cerr != nil {
		cerr.Tool = tool.Name
		return r.fail(cerr)
	}
	l, cerr := h.conn(ctx, rt, tool)
	if cerr != nil {
		return r.fail(cerr)
	}

	// Backpressure: the tenant's calls in flight, then one of the server's
	// slots, waited for at most queue_timeout. A call that gets none is
	// busy and was never sent.
	leaveTenant, err := h.tenants.enter(snap.who.Tenant)
	if err != nil {
		return fail(Denied, err, "%s refused: %v", tool.Name, err)
	}
	defer leaveTenant()
	wait, release, err := rt.acquire(ctx)
	r.QueueWait = wait
	if err != nil {
		if ctx.Err() != nil {
			return fail(Cancelled, err, "%s: cancelled while waiting for server %s", tool.Name, tool.Server)
		}
		return fail(Busy, err, "%s: %v", tool.Name, err)
	}
	released := false
	defer func() {
		if !released {
			release()
		}
	}()

	// Send tools/call, bounded by the server's request timeout. A call that
	// may change the world is written to the journal first (if that fails,
	// nothing is sent), and ends in exactly one outcome there. A call whose
	// outcome is unknown is never sent again, unless local policy marks the
	// tool idempotent: then it is retried once.
	var res *mcp.CallToolResult
	for attempt := 1; ; attempt++ {
		intent, err := h.beginIntent(ctx, snap, tool, c, args, d)
		if err != nil {
			return fail(Denied, err, "%s refused: the journal cannot record it (%v)", tool.Name, err)
		}
		h.audit(ctx, store.Event{Event: store.EventCallSent, Server: tool.Server, Tool: tool.Name, Snapshot: snap.ID(),
			Fields: map[string]any{"attempt": attempt, "intent": intent}})
		var cerr error
		r.sent = l
		res, cerr = h.send(ctx, srv, l.conn, tool, args)
		if cerr == nil {
			outcome := store.OutcomeSucceeded
			if res.IsError {
				outcome = store.OutcomeFailed
			}
			h.endIntent(intent, outcome, "")
			break
		}
		e := h.callError(ctx, srv, tool, l.conn, cerr)
		if refusedUnread(cerr) {
			// The server refused the request without acting on it: its
			// session was gone (HTTP 404), or it wanted credentials.
			h.endIntent(intent, store.OutcomeFailed, e.Msg)
			if attempt == 1 && errors.Is(cerr, mcp.ErrSessionMissing) && ctx.Err() == nil {
				// The same call goes once more, on the new session.
				if next, nerr := h.reconnected(ctx, rt, l); nerr == nil {
					l = next
					continue
				}
			}
			return r.fail(e)
		}
		if intent == "" {
			return r.fail(e) // a read: nothing to recover, and not replayed
		}
		var werr *jsonrpc.Error
		if errors.As(cerr, &werr) {
			// The server answered: it failed, and said so.
			h.endIntent(intent, store.OutcomeFailed, e.Msg)
			return r.fail(e)
		}
		h.endIntent(intent, store.OutcomeUnknown, e.Msg)
		if attempt == 1 && d.Idempotent && e.Kind == ConnectionError && ctx.Err() == nil {
			// Local policy says sending it again is harmless.
			next, ok := h.retryOn(ctx, rt, l)
			if !ok {
				return r.fail(e)
			}
			l = next
			continue
		}
		r.RecoveryID = intent
		return r.fail(newError(OutcomeUnknown, tool.Server, tool.Name, cerr,
			"%s: %s; it may or may not have taken effect, and will not be sent again: check, then run airlock recovery resolve %s", tool.Name, e.Msg, intent))
	}
	release()
	released = true
	srv.setStatus(func(st *ServerStatus) { st.LastOK = time.Now() })

	// A tool error is a normal answer: its text goes back to the model and
	// the connection stays.
	if res.IsError {
		content, artifacts, err := h.render(ctx, snap, tool, res.Content)
		if err != nil {
			return fail(ContractError, err, "%s: %v", tool.Name, err)
		}
		r.Status, r.Content, r.Artifacts = ToolError, content, artifacts
		r.Err = newError(ToolError, tool.Server, tool.Name, nil, "%s", content)
		return h.runAfterHooks(ctx, info, r)
	}

	// Check the result against the snapshot's output schema: a server that
	// declared one must keep to it.
	if tool.Output != nil {
		if res.StructuredContent == nil {
			return fail(ContractError, nil, "%s: server returned no structuredContent although the tool declares an outputSchema", tool.Name)
		}
		if err := tool.Output.Validate(res.StructuredContent); err != nil {
			return fail(ContractError, err, "%s: structuredContent violates the tool's outputSchema: %v", tool.Name, err)
		}
	}
	var structured json.RawMessage
	if res.StructuredContent != nil {
		if structured, err = json.Marshal(h.gov.scrubValue(res.StructuredContent)); err != nil {
			return fail(ContractError, err, "%s: structuredContent cannot be encoded: %v", tool.Name, err)
		}
	}

	// Turn the content into what the model sees; binary and embedded
	// content goes to the artifact store.
	content, artifacts, err := h.render(ctx, snap, tool, res.Content)
	if err != nil {
		return fail(ContractError, err, "%s: %v", tool.Name, err)
	}
	if content == "" && structured != nil {
		content = string(structured)
	}
	r.Status, r.Content, r.Structured, r.Artifacts = OK, content, structured, artifacts
	return h.runAfterHooks(ctx, info, r)
}

func (r *Result) fail(e *Error) *Result {
	r.Status, r.Err = e.Kind, e
	if e.Kind.ModelVisible() {
		r.Content = e.Msg
	}
	return r
}

// decodeArguments decodes the model's arguments: empty means an empty
// object, anything but an object is refused.
func decodeArguments(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 {
		return map[string]any{}, nil
	}
	v, err := schema.Decode(raw, &schema.DecodeOptions{CaseFold: true})
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("arguments must be a JSON object")
	}
	return obj, nil
}

// send sends tools/call and waits for the answer up to the server's
// request timeout. With max_call_duration set, the host asks the server for
// progress, and each progress notification starts that wait again, up to
// max_call_duration in all. Cancelling ctx, or either bound, makes the SDK
// send notifications/cancelled.
func (h *Host) send(ctx context.Context, srv *server, conn *upstream.Conn, tool *catalog.Tool, args map[string]any) (*mcp.CallToolResult, error) {
	params := &mcp.CallToolParams{Name: tool.Remote, Arguments: args}
	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(srv.cfg.RequestTimeout, func() { cancel(errTimeout) })
	defer idle.Stop()
	sendCtx, note := callCtx, (*upstream.CallNote)(nil)
	if srv.cfg.Remote() {
		// A remote connection can break while the request waits (its
		// session gone, its stream cut): the call ends then. And only
		// there can a request be refused unread, fail on the way, or lose
		// its answer stream.
		stop := context.AfterFunc(conn.Live(), func() { cancel(errBroken) })
		defer stop()
		sendCtx, note = upstream.WithCallNote(callCtx)
	}
	if srv.cfg.MaxCallDuration > srv.cfg.RequestTimeout {
		limit := time.AfterFunc(srv.cfg.MaxCallDuration, func() { cancel(errTooLong) })
		defer limit.Stop()
		token, done := conn.WatchProgress(func() { idle.Reset(srv.cfg.RequestTimeout) })
		defer done()
		params.SetProgressToken(token)
	}
	res, err := conn.Session().CallTool(sendCtx, params)
	if err != nil && note != nil && ctx.Err() == nil {
		switch werr := note.WriteErr(); {
		case werr != nil && refusedUnread(werr):
			// The server refused the request (its session was gone, or
			// it wanted credentials). The refusal may also have broken
			// the connection and so cancelled the call: what counts is
			// that the request was never taken.
			err = werr
		case werr != nil:
			// Sending the request failed on the way (the SDK reports
			// this as a JSON-RPC error of its own, as if the server had
			// answered): the server may have received it.
			err = fmt.Errorf("%w: %v", errUndelivered, werr)
		case note.AnswerLost() && context.Cause(callCtx) == nil:
			err = fmt.Errorf("%w: %v", upstream.ErrAnswerLost, err)
		}
	}
	if err != nil && ctx.Err() == nil {
		if cause := context.Cause(callCtx); errors.Is(cause, errTimeout) || errors.Is(cause, errTooLong) {
			err = fmt.Errorf("%w: %w", cause, err)
		}
	}
	return res, err
}

var errTooLong = errors.New("still running at the absolute limit")

var errTimeout = errors.New("no answer in time")

var errBroken = errors.New("the connection broke")

var errUndelivered = errors.New("the connection failed while the request was being sent")

// callError classifies a failed tools/call.
func (h *Host) callError(ctx context.Context, srv *server, tool *catalog.Tool, conn *upstream.Conn, err error) *Error {
	e := func(kind Kind, format string, args ...any) *Error {
		return newError(kind, tool.Server, tool.Name, err, format, args...)
	}
	if ae := authError(tool.Server, tool.Name, err); ae != nil {
		return ae
	}
	if conn.Fault() == nil && ctx.Err() == nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		// The server's output ended: the connection is about to say why
		// (the process exited, and with what), which decides the class.
		select {
		case <-conn.Broken():
		case <-time.After(2 * time.Second):
		}
	}
	var werr *jsonrpc.Error
	switch f := conn.Fault(); {
	case ctx.Err() != nil:
		return e(Cancelled, "%s: cancelled", tool.Name)
	case errors.Is(err, mcp.ErrSessionMissing):
		return e(ConnectionError, "%s: the server ended the session before the call reached it; it was not run", tool.Name)
	case errors.Is(err, errTimeout):
		return e(ConnectionError, "%s: no answer within %s (request_timeout); the request was cancelled", tool.Name, srv.cfg.RequestTimeout)
	case errors.Is(err, errTooLong):
		return e(ConnectionError, "%s: still running after %s (max_call_duration), however much progress it reported; the request was cancelled",
			tool.Name, srv.cfg.MaxCallDuration)
	case f != nil && f.Contract():
		return e(ContractError, "%s: %s", tool.Name, f.Msg)
	case errors.Is(err, errUndelivered), errors.Is(err, upstream.ErrAnswerLost):
		return e(ConnectionError, "%s: %v", tool.Name, err)
	case f != nil:
		return e(ConnectionError, "%s: %s", tool.Name, f.Msg)
	case errors.As(err, &werr):
		return e(ConnectionError, "%s: server answered with JSON-RPC error %d: %s", tool.Name, werr.Code, werr.Message)
	case errors.Is(err, mcp.ErrConnectionClosed):
		return e(ConnectionError, "%s: connection to server %s closed", tool.Name, tool.Server)
	}
	// The connection is healthy, so the SDK could not make sense of the
	// answer: the server broke the protocol contract.
	return e(ContractError, "%s: malformed result: %v", tool.Name, err)
}
