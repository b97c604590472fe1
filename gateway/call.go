package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
)

// call is the handler of every listed tool: the call runs through
// Host.Call against the catalog the gateway lists, with the arguments as
// the client sent them (the pipeline decodes them strictly and validates
// them; what it checked is what it sends), and its result is mapped onto
// MCP (see result). The progress and log messages the server sends about
// the call go to this client, when it asked for them (relay.go).
//
// The call is made for the caller the request's access token names, or,
// without inbound authentication, for the host's own principal (auth.go).
// It counts against limits.max_calls_per_turn in the turn its _meta names
// (turn.go), if any.
//
// A call that policy wants approved asks the person at the client when the
// client can be asked (see question): the first round ends with the
// question (an input_required result, which the SDK turns into
// elicitation/create for a 2025-11-25 client), and the retry carrying the
// answer runs the call again, which the answer then grants or denies.
func (g *Gateway) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ctx, done, ok := g.calls.enter(ctx)
	if !ok {
		return nil, shuttingDown
	}
	defer g.calls.leave()
	defer done()
	p := req.Params
	ex := toolExchange(req)
	turn, err := turnOf(ex.meta)
	if err != nil {
		return nil, err
	}
	who, err := g.callerOf(req.Extra)
	if err != nil {
		return nil, err
	}
	if err := g.checkState(ex, who); err != nil {
		return nil, err
	}
	if ex.parked() {
		return as[*mcp.CallToolResult](g.resume(ctx, ex, who)) // the answer to a question its server asked (parked.go)
	}
	if g.taskToolOf(p.Name).mode == config.TaskRequired {
		// A client that declared the tasks extension was served as a
		// task before the SDK (taskwire.go): this one did not.
		return nil, tasksRequired("the tool " + clip(p.Name) + " runs only as a task: it")
	}
	tc, err := g.toolCall(ex, who, p, turn, g.relayFor(ctx, req.Session, req.Params))
	if err != nil {
		return nil, err
	}
	// A server's questions during the call go to this client, when it
	// can be asked (asks.go); a 2026-07-28 server hears with the call
	// what it may ask.
	return as[*mcp.CallToolResult](g.runAsking(ctx, ex, who, tc.asking, tc.run, tc.finish))
}

// A toolCall is a client's tools/call made ready for the host: run makes
// the host's call with the askers it is given (and then ends the call's
// hold on its snapshot), finish turns the host's result into the client's
// answer, and asking is what the client may be asked (which the call
// offers its server). release ends the hold on the snapshot of a call
// that is never run.
type toolCall struct {
	run     func(ctx context.Context, k askers) *airlock.Result
	finish  finisher
	asking  asking
	release func()
}

// toolCall readies the call p of the exchange ex for who, counted in turn
// (unless it is a retry), its progress and log messages relayed by rel
// (nil relays nothing).
func (g *Gateway) toolCall(ex *exchange, who caller, p *mcp.CallToolParamsRaw, turn string, rel *relay) (*toolCall, error) {
	snap, release, err := g.snapshot(who)
	if err != nil {
		return nil, err
	}
	q := g.question(ex, who, p.Name, whatCall)
	c := airlock.Call{Name: p.Name, Arguments: p.Arguments}
	if !ex.answered() {
		c.Turn = turn // a retry carrying answers is the same call, already counted
	}
	rel.onto(&c.Progress, &c.Log, &c.LogLevel)
	tc := &toolCall{asking: askingOf(ex), release: sync.OnceFunc(release)}
	c.Offers = tc.asking.offers()
	tc.run = func(ctx context.Context, k askers) *airlock.Result {
		defer tc.release()
		k.onCall(&c)
		r := g.host.Load().Call(withQuestion(ctx, q), snap, c)
		rel.close()
		return r
	}
	tc.finish = func(ctx context.Context, r *airlock.Result) (mcp.Result, error) {
		if asked, ok := g.askedOf(ctx, ex, q, r); ok {
			return asked, nil
		}
		res, err := result(ctx, p.Name, r)
		g.withHint(who, res, r)
		return res, err
	}
	return tc, nil
}

// result maps a call's result onto MCP:
//
//	ok                               the result: the server's content blocks (text scrubbed of secrets), and
//	                                 structuredContent when the tool has it
//	denied because the server         JSON-RPC error -32021 naming the capabilities (HTTP 400 for a 2026-07-28
//	  answered -32021                  request): the call did not offer them, as the client did not declare them
//	invalid_arguments, tool_error,   isError, with the text the model can act on
//	  denied, busy
//	approval_required                isError: the approval id and how a person approves it
//	auth_required                    isError: the login a person must make
//	outcome_unknown                  isError, in the gateway's words: the outcome is unknown, do not repeat
//	                                 blindly, the recovery id
//	unknown_tool                     JSON-RPC error -32602 "Unknown tool: NAME", as the specification gives
//	contract_error, connection_error JSON-RPC error -32603 with a message of the gateway's own: nothing the
//	                                 server said reaches the client as tool text
//	cancelled                        the request's own cancellation
//
// Every tool result carries _meta "airlock/status" (the class) and, where
// there is one, "airlock/approval_id" or "airlock/recovery_id".
func result(ctx context.Context, name string, r *airlock.Result) (*mcp.CallToolResult, error) {
	if e := missingCapabilities(r); e != nil {
		return nil, e
	}
	switch r.Status {
	case airlock.OK:
		res := &mcp.CallToolResult{Content: r.ContentBlocks, Meta: meta(r)}
		if len(res.Content) == 0 {
			res.Content = text(r.Content) // structuredContent as text, or nothing
		}
		if r.Structured != nil {
			res.StructuredContent = r.Structured
		}
		return res, nil
	case airlock.InvalidArguments, airlock.ToolError, airlock.Denied, airlock.Busy:
		return toolError(r, r.Content), nil
	case airlock.ApprovalRequired:
		return toolError(r, r.Err.Msg), nil
	case airlock.AuthRequired:
		return toolError(r, loginNeeded(r)), nil
	case airlock.OutcomeUnknown:
		return toolError(r, unknownText(r)+" Recovery id: "+r.RecoveryID), nil
	case airlock.UnknownTool:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Unknown tool: " + clip(name)}
	case airlock.Cancelled:
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, shuttingDown
	}
	return nil, failure(r)
}

// unknownText says that a write's outcome is unknown, in the gateway's
// words: the result's message can end with what the server wrote on its
// way out (its stderr, a malformed line), which is for the operator (the
// audit trail, airlock recovery show), never for the client's model.
func unknownText(r *airlock.Result) string {
	server, reason := "its server", "the server broke off, or gave no usable answer"
	if r.Err != nil {
		reason = r.Err.Reason()
		if r.Err.Server != "" {
			server = "server " + r.Err.Server
		}
	}
	return fmt.Sprintf("The outcome of this call is unknown: it was sent to %s, and %s (airlock audit has the details, trace %s). Do not repeat the call blindly: it may already have taken effect.",
		server, reason, r.TraceID)
}

// loginNeeded is the text of an auth_required result: the login a person
// must make.
func loginNeeded(r *airlock.Result) string {
	msg := r.Err.Msg
	if !strings.Contains(msg, "airlock auth login") && r.Err.Server != "" {
		msg += fmt.Sprintf(": a person must run airlock auth login %s, then the call can be made again", r.Err.Server)
	}
	return msg
}

// failure is the JSON-RPC error of a contract or connection failure (or of
// a class this version does not know). Its message is the gateway's own;
// the audit trail has the details, under the trace id in its data.
func failure(r *airlock.Result) *jsonrpc.Error {
	server, tool := "", ""
	if r.Err != nil {
		server, tool = r.Err.Server, r.Err.Tool
	}
	var what string
	switch r.Status {
	case airlock.ContractError:
		what = "broke the MCP contract (a malformed answer, or one that violates the tool's output schema)"
	case airlock.ConnectionError:
		what = "could not be reached, broke off, did not answer in time, or answered with an error"
	default:
		what = "failed"
	}
	msg := fmt.Sprintf("%s: the server %s; what it sent is not shown here (airlock audit has the details, trace %s)", r.Status, what, r.TraceID)
	if server != "" {
		msg = fmt.Sprintf("%s: server %s %s; what it sent is not shown here (airlock audit has the details, trace %s)", r.Status, server, what, r.TraceID)
	}
	data, _ := json.Marshal(map[string]string{"class": string(r.Status), "server": server, "tool": tool, "trace_id": r.TraceID})
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg, Data: data}
}

func toolError(r *airlock.Result, msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: text(msg), Meta: meta(r)}
}

func text(s string) []mcp.Content {
	if s == "" {
		return []mcp.Content{}
	}
	return []mcp.Content{&mcp.TextContent{Text: s}}
}

func meta(r *airlock.Result) mcp.Meta {
	m := mcp.Meta{"airlock/status": string(r.Status)}
	if r.ApprovalID != "" {
		m["airlock/approval_id"] = r.ApprovalID
	}
	if r.RecoveryID != "" {
		m["airlock/recovery_id"] = r.RecoveryID
	}
	return m
}

// clip bounds text a client chose before it is echoed or logged.
func clip(s string) string {
	const max = 128
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}
