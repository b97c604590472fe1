package airlock

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/catalog"
	"github.com/airlockhq/airlock/internal/telemetry"
	"github.com/airlockhq/airlock/internal/upstream"
	"github.com/airlockhq/airlock/policy"
	"github.com/airlockhq/airlock/store"
)

// A PromptGet asks for one prompt of the catalog.
type PromptGet struct {
	// ID is the caller's own id, echoed as Result.ToolCallID.
	ID string
	// Name is the prompt's local name in the snapshot.
	Name string
	// Arguments is a JSON object of strings, one per argument the prompt
	// takes; empty means none.
	Arguments json.RawMessage
	// Elicit, Sample, Roots, AskAtOnce and Offers are as in Call: who
	// answers what the server asks while getting the prompt (an
	// input_required result of a 2026-07-28 server, or a request of an
	// older one).
	Elicit    Elicitor
	Sample    Sampler
	Roots     RootsLister
	AskAtOnce bool
	Offers    *ClientFeatures
	// Progress, Log and LogLevel are as in Call: they are told of the
	// progress notifications and log messages the server sends about
	// this get while it runs.
	Progress func(CallProgress)
	Log      func(CallLog)
	LogLevel string
}

// A PromptMessage is one message of a prompt: its role and its content as
// a model sees it (text; media and embedded resources as artifact
// references).
type PromptMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Block is the content as an MCP content block, for a caller that
	// hands the prompt on (the gateway).
	Block mcp.Content `json:"-"`
}

// maxPromptArgument bounds one argument value, in bytes.
const maxPromptArgument = 64 << 10

// GetPrompt gets one prompt through snap and returns its messages in
// Result.Messages and its description in Result.Description. The
// arguments must be the prompt's own (strings; every required one given,
// no other); hooks and policy decide as for a tool call (policy.rules
// with prompt:; a get is allowed by default). Images and embedded
// resources in the messages go to the artifact store, as a tool's do.
func (h *Host) GetPrompt(ctx context.Context, snap *Snapshot, g PromptGet) *Result {
	began := time.Now()
	ctx, span := h.spans.start(ctx, "prompts/get")
	p, ok := snap.snap.Prompt(g.Name)
	if !ok {
		r := &Result{ToolCallID: g.ID, CallID: store.NewID("call_"), Snapshot: snap.ID(), Duration: time.Since(began),
			TraceID: telemetry.TraceID(ctx)}
		h.opts.Metrics.Content("", "prompt", string(UnknownTool))
		defer h.endSpan(&request{kind: policy.KindPrompt, r: r, span: span})
		if srv := snap.promptNotRunning(g.Name); srv != nil {
			return r.fail(downError(srv, g.Name, "prompts"))
		}
		return r.fail(newError(UnknownTool, "", g.Name, nil, "unknown prompt %q: it is not in the catalog", printable(g.Name)))
	}
	args, err := promptArguments(p, g.Arguments)
	tool := &catalog.Tool{Name: p.Name, Server: p.Server, Remote: p.Remote, Description: p.Description,
		Input: p.Input, Effect: policy.Read}
	q := newAccess(ctx, snap, policy.KindPrompt, g.ID, tool, snap.servers[p.Server], args)
	q.span = span
	q.call.Elicit, q.call.Sample, q.call.Roots, q.call.AskAtOnce, q.call.Offers = g.Elicit, g.Sample, g.Roots, g.AskAtOnce, g.Offers
	q.call.Progress, q.call.Log, q.call.LogLevel = g.Progress, g.Log, g.LogLevel
	defer h.finish(ctx, q, began)
	if err != nil {
		return q.fail(InvalidArguments, err, "invalid arguments for prompt %s: %v", p.Name, err)
	}
	return h.access(ctx, q, policy.KindPrompt, "", func(ctx context.Context, q *request) *Result {
		return h.getPrompt(ctx, q, args)
	})
}

// promptArguments decodes a get's arguments strictly and checks them
// against the prompt.
func promptArguments(p *catalog.Prompt, raw json.RawMessage) (map[string]any, error) {
	args, err := decodeArguments(raw)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, a := range p.Arguments {
		known[a.Name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(args)) {
		v, ok := args[name].(string)
		switch {
		case !known[name]:
			return nil, fmt.Errorf("the prompt takes no argument %q (it takes: %s)", printable(name), argumentNames(p))
		case !ok:
			return nil, fmt.Errorf("argument %q must be a string", name)
		case len(v) > maxPromptArgument:
			return nil, fmt.Errorf("argument %q is longer than %d bytes", name, maxPromptArgument)
		}
	}
	for _, a := range p.Arguments {
		if _, ok := args[a.Name]; a.Required && !ok {
			return nil, fmt.Errorf("argument %q is required", a.Name)
		}
	}
	return args, nil
}

func argumentNames(p *catalog.Prompt) string {
	if len(p.Arguments) == 0 {
		return "none"
	}
	names := make([]string, len(p.Arguments))
	for i, a := range p.Arguments {
		names[i] = a.Name
	}
	return strings.Join(names, ", ")
}

// getPrompt sends prompts/get, answering the rounds of input a 2026-07-28
// server asks for, and turns the messages into what the caller sees.
func (h *Host) getPrompt(ctx context.Context, q *request, args map[string]any) *Result {
	srv := q.srv
	params := &mcp.GetPromptParams{Name: q.tool.Remote, Arguments: map[string]string{}}
	for k, v := range args {
		params.Arguments[k] = v.(string) // checked by promptArguments
	}
	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ask := h.newAsking(q, callCtx, func() func() { return func() {} }, cancel)
	defer ask.close()
	sendCtx, unwatch := h.watchAccess(upstream.WithAsker(callCtx, ask.asker()), q, params)
	defer unwatch()
	var res *mcp.GetPromptResult
	for {
		roundCtx, stop := context.WithTimeout(sendCtx, srv.cfg.RequestTimeout)
		var err error
		res, err = q.link.conn.Session().GetPrompt(roundCtx, params)
		stop()
		if err != nil {
			return q.r.fail(h.accessError(roundCtx, q, err))
		}
		if !res.NeedsInput() {
			break
		}
		next, err := ask.inputRound(callCtx, &mcp.CallToolParams{}, &mcp.CallToolResult{InputRequests: res.InputRequests, RequestState: res.RequestState})
		if err != nil {
			return q.r.fail(h.callError(ctx, q, err))
		}
		params.InputResponses, params.RequestState = next.InputResponses, next.RequestState
	}
	ask.close()
	if q.undeclared != "" {
		return q.fail(ContractError, nil, "prompt %s: server %s sent %s while getting it, which Airlock did not declare to it; the request was refused and the prompt is not used",
			q.tool.Name, srv.cfg.ID, q.undeclared)
	}
	r := q.r
	r.Description = h.gov.scrub(res.Description)
	for i, m := range res.Messages {
		if m == nil || m.Content == nil || (m.Role != "user" && m.Role != "assistant") {
			return q.fail(ContractError, nil, "server %s: prompts/get message %d has no content or a role other than user or assistant", srv.cfg.ID, i)
		}
		out, err := h.render(ctx, q, []mcp.Content{m.Content})
		if err != nil {
			return q.fail(ContractError, err, "server %s: prompts/get message %d: %v", srv.cfg.ID, i, err)
		}
		if !utf8.ValidString(out.text) {
			return q.fail(ContractError, nil, "server %s: prompts/get message %d has text that is not UTF-8", srv.cfg.ID, i)
		}
		r.Messages = append(r.Messages, PromptMessage{Role: string(m.Role), Content: out.text, Block: out.blocks[0]})
		r.Artifacts = append(r.Artifacts, out.artifacts...)
	}
	r.Status = OK
	parts := make([]string, len(r.Messages))
	for i, m := range r.Messages {
		parts[i] = m.Role + ": " + m.Content
	}
	r.Content = strings.Join(parts, "\n")
	return r
}
