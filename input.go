//lint:file-ignore SA1019 a server may still ask for a sample or its client's roots, which protocol version 2026-07-28 deprecates (SEP-2577); the host must answer it.

package airlock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/upstream"
	"github.com/airlockhq/airlock/store"
)

// A server asks for input during a call in two ways, and both take the
// same path here (asking): a 2026-07-28 server ends a round of the call
// with an input_required result, which the host answers by sending the
// call again with inputResponses and the requestState echoed unchanged
// (inputRound); an older server sends elicitation/create,
// sampling/createMessage or roots/list while the call is in flight, which
// the connection hands to the call's upstream.Asker. Every request counts as
// a round (an input_required result with several requests counts once);
// past limits.max_input_rounds the call ends contract_error. Each
// question goes to the person (Call.Elicit, else Options.Elicit), never
// to the model (a request for roots goes to Call.Roots, else
// Options.Roots: roots.go); each request and answer is an audit event of
// the call, and the call's result lists them (Result.Inputs).

// Audit events of a call's rounds of input.
const (
	eventInputRequest = "input_request" // a server asked for input during a call
	eventInputAnswer  = "input_answer"  // and what it was answered
)

// maxAnswers bounds how often a person is asked one question whose
// answers do not fit its form.
const maxAnswers = 3

// errInputRounds cancels a call whose server asked for input more often
// than limits.max_input_rounds allows.
var errInputRounds = errors.New("asked for input too often")

// An inputError ends a call between rounds of input: the server answered
// the last round (input_required), and the host will not go on.
type inputError struct {
	kind Kind
	msg  string
}

func (e *inputError) Error() string { return e.msg }

// asking is one call's rounds of input.
type asking struct {
	h      *Host
	q      *request
	call   context.Context        // ends when the call does
	pause  func() (resume func()) // stops the call's request timeout while a person is asked
	cancel context.CancelCauseFunc

	mu     sync.Mutex
	rounds int
	inputs []InputRecord
	state  bool // a round carried a requestState
	closed bool // the call's send returned: its result has the rounds
	// broke is the method of the first request the server sent during
	// the call for a client feature the host did not declare, "" if none:
	// the server broke the contract, and the call's result is not used.
	broke string
}

// close hands the rounds to the call's result; a request still being
// answered after that goes unrecorded there (the audit trail has it).
func (a *asking) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	a.q.r.InputRounds, a.q.r.Inputs = a.rounds, a.inputs
	a.q.undeclared = a.broke
}

// newAsking starts q's rounds of input: call ends with the call, pause
// stops the request timeout while a person is asked, cancel ends the
// request in flight.
func (h *Host) newAsking(q *request, call context.Context, pause func() func(), cancel context.CancelCauseFunc) *asking {
	return &asking{h: h, q: q, call: call, pause: pause, cancel: cancel}
}

// asker is what the connection hands the requests of q's server during
// the call (an older server's elicitation/create, sampling/createMessage
// and roots/list).
func (a *asking) asker() *upstream.Asker {
	return &upstream.Asker{
		Elicit: func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			round, ok := a.nextRound()
			if !ok {
				return &mcp.ElicitResult{Action: AnswerDecline}, nil
			}
			req, err := a.elicitation(p, round)
			if err != nil {
				a.refused(ctx, a.request(InputElicitation, round), err.Error())
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
			}
			ans, err := a.ask(ctx, req)
			if err != nil {
				return nil, err
			}
			return &mcp.ElicitResult{Action: ans.Action, Content: ans.Content}, nil
		},
		Sample: func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			round, ok := a.nextRound()
			if !ok {
				return nil, &jsonrpc.Error{Code: upstream.CodeSamplingRefused, Message: "sampling refused: too many requests during one call"}
			}
			res, refusal := a.sample(ctx, p, place{round: round, together: 1})
			if refusal != "" {
				return nil, &jsonrpc.Error{Code: upstream.CodeSamplingRefused, Message: "sampling refused: " + refusal}
			}
			return res, nil
		},
		Roots: func(ctx context.Context, _ *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
			round, ok := a.nextRound()
			if !ok {
				return nil, &jsonrpc.Error{Code: upstream.CodeRootsRefused, Message: "roots refused: too many requests during one call"}
			}
			res, refusal := a.roots(ctx, place{round: round, together: 1})
			if refusal != "" {
				return nil, &jsonrpc.Error{Code: upstream.CodeRootsRefused, Message: "roots refused: " + refusal}
			}
			return res, nil
		},
		Undeclared: func(method string) {
			a.mu.Lock()
			if a.broke == "" {
				a.broke = method
			}
			a.mu.Unlock()
			kind := map[string]string{"elicitation/create": InputElicitation, "sampling/createMessage": InputSampling,
				"roots/list": InputRoots}[method]
			if kind == "" {
				kind = method
			}
			a.refused(context.Background(), a.request(kind, 0), a.undeclared(kind))
		},
	}
}

// samplingMode is servers[].sampling as a person reads it: an entry that
// leaves it out has the default, deny.
func samplingMode(s string) string {
	if s == "" {
		return config.SamplingDeny
	}
	return s
}

// undeclared says why the host did not declare a client feature.
func (a *asking) undeclared(kind string) string {
	switch kind {
	case InputElicitation:
		return "refused: Airlock declared no elicitation to servers (it has nobody to ask: Options.Elicit)"
	case InputSampling:
		return fmt.Sprintf("refused: Airlock declared no sampling to this server (servers[].sampling is %s)", samplingMode(a.q.srv.cfg.Sampling))
	case InputRoots:
		return "refused: Airlock declared no roots to servers (it has none of its own to give: Options.Roots)"
	}
	return fmt.Sprintf("refused: Airlock declares no %s to servers", kind)
}

// nextRound counts a round; past the limit it ends the call.
func (a *asking) nextRound() (int, bool) {
	a.mu.Lock()
	a.rounds++
	n := a.rounds
	a.mu.Unlock()
	if n > a.h.maxInputRounds() {
		a.cancel(errInputRounds)
		return n, false
	}
	return n, true
}

// tooManyRounds is the message of a call whose server asked too often.
func (h *Host) tooManyRounds(q *request) string {
	return fmt.Sprintf("%s: server %s asked for input more than %d times during one call (limits.max_input_rounds); the call was stopped",
		q.tool.Name, q.tool.Server, h.maxInputRounds())
}

// maxInputRounds is limits.max_input_rounds; zero (a configuration built
// in code) means the default, 8: never unbounded.
func (h *Host) maxInputRounds() int {
	if n := h.cfg.Limits.MaxInputRounds; n > 0 {
		return n
	}
	return 8
}

// inputRound answers an input_required result of a 2026-07-28 server:
// the params of the call's next round, or why the call ends.
func (a *asking) inputRound(ctx context.Context, params *mcp.CallToolParams, res *mcp.CallToolResult) (*mcp.CallToolParams, error) {
	tool := a.q.tool
	round, ok := a.nextRound()
	if !ok {
		return nil, &inputError{kind: ContractError, msg: a.h.tooManyRounds(a.q)}
	}
	a.mu.Lock()
	dropped := a.state && res.RequestState == ""
	a.state = a.state || res.RequestState != ""
	a.mu.Unlock()
	if dropped {
		return nil, a.contract("server %s asked for input again without the requestState it had kept until then", tool.Server)
	}

	// No requests: the server sheds load and asks to be called again.
	if len(res.InputRequests) == 0 {
		select {
		case <-time.After(time.Duration(round) * 100 * time.Millisecond):
		case <-ctx.Done():
			return nil, &inputError{kind: Cancelled, msg: tool.Name + ": cancelled"}
		}
		next := *params
		next.InputResponses, next.RequestState = nil, res.RequestState
		return &next, nil
	}

	if err := a.declared(ctx, res.InputRequests, round); err != nil {
		return nil, err
	}
	keys, asks, err := a.roundAsks(ctx, res.InputRequests, round)
	if err != nil {
		return nil, err
	}
	out, err := runAsks(ctx, asks, a.q.call.AskAtOnce)
	if err != nil {
		return nil, err
	}
	responses := mcp.InputResponseMap{}
	for i, key := range keys {
		responses[key] = out[i]
	}
	next := *params
	next.InputResponses, next.RequestState = responses, res.RequestState
	return &next, nil
}

// contract is the error that ends the call contract_error between
// rounds: the server broke the contract.
func (a *asking) contract(format string, args ...any) error {
	return &inputError{kind: ContractError, msg: a.q.tool.Name + ": " + fmt.Sprintf(format, args...)}
}

// declared checks that each of a round's requests is for a feature the
// host declared; one that is not is refused, and ends the call
// contract_error.
func (a *asking) declared(ctx context.Context, requests mcp.InputRequestMap, round int) error {
	tool := a.q.tool
	for _, key := range slices.Sorted(maps.Keys(requests)) {
		switch p := requests[key].(type) {
		case *mcp.ElicitParams:
			if a.h.opts.Elicit == nil {
				req := a.request(InputElicitation, round)
				req.Message = a.h.gov.scrub(p.Message)
				a.refused(ctx, req, a.undeclared(InputElicitation))
				return a.contract("server %s asked for elicitation, which Airlock did not declare to it", tool.Server)
			}
		case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
			if !a.q.srv.cfg.MaySample() {
				a.refused(ctx, a.request(InputSampling, round), a.undeclared(InputSampling))
				return a.contract("server %s asked for sampling, which Airlock did not declare to it (servers[].sampling is %s)", tool.Server, samplingMode(a.q.srv.cfg.Sampling))
			}
		case *mcp.ListRootsParams:
			if a.h.opts.Roots == nil {
				a.refused(ctx, a.request(InputRoots, round), a.undeclared(InputRoots))
				return a.contract("server %s asked for %s, which Airlock did not declare to it", tool.Server, InputRoots)
			}
		default:
			kind := fmt.Sprintf("%T", p)
			a.refused(ctx, a.request(kind, round), a.undeclared(kind))
			return a.contract("server %s asked for %s, which Airlock did not declare to it", tool.Server, kind)
		}
	}
	return nil
}

// An ask puts one request of a round to the person, the sampler or the
// roots lister, and returns the response for the server.
type ask func(ctx context.Context) (mcp.InputResponse, error)

// roundAsks checks each request of a round before anyone is asked, and
// returns the requests' keys, in order, and what asks each.
func (a *asking) roundAsks(ctx context.Context, requests mcp.InputRequestMap, round int) (keys []string, asks []ask, err error) {
	tool := a.q.tool
	// A form must compile; a sampling request needs no more than basic
	// sampling; a request for roots needs no check.
	keys = slices.Sorted(maps.Keys(requests))
	together := 1
	if a.q.call.AskAtOnce {
		together = len(keys)
	}
	asks = make([]ask, len(keys))
	for i, key := range keys {
		at := place{round: round, key: key, together: together}
		switch p := requests[key].(type) {
		case *mcp.ElicitParams:
			req, err := a.elicitation(p, round)
			if err != nil {
				a.refused(ctx, a.request(InputElicitation, round), err.Error())
				return nil, nil, a.contract("server %s asked for input with an invalid request: %v", tool.Server, err)
			}
			req.Key, req.Together = key, together
			asks[i] = func(ctx context.Context) (mcp.InputResponse, error) {
				ans, err := a.ask(ctx, req)
				if err != nil {
					return nil, &inputError{kind: Cancelled, msg: tool.Name + ": cancelled while a person was asked for input"}
				}
				return &mcp.ElicitResult{Action: ans.Action, Content: ans.Content}, nil
			}
		case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
			basic, ok := p.(*mcp.CreateMessageParams)
			if !ok {
				var err error
				if basic, err = withoutTools(p.(*mcp.CreateMessageWithToolsParams)); err != nil {
					a.refused(ctx, a.request(InputSampling, round), "refused: "+err.Error())
					return nil, nil, a.contract("server %s asked for %v", tool.Server, err)
				}
			}
			asks[i] = func(ctx context.Context) (mcp.InputResponse, error) {
				// A refusal cannot be an input response: the call ends.
				sampled, refusal := a.sample(ctx, basic, at)
				if refusal != "" {
					return nil, &inputError{kind: Denied, msg: fmt.Sprintf("%s refused: server %s asked to sample a model, and the host refused: %s", tool.Name, tool.Server, refusal)}
				}
				return sampled, nil
			}
		case *mcp.ListRootsParams:
			asks[i] = func(ctx context.Context) (mcp.InputResponse, error) {
				// As for sampling, a refusal cannot be an input response.
				roots, refusal := a.roots(ctx, at)
				if refusal != "" {
					return nil, &inputError{kind: Denied, msg: fmt.Sprintf("%s refused: server %s asked for the client's roots, and the host refused: %s", tool.Name, tool.Server, refusal)}
				}
				return roots, nil
			}
		}
	}

	return keys, asks, nil
}

// runAsks puts a round's requests one at a time, in order, or, for a call
// that takes them at once (Call.AskAtOnce), all at once; the first
// failure ends the call, and the questions still open are withdrawn.
func runAsks(ctx context.Context, asks []ask, atOnce bool) ([]mcp.InputResponse, error) {
	out := make([]mcp.InputResponse, len(asks))
	if !atOnce {
		for i, ask := range asks {
			var err error
			if out[i], err = ask(ctx); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	batch, withdraw := context.WithCancel(ctx)
	defer withdraw()
	var wg sync.WaitGroup
	var once sync.Once
	var failed error
	for i, ask := range asks {
		wg.Go(func() {
			var err error
			if out[i], err = ask(batch); err != nil {
				once.Do(func() { failed = err })
				withdraw()
			}
		})
	}
	wg.Wait()
	if failed != nil {
		return nil, failed
	}
	return out, nil
}

// A place is where in a call's rounds of input a request was made: its
// round, the key the server gave it (input_required), and how many
// requests are put to the caller at once with it, itself included.
type place struct {
	round    int
	key      string
	together int
}

// elicitation is the InputRequest of an elicitation, checked: a form's
// schema compiles and is flat, a URL is an http(s) URL with a host.
func (a *asking) elicitation(p *mcp.ElicitParams, round int) (*InputRequest, error) {
	req := a.request(InputElicitation, round)
	req.Message = a.h.gov.scrub(p.Message)
	switch p.Mode {
	case "", ElicitForm:
		if p.URL != "" {
			return nil, errors.New("a form elicitation carries no URL")
		}
		// The schema's text reaches the person, or a client's model, as
		// the message does: without the host's secrets.
		f, raw, err := newForm(a.h.gov.scrubValue(p.RequestedSchema))
		if err != nil {
			return nil, err
		}
		req.Mode, req.Schema, req.form = ElicitForm, raw, f
	case ElicitURL:
		u, err := url.Parse(p.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" {
			return nil, errors.New("a URL elicitation needs an http or https URL")
		}
		req.Mode, req.URL, req.Domain = ElicitURL, p.URL, u.Hostname()
	default:
		return nil, fmt.Errorf("unknown elicitation mode %q", p.Mode)
	}
	return req, nil
}

// request is a new InputRequest of q's call.
func (a *asking) request(kind string, round int) *InputRequest {
	q := a.q
	return &InputRequest{ID: store.NewID("inq_"), ToolCallID: q.call.ID, Tool: q.tool.Name, Server: q.tool.Server,
		Round: round, Kind: kind, Together: 1}
}

// ask puts req to the person and returns the answer the server is sent:
// the person's, checked against the form, or a decline when there is
// nobody to ask or the person gave no answer that fits. It errs only
// when ctx ends.
func (a *asking) ask(ctx context.Context, req *InputRequest) (*InputAnswer, error) {
	a.audit(ctx, req, eventInputRequest, nil)
	elicit := a.q.call.Elicit
	if elicit == nil {
		elicit = a.h.opts.Elicit
	}
	if elicit == nil {
		return a.declined(ctx, req, "nobody to ask (no Elicitor)"), nil
	}
	inputs := a.relay(req)
	ctx, stop := a.bound(ctx)
	defer stop()
	resume := a.pause()
	defer resume()
	for try := 1; ; try++ {
		ans, err := a.elicitOnce(ctx, elicit, inputs, req, try)
		if ctx.Err() != nil {
			a.answered(ctx, req, &InputAnswer{Action: AnswerCancel}, "the call ended before the person answered")
			return nil, ctx.Err()
		}
		if err != nil {
			a.h.log.Warn("elicitor failed; the request is declined", "server", req.Server, "tool", req.Tool, "error", err)
			return a.declined(ctx, req, "the elicitor failed: "+a.h.gov.scrub(err.Error())), nil
		}
		if ans == nil {
			return a.declined(ctx, req, "nobody answered"), nil
		}
		content, err := req.content(ans)
		if err == nil {
			out := &InputAnswer{Action: ans.Action, Content: content, Reason: a.h.gov.scrub(ans.Reason)}
			a.answered(ctx, req, out, out.Reason)
			return out, nil
		}
		if try == maxAnswers {
			return a.declined(ctx, req, fmt.Sprintf("no answer fit the form in %d tries (%v)", maxAnswers, err)), nil
		}
		req.Problem = err.Error()
	}
}

// bound is ctx, ended also when the call ends: a person (or a model) is
// asked for as long as the call lasts and the server still wants the
// answer (an older server may withdraw its request).
func (a *asking) bound(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(a.call, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// declined records that the host declined req itself, and why.
func (a *asking) declined(ctx context.Context, req *InputRequest, reason string) *InputAnswer {
	ans := &InputAnswer{Action: AnswerDecline, Reason: reason}
	a.answered(ctx, req, ans, reason)
	return ans
}

// refused records a request the host refused without asking anyone.
func (a *asking) refused(ctx context.Context, req *InputRequest, reason string) {
	a.audit(ctx, req, eventInputRequest, nil)
	a.answered(ctx, req, &InputAnswer{}, reason)
}

// answered records the answer the server is sent for req, in the audit
// trail and in the call's result.
func (a *asking) answered(ctx context.Context, req *InputRequest, ans *InputAnswer, reason string) {
	a.answeredWith(ctx, req, ans, reason, nil)
}

// answeredWith is answered, with further fields for the audit event.
func (a *asking) answeredWith(ctx context.Context, req *InputRequest, ans *InputAnswer, reason string, fields map[string]any) {
	if fields == nil {
		fields = map[string]any{}
	}
	fields["action"] = ans.Action
	if reason != "" {
		fields["reason"] = reason
	}
	if ans.Content != nil {
		audit.Record(fields, "answer", a.q.tool.Name, ans.Content)
	}
	a.audit(ctx, req, eventInputAnswer, fields)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	a.inputs = append(a.inputs, InputRecord{ID: req.ID, Kind: req.Kind, Mode: req.Mode, Round: req.Round,
		Message: req.Message, Domain: req.Domain, Action: ans.Action, Reason: reason})
}

// audit writes an event about req: what was asked (a URL only by its
// domain, which may be all that is safe to keep of it; a sampling
// request's conversation as shape and hash unless audit.record_values
// covers the tool), and fields.
func (a *asking) audit(ctx context.Context, req *InputRequest, name string, fields map[string]any) {
	if fields == nil {
		fields = map[string]any{}
	}
	fields["request"], fields["kind"], fields["round"] = req.ID, req.Kind, req.Round
	if req.Mode != "" {
		fields["mode"] = req.Mode
	}
	if name == eventInputRequest {
		if req.Message != "" {
			fields["message"] = req.Message
		}
		if req.Domain != "" {
			fields["domain"] = req.Domain
		}
		if req.form != nil {
			fields["fields"] = req.form.names
		}
		if s := req.Sampling; s != nil {
			fields["max_tokens"] = s.MaxTokens
			audit.Record(fields, "sampling", a.q.tool.Name, map[string]any{"system_prompt": s.SystemPrompt, "messages": s.Messages})
		}
	}
	a.h.spill(ctx, a.q)
	a.h.audit(ctx, a.q.event(name, fields))
}

// sample answers a server's sampling request, made at at, as its
// sampling: says: ask puts it to the person first, allow goes straight to
// the sampler.
// It returns the sample, or why the request was refused.
func (a *asking) sample(ctx context.Context, p *mcp.CreateMessageParams, at place) (*mcp.CreateMessageResult, string) {
	q := a.q
	req := a.request(InputSampling, at.round)
	req.Key, req.Sampling, req.Together = at.key, a.samplingRequest(p), at.together
	sr := &SampleRequest{ToolCallID: q.call.ID, Tool: q.tool.Name, Server: q.tool.Server, Key: at.key,
		Round: at.round, Together: at.together, Params: a.scrubbedParams(p)}
	switch q.srv.cfg.Sampling {
	case config.SamplingAsk:
		sr.Together = 1 // asked once the person agreed, alone
		ans, err := a.ask(ctx, req)
		if err != nil {
			return nil, "the call ended before the person answered"
		}
		if ans.Action != AnswerAccept {
			if ans.Reason != "" {
				return nil, "nobody agreed: " + ans.Reason
			}
			return nil, "the person did not agree"
		}
	case config.SamplingAllow:
		a.audit(ctx, req, eventInputRequest, nil)
	default:
		reason := a.undeclared(InputSampling)
		a.refused(ctx, req, reason)
		return nil, reason
	}
	sampler := q.call.Sample
	if sampler == nil {
		sampler = a.h.opts.Sample
	}
	refuse := func(reason string) (*mcp.CreateMessageResult, string) {
		a.answeredWith(ctx, req, &InputAnswer{}, reason, map[string]any{"sampled": false})
		return nil, reason
	}
	if sampler == nil {
		return refuse("no model to sample (no Sampler)")
	}
	sctx, stop := a.bound(ctx)
	resume := a.pause()
	res, err := sampler(sctx, sr)
	resume()
	stop()
	if err != nil || res == nil {
		reason := "the sampler gave no sample"
		if err != nil {
			reason = "the sampler failed: " + a.h.gov.scrub(err.Error())
		}
		return refuse(reason)
	}
	fields := map[string]any{"sampled": true, "model": res.Model, "stop_reason": res.StopReason}
	audit.Record(fields, "sample", q.tool.Name, res.Content)
	a.answeredWith(ctx, req, &InputAnswer{Action: AnswerAccept}, "", fields)
	return res, ""
}

// withoutTools is a sampling request as basic sampling has it, or an
// error if it needs sampling with tools, which the host never declares:
// tools, a tool choice, or a message of several content blocks.
func withoutTools(p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageParams, error) {
	if len(p.Tools) > 0 || p.ToolChoice != nil {
		return nil, errors.New("sampling with tools, which Airlock did not declare to it")
	}
	out := &mcp.CreateMessageParams{Meta: p.Meta, IncludeContext: p.IncludeContext, MaxTokens: p.MaxTokens,
		Metadata: p.Metadata, ModelPreferences: p.ModelPreferences, StopSequences: p.StopSequences,
		SystemPrompt: p.SystemPrompt, Temperature: p.Temperature}
	for _, m := range p.Messages {
		if m == nil || len(m.Content) != 1 {
			return nil, errors.New("a sampling message of several content blocks, which needs sampling with tools, which Airlock did not declare to it")
		}
		out.Messages = append(out.Messages, &mcp.SamplingMessage{Role: m.Role, Content: m.Content[0]})
	}
	return out, nil
}

// scrubbedParams is p with configured secrets scrubbed from its system
// prompt and its messages' text, as the person is shown it: what goes to
// a model is what the person agreed to, and no secret the host holds for
// a server reaches a client's model, as none reaches it in a tool result.
func (a *asking) scrubbedParams(p *mcp.CreateMessageParams) *mcp.CreateMessageParams {
	if p == nil {
		return nil
	}
	out := *p
	out.SystemPrompt = a.h.gov.scrub(p.SystemPrompt)
	out.Messages = make([]*mcp.SamplingMessage, len(p.Messages))
	for i, m := range p.Messages {
		if m == nil {
			continue
		}
		mm := *m
		if c, ok := m.Content.(*mcp.TextContent); ok {
			tc := *c
			tc.Text = a.h.gov.scrub(c.Text)
			mm.Content = &tc
		}
		out.Messages[i] = &mm
	}
	return &out
}

// samplingRequest is what a person is shown of a sampling request.
func (a *asking) samplingRequest(p *mcp.CreateMessageParams) *SamplingRequest {
	s := &SamplingRequest{SystemPrompt: a.h.gov.scrub(p.SystemPrompt), MaxTokens: p.MaxTokens}
	for _, m := range p.Messages {
		if m == nil {
			continue
		}
		text := ""
		switch c := m.Content.(type) {
		case *mcp.TextContent:
			text = c.Text
		case *mcp.ImageContent:
			text = "[image " + c.MIMEType + "]"
		case *mcp.AudioContent:
			text = "[audio " + c.MIMEType + "]"
		default:
			text = fmt.Sprintf("[%T]", c)
		}
		s.Messages = append(s.Messages, SamplingMessage{Role: string(m.Role), Text: a.h.gov.scrub(text)})
	}
	return s
}
