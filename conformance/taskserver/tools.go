package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// busy is how long the jobs work, and how long confirm_delete and
// multi_input look before they ask: failing_job "fails after ~1s" in the
// suite's words, and a second is long enough that a server which answers
// a quick call without a task (SEP-2663's immediate-result shortcut) still
// sees these calls as the long-running ones they stand for. Only
// test_tool_with_task asks at once, because the suite wants its question
// answered before any task exists (the MRTR-then-task composition).
const busy = time.Second

// The keys of the input requests. The suite answers whatever keys it is
// shown, so a server in front may pass them on or mint its own.
const (
	confirmKey  = "confirm"
	firstKey    = "first"
	secondKey   = "second"
	userNameKey = "user_name"
)

func newServer() *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "airlock-conformance-taskserver", Version: "1.0.0"}, nil)

	addTool(server, "greet", "Greets someone by name, at once.", greet)
	addTool(server, "slow_compute", "Works for the given number of seconds, then reports what it computed. It stops when the call is cancelled.", slowCompute)
	addTool(server, "failing_job", "Works for about a second, then reports that the job failed (a tool error).", failingJob)
	addTool(server, "protocol_error_job", "Works for about a second, then fails with a JSON-RPC error instead of a result.", protocolErrorJob)
	addTool(server, "confirm_delete", "Looks up a file, asks the user to confirm its deletion, and reports what was done.", confirmDelete)
	addTool(server, "multi_input", "Asks two questions at once and reports both answers.", multiInput)
	addTool(server, "test_tool_with_task", "Asks for the user's name at once, then works for about a second and greets them.", toolWithTask)
	return server
}

// addTool adds to server the tool name, which description describes and
// h runs, with the input schema that In infers.
func addTool[In any](server *mcp.Server, name, description string, h mcp.ToolHandlerFor[In, any]) {
	mcp.AddTool(server, &mcp.Tool{Name: name, Description: description}, h)
}

type greetArgs struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

// greet answers "Hello, NAME!", the text the suite compares.
func greet(_ context.Context, _ *mcp.CallToolRequest, args greetArgs) (*mcp.CallToolResult, any, error) {
	return text(fmt.Sprintf("Hello, %s!", args.Name)), nil, nil
}

type slowComputeArgs struct {
	Seconds float64 `json:"seconds" jsonschema:"how many seconds to work; 0 answers at once"`
	Label   string  `json:"label,omitempty" jsonschema:"a name for the computation, repeated in the result"`
}

// slowCompute sleeps for args.Seconds. A cancelled call ends the sleep and
// answers with the context's error, which no one waits for; the suite's
// cancel check needs the work to stop, not an answer.
func slowCompute(ctx context.Context, _ *mcp.CallToolRequest, args slowComputeArgs) (*mcp.CallToolResult, any, error) {
	d := time.Duration(args.Seconds * float64(time.Second))
	if err := pause(ctx, d); err != nil {
		return nil, nil, err
	}
	return text(fmt.Sprintf("Computed %q in %gs: 42.", args.Label, args.Seconds)), nil, nil
}

// failingJob is a tool that ran and reported a failure: a result with
// isError, which a task reports as completed, not failed.
func failingJob(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	if err := pause(ctx, busy); err != nil {
		return nil, nil, err
	}
	res := text("failing_job failed, as it always does.")
	res.IsError = true
	return res, nil, nil
}

// protocolErrorJob fails below the tool: the SDK sends a *jsonrpc.Error
// returned by a handler as the JSON-RPC error response, which a task
// reports as failed, with the error inlined.
func protocolErrorJob(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	if err := pause(ctx, busy); err != nil {
		return nil, nil, err
	}
	return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "protocol_error_job failed inside the server"}
}

type confirmDeleteArgs struct {
	Filename string `json:"filename" jsonschema:"the file to delete"`
}

// confirmDelete asks, after looking the file up, whether to delete it; the
// retry that carries the answer reports the outcome. The suite answers
// {"action":"accept","content":{"confirm":true}}.
func confirmDelete(ctx context.Context, req *mcp.CallToolRequest, args confirmDeleteArgs) (*mcp.CallToolResult, any, error) {
	if answer, ok := req.Params.InputResponses[confirmKey].(*mcp.ElicitResult); ok && answer != nil {
		if answer.Action == "accept" && answer.Content["confirm"] == true {
			return text(fmt.Sprintf("Deleted %s.", args.Filename)), nil, nil
		}
		return text(fmt.Sprintf("Kept %s: the deletion was not confirmed.", args.Filename)), nil, nil
	}
	if len(req.Params.InputResponses) == 0 {
		if err := pause(ctx, busy); err != nil {
			return nil, nil, err
		}
	}
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
		confirmKey: &mcp.ElicitParams{
			Message:         fmt.Sprintf("Delete %s?", args.Filename),
			RequestedSchema: objectSchema("confirm", "boolean"),
		},
	}}, nil, nil
}

// multiInput asks two questions in one round, so that two input requests
// are pending at once, and answers when both have been answered. A retry
// may answer one of them: the answers so far travel in the request state,
// and the next round asks only the question still open. The suite answers
// {"action":"accept","content":{"name":"partial-1","confirm":true}} and
// then "partial-2".
func multiInput(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	names := map[string]string{}
	if req.Params.RequestState != "" {
		if err := json.Unmarshal([]byte(req.Params.RequestState), &names); err != nil {
			return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "multi_input: the request state is not one this server made"}
		}
	}
	for _, key := range []string{firstKey, secondKey} {
		answer, ok := req.Params.InputResponses[key].(*mcp.ElicitResult)
		if !ok || answer == nil {
			continue
		}
		name, _ := answer.Content["name"].(string)
		if answer.Action != "accept" || name == "" {
			res := text(fmt.Sprintf("multi_input stopped: the %s question was not answered.", key))
			res.IsError = true
			return res, nil, nil
		}
		names[key] = name
	}
	if names[firstKey] != "" && names[secondKey] != "" {
		return text(fmt.Sprintf("Received %s=%s and %s=%s.", firstKey, names[firstKey], secondKey, names[secondKey])), nil, nil
	}

	if len(req.Params.InputResponses) == 0 && len(names) == 0 {
		if err := pause(ctx, busy); err != nil {
			return nil, nil, err
		}
	}
	res := &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{}}
	for _, key := range []string{firstKey, secondKey} {
		if names[key] == "" {
			res.InputRequests[key] = &mcp.ElicitParams{
				Message:         fmt.Sprintf("What is the %s name?", key),
				RequestedSchema: objectSchema("name", "string"),
			}
		}
	}
	if len(names) > 0 {
		state, err := json.Marshal(names)
		if err != nil {
			return nil, nil, err
		}
		res.RequestState = string(state)
	}
	return res, nil, nil
}

// toolWithTask asks for the user's name at once and then does the slow
// part, so that a server in front answers its first round synchronously
// and runs the second as a task. The suite answers
// {"action":"accept","content":{"name":"Alice"}} and looks for "Alice" in
// the task's result.
func toolWithTask(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	answer, ok := req.Params.InputResponses[userNameKey].(*mcp.ElicitResult)
	name := ""
	if ok && answer != nil && answer.Action == "accept" {
		name, _ = answer.Content["name"].(string)
	}
	if name == "" {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
			userNameKey: &mcp.ElicitParams{
				Message:         "What is your name?",
				RequestedSchema: objectSchema("name", "string"),
			},
		}}, nil, nil
	}
	if err := pause(ctx, busy); err != nil {
		return nil, nil, err
	}
	return text(fmt.Sprintf("Hello, %s! The work you asked for is done.", name)), nil, nil
}

// pause waits for d, or returns ctx's error when ctx ends first.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// objectSchema is a form with one required field, as elicitation/create
// takes it.
func objectSchema(field, typ string) map[string]any {
	return map[string]any{
		"type":       "object",
		"properties": map[string]any{field: map[string]any{"type": typ}},
		"required":   []string{field},
	}
}
