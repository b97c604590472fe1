package airlock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/airlockhq/airlock/internal/catalog"
	"github.com/airlockhq/airlock/internal/schema"
	"github.com/airlockhq/airlock/internal/telemetry"
	"github.com/airlockhq/airlock/internal/upstream"
	"github.com/airlockhq/airlock/policy"
	"github.com/airlockhq/airlock/store"
)

// A request is one call on its way through the pipeline, the way the SDK's
// ServerRequest carries a request: what the call resolved to and what each
// stage found. Each stage reads what earlier ones filled in and adds its
// own; Result is what the caller gets.
type request struct {
	call Call
	snap *Snapshot
	r    *Result

	tool     *catalog.Tool   // the snapshot's binding; nil until resolved
	srv      *server         // the server the tool belongs to
	args     map[string]any  // decoded strictly: the one value checked and sent
	info     *CallInfo       // what hooks see
	decision policy.Decision // policy's own, before hooks

	route  route               // where the call goes
	link   *link               // the route's live connection, which the call goes out on
	sent   *link               // the connection it was last sent on; nil until sent
	late   *upstream.LateWatch // catches an answer that comes after the host stopped waiting
	intent string              // its journal record; "" for a read, which has none
	res    *mcp.CallToolResult // the server's answer; nil until it answers
	// undeclared is the method of a request for a client feature the host
	// did not declare, sent by the server during the call; "" if none.
	undeclared string
	// kind is what is asked of the server: a tool call, or (access.go) a
	// resource read, with its URI in resource, or a prompt get.
	kind     policy.Kind
	resource string
	// fold holds the decision and call_sent events of a read allowed
	// without asking, for its result event to carry; nil for other calls.
	fold *fold
	// span is the request's trace span (spans.go); nil when the host
	// makes none.
	span trace.Span
	// exact is the structuredContent of the round's tools/call result as
	// the server wrote it, numbers as json.Number (the SDK's float64
	// loses digits past 2^53); nil until a result came with one.
	exact atomic.Pointer[any]
}

// fail ends q with an error about its tool.
func (q *request) fail(kind Kind, cause error, format string, args ...any) *Result {
	return q.r.fail(newError(kind, q.tool.Server, q.tool.Name, cause, format, args...))
}

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
	ctx, span := h.spans.start(ctx, "tools/call")
	q := &request{call: c, snap: snap, span: span, r: &Result{ToolCallID: c.ID, CallID: store.NewID("call_"), Snapshot: snap.ID(),
		TraceID: telemetry.TraceID(ctx)}}
	defer h.finish(ctx, q, began)
	r := q.r

	ctx, leave, failed := h.admit(ctx, q)
	if c.Admitted != nil {
		c.Admitted()
	}
	if failed != nil {
		return failed
	}
	defer leave()

	// Resolve the local name in the turn's snapshot. A name the model made
	// up, or one from another snapshot, reaches no server.
	var err error
	tool, ok := snap.snap.Lookup(c.Name)
	if !ok {
		if srv := snap.loginPending(c.Name); srv != nil {
			// Its server lists no tools until someone logs in; the person
			// is told so, not the model that a tool does not exist. A
			// login made since (in another process) is taken up now, and
			// the tools join the catalog at the next turn.
			if _, err := h.relogin(ctx, srv, c.Name); err == nil {
				return r.fail(newError(ConnectionError, srv.cfg.ID, c.Name, nil,
					"%s: server %s is logged in now, and lists its tools from the next turn on (the shell's turn, Host.BeginTurn): call it then", c.Name, srv.cfg.ID))
			}
			return r.fail(newError(AuthRequired, srv.cfg.ID, c.Name, nil,
				"%s: server %s lists its tools only after a login: run airlock auth login %s", c.Name, srv.cfg.ID, srv.cfg.ID))
		}
		if srv := snap.notRunning(c.Name); srv != nil {
			// The tool is allowed, but its server is down: the harness
			// is told that, not the model that the tool does not exist.
			return r.fail(downError(srv, c.Name, "tools"))
		}
		return r.fail(newError(UnknownTool, "", c.Name, nil, "unknown tool %q: it is not in the catalog", c.Name))
	}
	q.tool, q.srv = tool, snap.servers[tool.Server]

	// Decode the arguments strictly: duplicate keys, keys that differ only
	// in case, invalid UTF-8 and deep nesting are refused, so that no later
	// stage (or the server's own decoder) can see a different value.
	if q.args, err = decodeArguments(c.Arguments); err == nil {
		err = tool.Input.CheckCaseVariants(q.args)
	}
	if err != nil {
		return q.fail(InvalidArguments, err, "invalid arguments for %s: %v", tool.Name, err)
	}
	q.describe()

	// Before hooks, then policy: the stricter verdict wins, and a server's
	// own annotations never make a call more permitted. Ask goes to a
	// person, through an approval bound to exactly this call.
	if res := h.govern(ctx, q, policy.Request{Server: tool.Server, Tool: tool.Name, RemoteTool: tool.Remote,
		Arguments: q.args, Principal: snap.who, Annotations: tool.Annotations}); res != nil {
		return res
	}

	// Validate against the input schema of this snapshot.
	if err := tool.Input.Validate(q.args); err != nil {
		return q.fail(InvalidArguments, err, "invalid arguments for %s: %v", tool.Name, err)
	}

	// Find the call's connection: its server's in the snapshot (so a
	// task's tools reach that task's servers and no other's), and for a
	// partitioned server, the one of the principal the call is made for.
	if err := h.routeCall(ctx, q); err != nil {
		return r.fail(err)
	}

	release, failed := h.room(ctx, q)
	if failed != nil {
		return failed
	}

	// Send it, journaled, and never twice by guessing (see sendCall).
	res, failed := h.sendCall(ctx, q)
	release()
	if failed != nil {
		return failed
	}
	q.srv.setStatus(func(st *ServerStatus) { st.LastOK = time.Now() })

	// Turn the answer into what the caller sees.
	return h.answer(ctx, q, res)
}

// exactStructured is the structuredContent of a tools/call result as the
// server wrote it, numbers as json.Number; nil when it has none.
func exactStructured(raw json.RawMessage) *any {
	if !mayLoseDigits(raw) || !bytes.Contains(raw, []byte(`"structuredContent"`)) {
		return nil // the SDK's float64 keeps every number it holds
	}
	var res struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if json.Unmarshal(raw, &res) != nil || len(res.StructuredContent) == 0 {
		return nil
	}
	v, err := schema.Decode(res.StructuredContent, &schema.DecodeOptions{MaxDepth: 10000, MaxBytes: len(res.StructuredContent)})
	if err != nil {
		return nil
	}
	return &v
}

// mayLoseDigits reports whether raw holds a number that a float64 may not
// keep exactly: one of 16 significant digits or more (every number of 15
// or fewer is kept). A run of digits in a string counts too; it only costs
// the exact decode.
func mayLoseDigits(raw []byte) bool {
	run := 0
	for _, c := range raw {
		switch {
		case '0' <= c && c <= '9':
			if run++; run >= 16 {
				return true
			}
		case c == '.':
		default:
			run = 0
		}
	}
	return false
}

// describe sets what hooks see of q.
func (q *request) describe() {
	tool := q.tool
	q.info = &CallInfo{ToolCallID: q.call.ID, Name: tool.Name, Server: tool.Server, RemoteName: tool.Remote,
		Arguments: q.args, Snapshot: q.snap.ID(), Effect: tool.Effect}
	if q.snap.task != nil {
		q.info.Task = q.snap.task.info.ID
	}
}

// govern runs the before hooks and policy on q (req is what policy
// decides): the stricter verdict wins, and a server's own annotations
// never make a call more permitted. Ask goes to a person, through an
// approval bound to exactly this call (approve); deny, and anything
// unforeseen, fails closed. A result means q ends there.
func (h *Host) govern(ctx context.Context, q *request, req policy.Request) *Result {
	r := q.r
	hook := h.runBeforeHooks(ctx, q.info)
	q.decision = h.gov.policy.Decide(req)
	r.Decision = Decision{Verdict: q.decision.Verdict, Rule: q.decision.Rule, Reason: q.decision.Reason}
	if hook.Decision != "" && policy.Stricter(r.Decision.Verdict, hook.Decision) != r.Decision.Verdict {
		r.Decision = Decision{Verdict: hook.Decision, Rule: "hook", Reason: hook.Reason}
	}
	h.auditDecision(ctx, q)
	switch r.Decision.Verdict {
	case Allow:
		return nil
	case Ask:
		// Nobody is asked about a call its input schema refuses: it could
		// never be sent, and would spend the grant. (An allowed call is
		// validated after govern; a denied one is refused unvalidated.)
		if err := q.tool.Input.Validate(q.args); err != nil {
			return q.fail(InvalidArguments, err, "invalid arguments for %s: %v", q.tool.Name, err)
		}
		return h.approve(ctx, q)
	}
	return q.fail(Denied, nil, "%s refused: %s", q.tool.Name, r.Decision.Reason)
}

// admit registers q with the host, and with its task, so that closing
// either can wait for it or cancel it (once closing has begun, new calls
// are refused), and counts it in its turn, the BeginTurn snapshot's or the
// one it names (turns.go): a model stuck in a loop stops here, before any
// server sees it. leave ends the registration; a result
// means q ends there.
func (h *Host) admit(ctx context.Context, q *request) (_ context.Context, leave func(), _ *Result) {
	name, snap, r := q.call.Name, q.snap, q.r
	ctx, leaveHost, err := h.calls.enter(ctx)
	if err != nil {
		return ctx, nil, r.fail(newError(Cancelled, "", name, err, "the host is closing"))
	}
	leave = leaveHost
	if t := snap.task; t != nil {
		var leaveTask func()
		if ctx, leaveTask, err = t.calls.enter(ctx); err != nil {
			leaveHost()
			return ctx, nil, r.fail(newError(Cancelled, "", name, err, "task %s is closing", t.info.ID))
		}
		leave = func() { leaveTask(); leaveHost() }
	}
	if t := snap.turn; t != nil && h.cfg.Limits.MaxCallsPerTurn > 0 {
		if n := t.calls.Add(1); n > int64(h.cfg.Limits.MaxCallsPerTurn) {
			leave()
			return ctx, nil, r.fail(newError(Denied, "", name, nil,
				"refused: this turn already made %d calls (limits.max_calls_per_turn); end the turn", h.cfg.Limits.MaxCallsPerTurn))
		}
	} else if q.call.Turn != "" && h.cfg.Limits.MaxCallsPerTurn > 0 {
		if r := h.countNamedTurn(ctx, q); r != nil {
			leave()
			return ctx, nil, r
		}
	}
	return ctx, leave, nil
}

// room is backpressure: the tenant's calls in flight, then one of q's
// route's slots, waited for at most queue_timeout; both in this process
// and, on a store that shares leases, across replicas. Both are capacity:
// a call that gets no room is busy, was never sent, and may be tried
// again; one that cannot be counted because the store does not answer is
// refused, never let through uncounted. release gives the room back; a
// result means q ends there.
func (h *Host) room(ctx context.Context, q *request) (release func(), _ *Result) {
	tool := q.tool
	release, err := h.takeRoom(ctx, q, true)
	if errors.As(err, new(*errUncounted)) && q.decision.Effect == policy.Read && ctx.Err() == nil {
		// The store that counts across replicas does not answer: a read
		// runs within this replica's own limits, as on one host, where
		// anything else is refused (it needs the store for its journal
		// too). Said once a minute at most: an outage is not a log storm.
		h.uncounted.Do(func() {
			h.log.Warn("the store cannot count calls across replicas: reads run within this replica's limits until it answers", "error", err)
		})
		release, err = h.takeRoom(ctx, q, false)
	}
	if err == nil {
		return release, nil
	}
	switch {
	case ctx.Err() != nil:
		return nil, q.fail(Cancelled, err, "%s: cancelled while waiting for server %s", tool.Name, tool.Server)
	case errors.As(err, new(*errUncounted)):
		return nil, q.fail(Denied, err, "%s refused: %v", tool.Name, err)
	}
	return nil, q.fail(Busy, err, "%s: %v", tool.Name, err)
}

// takeRoom takes q's place under its tenant's limit and one of its
// route's slots, across replicas too when shared (and the store shares
// leases).
func (h *Host) takeRoom(ctx context.Context, q *request, shared bool) (func(), error) {
	leaveTenant, err := h.enterTenant(ctx, q.snap.who.Tenant, shared)
	if err != nil {
		return nil, err
	}
	wait, releaseSlot, err := h.acquire(ctx, q.route, shared)
	q.r.QueueWait = wait
	if err != nil {
		leaveTenant()
		return nil, err
	}
	return func() { releaseSlot(); leaveTenant() }, nil
}

// answer turns the server's answer into q's result. A tool error is a
// normal answer: its text goes back to the model and the connection stays.
// Structured content must keep to the tool's output schema, when it
// declares one. Binary and embedded content goes to the artifact store.
func (h *Host) answer(ctx context.Context, q *request, res *mcp.CallToolResult) *Result {
	r := q.r
	q.res = res
	// A server that asked for a client feature the host did not declare
	// (an older server's roots/list, or sampling/createMessage where
	// sampling: is deny) was refused, and broke the contract: what it
	// answered after that is not passed on.
	if q.undeclared != "" {
		return q.fail(ContractError, nil, "%s: server %s sent %s during the call, which Airlock did not declare to it; the request was refused (method not found) and the call's result is not used",
			q.tool.Name, q.tool.Server, q.undeclared)
	}
	if res.IsError {
		out, err := h.render(ctx, q, res.Content)
		if err != nil {
			return q.fail(ContractError, err, "%s: %v", q.tool.Name, err)
		}
		r.Status, r.Content, r.Artifacts = ToolError, out.text, out.artifacts
		r.Err = newError(ToolError, q.tool.Server, q.tool.Name, nil, "%s", out.text)
		return h.runAfterHooks(ctx, q.info, r)
	}

	// Check the result against the snapshot's output schema: a server that
	// declared one must keep to it. Its numbers are taken as the server
	// wrote them: the SDK's float64 would round 9007199254740993 to
	// 9007199254740992, and check and pass on another value.
	sc := res.StructuredContent
	if exact := q.exact.Load(); sc != nil && exact != nil {
		sc = *exact
	}
	if q.tool.Output != nil {
		if sc == nil {
			return q.fail(ContractError, nil, "%s: server returned no structuredContent although the tool declares an outputSchema", q.tool.Name)
		}
		if err := q.tool.Output.Validate(sc); err != nil {
			return q.fail(ContractError, err, "%s: structuredContent violates the tool's outputSchema: %v", q.tool.Name, err)
		}
	}
	var structured json.RawMessage
	if sc != nil {
		var err error
		if structured, err = json.Marshal(h.gov.scrubValue(sc)); err != nil {
			return q.fail(ContractError, err, "%s: structuredContent cannot be encoded: %v", q.tool.Name, err)
		}
	}

	// Turn the content into what the model sees; binary and embedded
	// content goes to the artifact store.
	out, err := h.render(ctx, q, res.Content)
	if err != nil {
		return q.fail(ContractError, err, "%s: %v", q.tool.Name, err)
	}
	content := out.text
	if content == "" && structured != nil {
		content = string(structured)
	}
	r.Status, r.Content, r.Structured, r.Artifacts = OK, content, structured, out.artifacts
	r.ContentBlocks = out.blocks
	return h.runAfterHooks(ctx, q.info, r)
}

// finish completes every call's result, whichever stage ended it: no
// secret a server was given reaches the caller, even in an error, and the
// result goes to the audit trail.
func (h *Host) finish(ctx context.Context, q *request, began time.Time) {
	r := q.r
	r.Duration = time.Since(began)
	r.Content = h.gov.scrub(r.Content)
	if r.Err != nil {
		r.Err.Msg = h.gov.scrub(r.Err.Msg + h.lastWords(q))
	}
	h.recordResult(ctx, q)
	h.measure(q)
	h.endSpan(q)
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

// sendCall sends tools/call on q's connection and returns the server's
// answer, or the result the call ends with. A call that may change the
// world is written to the journal first (if that fails, nothing is sent)
// and ends there in exactly one outcome. Once a request has gone out, only
// the server's own JSON-RPC answer makes its outcome known; a write is sent
// again only when local policy marks it idempotent:
//
//	the send ends                          journal    sent again              the call ends
//	never starts: cancelled meanwhile      rejected   -                       cancelled
//	with an answer                         succeeded  -                       ok
//	with an answer that isError            failed     -                       tool_error
//	with the server's JSON-RPC error       failed     no                      connection_error
//	between rounds of input: too many,     failed     no                      contract_error (denied:
//	  a feature not declared, a dropped                                       sampling refused)
//	  requestState, sampling refused
//	refused for credentials (401/403)      failed     no                      auth_required
//	session gone (HTTP 404), idempotent    failed     once, on a new session  connection_error
//	session gone (HTTP 404), other writes  unknown    no                      outcome_unknown
//	any other way: timeout, broken         unknown    once, if idempotent     outcome_unknown, with
//	  connection, a 5xx or a body that                and the connection      the journal record
//	  is not JSON-RPC, cancelled                      failed                  as RecoveryID
//
// A read has no journal record: it ends with the failure's own class, and
// is sent again only after a 404.
func (h *Host) sendCall(ctx context.Context, q *request) (*mcp.CallToolResult, *Result) {
	tool := q.tool
	for attempt := 1; ; attempt++ {
		// A call cancelled while it waited (for a slot, say) is not sent:
		// it took a slot that came free as its cancellation did.
		if err := ctx.Err(); err != nil && attempt == 1 {
			return nil, q.fail(Cancelled, err, "%s: cancelled before it was sent to server %s", tool.Name, tool.Server)
		}
		if err := h.beginIntent(ctx, q); err != nil {
			// The store's words (an address, a database's message) are for
			// the operator's log, not for the model.
			h.log.Error("cannot journal a call's intent: the call was not sent", "tool", tool.Name, "error", err)
			return nil, q.fail(Denied, err, "%s was not sent: the journal cannot record it right now (the host's store did not take the write); try again later", tool.Name)
		}
		// A cancellation that came while the intent was made durable is
		// seen here: it takes effect along a context's children one by
		// one, and a write's intent takes a sync of the disk.
		if err := ctx.Err(); err != nil && attempt == 1 && q.intent != "" {
			h.endIntent(q.intent, store.OutcomeRejected, "cancelled before it was sent")
			return nil, q.fail(Cancelled, err, "%s: cancelled before it was sent to server %s", tool.Name, tool.Server)
		}
		h.auditSent(ctx, q, attempt, map[string]any{"intent": q.intent})
		q.sent = q.link
		res, err := h.send(ctx, q)
		if err == nil {
			outcome := store.OutcomeSucceeded
			if res.IsError {
				outcome = store.OutcomeFailed
			}
			h.endIntent(q.intent, outcome, "")
			return res, nil
		}
		e := h.callError(ctx, q, err)
		gone := errors.Is(err, mcp.ErrSessionMissing)
		harmless := q.intent == "" || q.decision.Idempotent // to send again
		var rpcErr *jsonrpc.Error
		switch {
		case gone && harmless:
			h.endIntent(q.intent, store.OutcomeFailed, e.Msg)
			if attempt == 1 && ctx.Err() == nil && h.resendOn(ctx, q, true) {
				continue
			}
			return nil, q.r.fail(e)
		case refusedUnread(err) && !gone:
			h.endIntent(q.intent, store.OutcomeFailed, e.Msg)
			return nil, q.r.fail(e)
		case errors.As(err, new(*inputError)):
			// The server answered the last round (input_required): it
			// did not finish, and the host will not go on.
			h.endIntent(q.intent, store.OutcomeFailed, e.Msg)
			return nil, q.r.fail(e)
		case q.intent == "":
			return nil, q.r.fail(e)
		case errors.As(err, &rpcErr):
			h.endIntent(q.intent, store.OutcomeFailed, e.Msg)
			return nil, q.r.fail(e)
		}
		again := attempt == 1 && q.decision.Idempotent && e.Kind == ConnectionError && ctx.Err() == nil
		detail := e.Msg
		if again {
			// Whoever looks at this record finds why it stays unknown
			// while the call may have ended ok.
			detail += "; the tool is marked idempotent, so the call is sent once more, if its server can be reached, under a record of its own"
		}
		h.endIntent(q.intent, store.OutcomeUnknown, detail)
		h.awaitLate(q)
		if again && h.resendOn(ctx, q, false) {
			continue
		}
		q.r.RecoveryID = q.intent
		return nil, q.fail(OutcomeUnknown, err,
			"%s; it may or may not have taken effect, and will not be sent again: check (airlock recovery show %s), then record what you found: airlock recovery resolve %s --outcome applied (or --outcome not-applied)",
			e.Msg, q.intent, q.intent)
	}
}
