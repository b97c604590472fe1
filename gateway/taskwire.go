package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
)

// The go-sdk knows nothing of tasks, and answers tasks/get as a method it
// does not know before any handler of the gateway's could: route hands
// these requests here first (HTTP, 2026-07-28 requests without a
// session), and everything else to the SDK.
//
//	tasks/get      the task (DetailedTask): its status and, once settled, the call's
//	               result (completed; a tool error is completed with isError) or the
//	               JSON-RPC error (failed); the questions it waits on (input_required)
//	tasks/update   answers (inputResponses) to those questions; answers to others are
//	               ignored; acknowledged with an empty result
//	tasks/cancel   settles the task cancelled and cancels its call (the server is told);
//	               a settled task stays as it is; acknowledged with an empty result
//	tools/call     of a tool its server's tasks: mapping names (see jobs.go)
//
// tasks/list and tasks/result are not methods of this revision: the SDK
// answers them, as any method it does not know (-32601). Each request's
// Mcp-Method and Mcp-Name headers must match its body (-32020, as the SDK
// checks the others'); tasks/* of a client that did not declare the
// extension are refused (-32021) before the task is looked up, and a task
// id that names no task of the caller's is -32602.

// mayTask reports whether body may be a request that serveTasks takes:
// one that names a tasks/ method or tools/call (or escapes a character,
// as mayOpen explains).
func mayTask(body []byte) bool {
	return bytes.IndexByte(body, '\\') >= 0 ||
		bytes.Contains(body, []byte("tasks/")) ||
		bytes.Contains(body, []byte("tools/call"))
}

// taskParams are the parameters of tasks/get, tasks/update and
// tasks/cancel.
type taskParams struct {
	Meta           map[string]any             `json:"_meta"`
	TaskID         *string                    `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

// serveTasks serves the request in body if it is one for the tasks
// extension, and reports whether it did.
func (g *Gateway) serveTasks(w http.ResponseWriter, r *http.Request, body []byte) bool {
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return false
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() || !statelessEra(req) || !jsonBody(r) {
		return false
	}
	extra := &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header}
	switch req.Method {
	case "tasks/get", "tasks/update", "tasks/cancel":
		var p taskParams
		if err := json.Unmarshal(req.Params, &p); err != nil {
			writeRPC(w, req.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: " + err.Error()})
			return true
		}
		if p.TaskID == nil {
			writeRPC(w, req.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: req.Method + " needs params.taskId, the id of the task"})
			return true
		}
		if err := headerMismatch(r.Header, req.Method, *p.TaskID, p.Meta); err != nil {
			writeRPC(w, req.ID, nil, err)
			return true
		}
		res, err := g.taskMethod(r.Context(), req.Method, extra, p)
		writeRPC(w, req.ID, res, err)
		return true
	case "tools/call":
		var p mcp.CallToolParamsRaw
		if json.Unmarshal(req.Params, &p) != nil {
			return false
		}
		tt := g.taskToolOf(p.Name)
		if tt.mode == config.TaskNever {
			return false
		}
		call := &mcp.CallToolRequest{Params: &p, Extra: extra}
		declared := declaresTasks(call.ClientCapabilities())
		if !declared && tt.mode != config.TaskRequired {
			return false
		}
		if err := headerMismatch(r.Header, req.Method, p.Name, p.Meta); err != nil {
			writeRPC(w, req.ID, nil, err)
			return true
		}
		if !declared {
			writeRPC(w, req.ID, nil, tasksRequired("the tool "+clip(p.Name)+" runs only as a task: it"))
			return true
		}
		res, rec, err := g.taskCall(r.Context(), call, tt)
		switch {
		case err != nil:
			writeRPC(w, req.ID, nil, err)
		case rec != nil:
			writeRPC(w, req.ID, taskOf(*rec, "task", false), nil)
		default:
			writeRPC(w, req.ID, res, nil)
		}
		return true
	}
	return false
}

// taskMethod answers tasks/get, tasks/update or tasks/cancel.
func (g *Gateway) taskMethod(ctx context.Context, method string, extra *mcp.RequestExtra, p taskParams) (any, error) {
	if !declaresTasks(metaCapabilities(p.Meta)) {
		return nil, tasksRequired(method)
	}
	who, err := g.callerOf(extra)
	if err != nil {
		return nil, err
	}
	rec, err := g.jobs.st.Job(ctx, *p.TaskID)
	switch {
	case err != nil && !errors.Is(err, store.ErrNotFound):
		g.log.Error("task not read", "error", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the gateway cannot read its tasks now (its store failed); try again"}
	case err != nil, rec.Tenant != who.who.Tenant || rec.User != who.who.User:
		// Another principal's task does not exist for this one.
		if method == "tasks/update" {
			return ack, nil // acknowledged whatever the id names, as SEP-2663 has it
		}
		return nil, unknownTask
	}
	switch method {
	case "tasks/get":
		return taskOf(rec, "complete", true), nil
	case "tasks/cancel":
		if err := g.cancelJob(ctx, rec); err != nil {
			g.log.Error("task not cancelled", "task", rec.ID, "error", err)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the gateway cannot cancel the task now (its store failed); try again"}
		}
	default:
		if err := g.updateJob(ctx, rec, p.InputResponses); err != nil {
			return nil, err
		}
	}
	return ack, nil
}

// ack is the empty result of tasks/update and tasks/cancel.
var ack = map[string]string{"resultType": "complete"}

// metaCapabilities reads the client capabilities a request's _meta
// declares.
func metaCapabilities(meta map[string]any) *mcp.ClientCapabilities {
	return (&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Meta: meta}}).ClientCapabilities()
}

// A task is a task as the wire carries it: CreateTaskResult (resultType
// task), and DetailedTask (tasks/get), which adds what the task settled
// with or waits on.
type task struct {
	ResultType     string `json:"resultType"`
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	StatusMessage  string `json:"statusMessage,omitempty"`
	CreatedAt      string `json:"createdAt"`
	LastUpdatedAt  string `json:"lastUpdatedAt"`
	TTLMs          int64  `json:"ttlMs"`
	PollIntervalMs int64  `json:"pollIntervalMs,omitempty"`
	// The same in the names of SEP-2663's own text, which a client
	// written from it reads.
	TTLSeconds     int64           `json:"ttlSeconds"`
	PollIntervalMS int64           `json:"pollIntervalMilliseconds,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          json.RawMessage `json:"error,omitempty"`
	InputRequests  json.RawMessage `json:"inputRequests,omitempty"`
}

// taskOf is rec on the wire, with its result, error or questions when
// detailed.
func taskOf(rec store.Job, resultType string, detailed bool) task {
	t := task{ResultType: resultType, TaskID: rec.ID, Status: string(rec.Status), StatusMessage: rec.Message,
		CreatedAt: rec.CreatedAt.UTC().Format(time.RFC3339Nano), LastUpdatedAt: rec.UpdatedAt.UTC().Format(time.RFC3339Nano),
		TTLMs: max(rec.TTL.Milliseconds(), 1), PollIntervalMs: rec.PollInterval.Milliseconds(),
		TTLSeconds: max(int64(rec.TTL/time.Second), 1), PollIntervalMS: rec.PollInterval.Milliseconds()}
	if detailed {
		switch rec.Status {
		case store.JobCompleted:
			t.Result = rec.Result
		case store.JobFailed:
			t.Error = rec.Error
		case store.JobInputRequired:
			t.InputRequests = rec.Input
		}
	}
	return t
}

// headerMismatch checks a request's Mcp-Protocol-Version, Mcp-Method and
// Mcp-Name headers against its body, as the SDK checks every other
// request's: name is params.name (tools/call) or params.taskId.
func headerMismatch(h http.Header, method, name string, meta map[string]any) *jsonrpc.Error {
	mismatch := func(format string, args ...any) *jsonrpc.Error {
		return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf(format, args...)}
	}
	version, _ := meta[mcp.MetaKeyProtocolVersion].(string)
	switch got := h.Get("Mcp-Protocol-Version"); {
	case got == "":
		return mismatch("the Mcp-Protocol-Version header is required for requests carrying %q", mcp.MetaKeyProtocolVersion)
	case got != version:
		return mismatch("the Mcp-Protocol-Version header %q does not match the request's %s %q", clip(got), mcp.MetaKeyProtocolVersion, clip(version))
	}
	switch got := h.Get("Mcp-Method"); {
	case got == "":
		return mismatch("the Mcp-Method header is required: send %q", method)
	case got != method:
		return mismatch("the Mcp-Method header %q does not match the body's method %q", clip(got), method)
	}
	switch got := h.Get("Mcp-Name"); {
	case got == "":
		return mismatch("the Mcp-Name header is required for %s: send %q", method, clip(name))
	case got != name:
		return mismatch("the Mcp-Name header %q does not match the body's %q", clip(got), clip(name))
	}
	return nil
}

// jsonBody reports whether r says its body is JSON, which the SDK
// requires of every POST (and answers 415 otherwise).
func jsonBody(r *http.Request) bool {
	t, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && t == "application/json"
}

// writeRPC writes the JSON-RPC response to the request id: res, or err,
// with the HTTP status the SDK gives such errors.
func writeRPC(w http.ResponseWriter, id jsonrpc.ID, res any, err error) {
	resp := &jsonrpc.Response{ID: id}
	status := http.StatusOK
	if err != nil {
		var je *jsonrpc.Error
		if !errors.As(err, &je) {
			je = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
			if errors.Is(err, context.Canceled) {
				je.Message = "the request was cancelled"
			}
		}
		resp.Error = je
		switch je.Code {
		case jsonrpc.CodeInvalidParams, mcp.CodeMissingRequiredClientCapabilities, mcp.CodeHeaderMismatch:
			status = http.StatusBadRequest
		case jsonrpc.CodeMethodNotFound:
			status = http.StatusNotFound
		}
	} else {
		body, merr := resultJSON(res)
		if merr != nil {
			resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the gateway cannot encode its answer: " + merr.Error()}
		} else {
			resp.Result = body
		}
	}
	data, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		http.Error(w, "the gateway cannot encode its answer", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(data)
}

// resultJSON encodes a result, with the resultType a 2026-07-28 client
// reads: input_required for a round that asks, else complete (a task
// carries its own).
func resultJSON(res any) (json.RawMessage, error) {
	body, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	cr, ok := res.(*mcp.CallToolResult)
	if !ok {
		return body, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, err
	}
	kind := "complete"
	if len(cr.InputRequests) > 0 {
		kind = "input_required"
	}
	fields["resultType"], _ = json.Marshal(kind)
	return json.Marshal(fields)
}
