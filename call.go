package airlock

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/catalog"
	"github.com/airlockhq/airlock/internal/schema"
	"github.com/airlockhq/airlock/internal/upstream"
)

// Call runs one tool call through the pipeline, resolving its name against
// snap (the snapshot of the caller's turn). It never panics on bad input and
// always returns a Result; Result.Status says what happened.
//
// Nothing reaches a server unless the name is in the snapshot and the
// arguments are strict JSON that matches the tool's input schema. The value
// that was validated is the value that is sent.
func (h *Host) Call(ctx context.Context, snap *Snapshot, c Call) *Result {
	began := time.Now()
	r := &Result{ToolCallID: c.ID, Snapshot: snap.ID()}
	defer func() { r.Duration = time.Since(began) }()

	// A task's call is registered, so that closing the task can wait for it
	// or cancel it, and refused once the task is closing.
	if t := snap.task; t != nil {
		var leave func()
		var err error
		if ctx, leave, err = t.enter(ctx); err != nil {
			return r.fail(newError(Cancelled, "", c.Name, err, "task %s is closing", t.info.ID))
		}
		defer leave()
	}

	// Resolve the local name in the turn's snapshot. A name the model made
	// up, or one from another snapshot, reaches no server.
	tool, ok := snap.snap.Lookup(c.Name)
	if !ok {
		return r.fail(newError(UnknownTool, "", c.Name, nil, "unknown tool %q: it is not in the catalog", c.Name))
	}
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

	// Validate against the input schema of this snapshot.
	if err := tool.Input.Validate(args); err != nil {
		return fail(InvalidArguments, err, "invalid arguments for %s: %v", tool.Name, err)
	}

	// Find the server's live connection: the snapshot's own, so a task's
	// tools reach that task's servers and no other's.
	srv := snap.servers[tool.Server]
	conn := srv.conn
	if conn == nil {
		return fail(ConnectionError, nil, "server %s is not connected", tool.Server)
	}
	if f := conn.Fault(); f != nil {
		return fail(ConnectionError, f, "server %s is not available: %s", tool.Server, f.Msg)
	}

	// Send tools/call, bounded by the server's request timeout. Cancelling
	// ctx, or the timeout, makes the SDK send notifications/cancelled.
	callCtx, cancel := context.WithTimeout(ctx, srv.cfg.RequestTimeout)
	defer cancel()
	res, err := conn.Session().CallTool(callCtx, &mcp.CallToolParams{Name: tool.Remote, Arguments: args})
	if err != nil {
		return r.fail(h.callError(ctx, callCtx, srv, tool, conn, err))
	}
	srv.setStatus(func(st *ServerStatus) { st.LastOK = time.Now() })

	// A tool error is a normal answer: its text goes back to the model and
	// the connection stays.
	if res.IsError {
		content, artifacts, err := h.render(res.Content)
		if err != nil {
			return fail(ContractError, err, "%s: %v", tool.Name, err)
		}
		r.Status, r.Content, r.Artifacts = ToolError, content, artifacts
		r.Err = newError(ToolError, tool.Server, tool.Name, nil, "%s", content)
		return r
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
		if structured, err = json.Marshal(res.StructuredContent); err != nil {
			return fail(ContractError, err, "%s: structuredContent cannot be encoded: %v", tool.Name, err)
		}
	}

	// Turn the content into what the model sees; binary and embedded
	// content goes to the artifact store.
	content, artifacts, err := h.render(res.Content)
	if err != nil {
		return fail(ContractError, err, "%s: %v", tool.Name, err)
	}
	if content == "" && structured != nil {
		content = string(structured)
	}
	r.Status, r.Content, r.Structured, r.Artifacts = OK, content, structured, artifacts
	return r
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

// callError classifies a failed tools/call.
func (h *Host) callError(ctx, callCtx context.Context, srv *server, tool *catalog.Tool, conn *upstream.Conn, err error) *Error {
	e := func(kind Kind, format string, args ...any) *Error {
		return newError(kind, tool.Server, tool.Name, err, format, args...)
	}
	var werr *jsonrpc.Error
	switch f := conn.Fault(); {
	case ctx.Err() != nil:
		return e(Cancelled, "%s: cancelled", tool.Name)
	case callCtx.Err() != nil:
		return e(ConnectionError, "%s: no answer within %s (request_timeout); the request was cancelled", tool.Name, srv.cfg.RequestTimeout)
	case f != nil && f.Contract():
		return e(ContractError, "%s: %s", tool.Name, f.Msg)
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
