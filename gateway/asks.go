//lint:file-ignore SA1019 a server may still ask for a sample or its client's roots, which protocol version 2026-07-28 deprecates (SEP-2577); the gateway relays them to its client.

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
)

// A server may ask a person something during a call (an elicitation, an
// input_required round, a sampling request its sampling: ask puts to a
// person), want a model sampled (sampling: allow) or ask for its client's
// roots. Through the gateway, the person, the model and the roots are the
// client's: each question goes to the client that made the call, and to
// no other, when it declared the capability; otherwise the host is told
// no (a declined elicitation, a refused sampling or roots request), never
// left waiting.
//
//   - A 2025-11-25 client is asked during its own tools/call, on its
//     session: elicitation/create (form or URL mode, as it declared),
//     sampling/createMessage and roots/list.
//   - A 2026-07-28 client cannot be sent requests: its call ends the round
//     with an input_required result carrying the question, while the
//     host's call waits; the client's retry, with the answer and the
//     signed request state, takes the call up again (parked.go).
//
// A sampling request a person must agree to (sampling: ask) reaches the
// client as a form with one yes-or-no field; only yes lets it on.

// asking is what one call's client can be asked, by its declared
// capabilities.
type asking struct {
	form, url, sampling, roots bool
	modern                     bool // a 2026-07-28 request: questions travel as input_required rounds
}

// askingOf reads what ex's client declared.
func askingOf(ex *exchange) asking {
	a := asking{modern: ex.modern()}
	caps := ex.caps()
	if caps == nil {
		return a
	}
	a.form = formElicitation(caps)
	a.url = caps.Elicitation != nil && caps.Elicitation.URL != nil
	a.sampling = caps.Sampling != nil
	// A client that declares roots without listChanged has RootsV2 only;
	// one whose capabilities were written by an older SDK may carry an
	// empty roots object it never meant, and only listChanged tells.
	a.roots = caps.RootsV2 != nil || caps.Roots.ListChanged
	return a
}

// any reports whether the client can be asked anything.
func (a asking) any() bool { return a.form || a.url || a.sampling || a.roots }

// offers is what a request offers its server of what the client declared,
// of what the gateway relays during one.
func (a asking) offers() *airlock.ClientFeatures {
	return &airlock.ClientFeatures{Elicitation: a.form, ElicitURL: a.url, Sampling: a.sampling, Roots: a.roots}
}

// modern reports whether ex came from a 2026-07-28 client: its _meta
// names the protocol version, or its session negotiated it.
func (ex *exchange) modern() bool {
	if ex.meta != nil {
		if _, ok := ex.meta[mcp.MetaKeyProtocolVersion]; ok {
			return true
		}
	}
	if ex.session == nil {
		return false
	}
	p := ex.session.InitializeParams()
	return p == nil || p.ProtocolVersion >= "2026-07-28"
}

// errNotDeclared is why a question was not put to the client.
type errNotDeclared string

func (e errNotDeclared) Error() string {
	return "the gateway's client did not declare " + string(e) + ", so it cannot be asked"
}

// inputParams is the question ir as the client is asked it, or an error
// when the client did not declare what it takes.
func (a asking) inputParams(ir *airlock.InputRequest) (mcp.InputRequest, error) {
	who := fmt.Sprintf("Server %s asks, during %s:\n\n", ir.Server, ir.Tool)
	switch {
	case ir.Kind == airlock.InputSampling:
		if !a.form {
			return nil, errNotDeclared("form elicitation")
		}
		return &mcp.ElicitParams{Mode: "form", Message: samplingQuestion(ir), RequestedSchema: allowSchema}, nil
	case ir.Mode == airlock.ElicitURL:
		if !a.url {
			return nil, errNotDeclared("URL elicitation")
		}
		return &mcp.ElicitParams{Mode: "url", Message: who + ir.Message, URL: ir.URL, ElicitationID: ir.ID}, nil
	}
	if !a.form {
		return nil, errNotDeclared("form elicitation")
	}
	var schema map[string]any
	if len(ir.Schema) > 0 {
		if err := json.Unmarshal(ir.Schema, &schema); err != nil {
			return nil, fmt.Errorf("the form's schema: %v", err)
		}
	}
	return &mcp.ElicitParams{Mode: "form", Message: who + ir.Message, RequestedSchema: schema}, nil
}

// allowSchema is the form a sampling request is put to a person with.
var allowSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"allow": map[string]any{"type": "boolean", "title": "Let the server have a model answer this",
			"description": "Yes passes the request to a model; no refuses it."},
	},
	"required": []string{"allow"},
}

// samplingQuestion shows a person what a server wants a model to answer.
func samplingQuestion(ir *airlock.InputRequest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Server %s, during %s, wants a model to answer this:\n", ir.Server, ir.Tool)
	if s := ir.Sampling; s != nil {
		if s.SystemPrompt != "" {
			fmt.Fprintf(&b, "\nsystem: %s\n", s.SystemPrompt)
		}
		for _, m := range s.Messages {
			fmt.Fprintf(&b, "\n%s: %s\n", m.Role, m.Text)
		}
		fmt.Fprintf(&b, "\n(at most %d tokens)", s.MaxTokens)
	}
	return b.String()
}

// inputAnswer is the client's answer to ir as the host takes it.
func inputAnswer(ir *airlock.InputRequest, res *mcp.ElicitResult) *airlock.InputAnswer {
	if res == nil {
		return &airlock.InputAnswer{Action: airlock.AnswerDecline}
	}
	if ir.Kind == airlock.InputSampling {
		if res.Action == airlock.AnswerAccept && res.Content["allow"] == true {
			return &airlock.InputAnswer{Action: airlock.AnswerAccept}
		}
		if res.Action == airlock.AnswerCancel {
			return &airlock.InputAnswer{Action: airlock.AnswerCancel}
		}
		return &airlock.InputAnswer{Action: airlock.AnswerDecline}
	}
	return &airlock.InputAnswer{Action: res.Action, Content: res.Content}
}

// runAsking runs the request ex through run and its result through
// finish, with its server's questions put to the client as it can be
// asked (a): a 2026-07-28 client's request is parked, a 2025-11-25
// client is asked on its session, and a client that declared none of it
// has every question declined.
func (g *Gateway) runAsking(ctx context.Context, ex *exchange, who caller, a asking,
	run func(ctx context.Context, k askers) *airlock.Result, finish finisher) (mcp.Result, error) {
	switch {
	case a.any() && a.modern:
		return g.park(ctx, ex, who, a, run, finish)
	case a.any():
		return finish(ctx, run(ctx, a.askSession(ctx, ex.session)))
	}
	return finish(ctx, run(ctx, a.decline()))
}

// askers are who answers a server's questions during one request: the
// Elicit, Sample and Roots of its airlock.Call (or PromptGet), and
// whether the host puts them at once.
type askers struct {
	elicit airlock.Elicitor
	sample airlock.Sampler
	roots  airlock.RootsLister
	atOnce bool
}

// onCall sets c's askers.
func (k askers) onCall(c *airlock.Call) {
	c.Elicit, c.Sample, c.Roots, c.AskAtOnce = k.elicit, k.sample, k.roots, k.atOnce
}

// onGet sets g's askers.
func (k askers) onGet(g *airlock.PromptGet) {
	g.Elicit, g.Sample, g.Roots, g.AskAtOnce = k.elicit, k.sample, k.roots, k.atOnce
}

// askSession returns the askers of a request of a 2025-11-25 client: each
// question is a request on the client's session, made in the context of
// the client's own request (req), so that it goes on that request's
// stream (a client need not listen on a stream of its own), and ends
// with it, or when the client leaves that stream: its events cannot be
// resumed, so an answer could never be asked for again.
func (a asking) askSession(req context.Context, ss *mcp.ServerSession) askers {
	gone := streamGoneOf(req)
	return a.via(func(ctx context.Context, _ string, _ int, p mcp.InputRequest) (mcp.InputResponse, error) {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		defer context.AfterFunc(req, func() { cancel(context.Cause(req)) })()
		if gone != nil {
			go func() {
				select {
				case <-gone:
					cancel(errStreamGone)
				case <-ctx.Done():
				}
			}()
		}
		asked := requestValues{ctx, req}
		var res mcp.InputResponse
		var err error
		switch p := p.(type) {
		case *mcp.ElicitParams:
			res, err = ss.Elicit(asked, p)
		case *mcp.CreateMessageParams:
			res, err = ss.CreateMessage(asked, p)
		case *mcp.ListRootsParams:
			res, err = ss.ListRoots(asked, p)
		default:
			return nil, fmt.Errorf("cannot ask %T", p)
		}
		if err != nil && ctx.Err() != nil && context.Cause(ctx) != nil {
			err = context.Cause(ctx) // why the question was taken back
		}
		return res, err
	})
}

var errStreamGone = errors.New("the client left the request's stream before answering")

// requestValues is a question's context with the values of the client's
// request (req) where its own has none: the SDK finds there which request
// the question belongs to, and so which stream it goes on.
type requestValues struct {
	context.Context
	req context.Context
}

func (c requestValues) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.req.Value(key)
}

// via returns the askers that put the server's questions to the client
// through send, which returns the client's answer; key is the name the
// server gave the question (inputKey when it gave none), together how
// many the host puts at once (InputRequest.Together).
func (a asking) via(send func(ctx context.Context, key string, together int, p mcp.InputRequest) (mcp.InputResponse, error)) askers {
	var k askers
	keyOf := func(key string) string {
		if key == "" {
			return inputKey
		}
		return key
	}
	k.elicit = func(ctx context.Context, ir *airlock.InputRequest) (*airlock.InputAnswer, error) {
		params, err := a.inputParams(ir)
		if err != nil {
			return nil, err
		}
		resp, err := send(ctx, keyOf(ir.Key), ir.Together, params)
		if err != nil {
			return nil, fmt.Errorf("the gateway's client: %w", err)
		}
		res, ok := resp.(*mcp.ElicitResult)
		if !ok {
			return nil, errors.New("the gateway's client answered a question with something else")
		}
		return inputAnswer(ir, res), nil
	}
	k.sample = func(ctx context.Context, sr *airlock.SampleRequest) (*mcp.CreateMessageResult, error) {
		if !a.sampling {
			return nil, errNotDeclared("sampling")
		}
		resp, err := send(ctx, keyOf(sr.Key), sr.Together, sr.Params)
		if err != nil {
			return nil, fmt.Errorf("the gateway's client: %w", err)
		}
		return sampledMessage(resp)
	}
	k.roots = func(ctx context.Context, rr *airlock.RootsRequest) (*mcp.ListRootsResult, error) {
		if !a.roots {
			return nil, errNotDeclared("roots")
		}
		resp, err := send(ctx, keyOf(rr.Key), rr.Together, &mcp.ListRootsParams{})
		if err != nil {
			return nil, fmt.Errorf("the gateway's client: %w", err)
		}
		res, ok := resp.(*mcp.ListRootsResult)
		if !ok {
			return nil, errors.New("the gateway's client did not answer the roots request with its roots")
		}
		return res, nil
	}
	return k
}

// decline returns the askers of a request whose client cannot be asked:
// the host declines the server's question and refuses its sampling and
// roots requests at once, saying why.
func (a asking) decline() askers {
	var k askers
	k.elicit = func(_ context.Context, ir *airlock.InputRequest) (*airlock.InputAnswer, error) {
		_, err := a.inputParams(ir)
		if err == nil {
			err = errors.New("the gateway's client cannot be asked during this call")
		}
		return nil, err
	}
	k.sample = func(context.Context, *airlock.SampleRequest) (*mcp.CreateMessageResult, error) {
		return nil, errNotDeclared("sampling")
	}
	k.roots = func(context.Context, *airlock.RootsRequest) (*mcp.ListRootsResult, error) {
		return nil, errNotDeclared("roots")
	}
	return k
}

// Elicit is the host's Elicitor for a host a gateway serves (with it, the
// host declares elicitation to servers): every call through the gateway
// brings its own (Call.Elicit), which goes first; a call made otherwise
// has no client to ask, and its server's question is declined.
func (g *Gateway) Elicit(context.Context, *airlock.InputRequest) (*airlock.InputAnswer, error) {
	return &airlock.InputAnswer{Action: airlock.AnswerDecline}, nil
}

var _ airlock.Elicitor = (*Gateway)(nil).Elicit

// Roots is the host's RootsLister for a host a gateway serves (with it,
// the host declares roots to servers): every call through the gateway
// brings its own (Call.Roots), which relays the request to the client
// whose call it is; a request during a call made otherwise has no client
// to ask, and is refused (as the connection refuses one outside any
// call).
func (g *Gateway) Roots(context.Context, *airlock.RootsRequest) (*mcp.ListRootsResult, error) {
	return nil, errors.New("no client of the gateway made this call, so there are no roots to give")
}

var _ airlock.RootsLister = (*Gateway)(nil).Roots
