//lint:file-ignore SA1019 a server may still ask for a sample or the client's roots, which protocol version 2026-07-28 deprecates (SEP-2577); the host must answer it.

package upstream

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server asks its client for something during a call in one of two
// ways:
//
//   - a 2026-07-28 server ends the call with an input_required result
//     (SEP-2322), which the client answers by calling again. The
//     connection hands such a result back as it is (CallToolResult with
//     NeedsInput): the SDK's own rounds are off, so that the host runs
//     them, counts them and asks the person in the call's own context;
//   - an older server sends a request of its own (elicitation/create,
//     sampling/createMessage, roots/list) while the call is in flight, a
//     request that names no call. As with log messages, it goes to the
//     call it can only belong to (calls.go): the only tools/call in flight
//     on the connection, to that call's Asker. When there is none, or
//     more than one, nobody is asked: an elicitation is declined and a
//     sampling request refused.
//
// A client feature is declared only when the host can answer it:
// elicitation when it has a person to ask (Options.Elicitation), sampling
// when the server's configuration lets it sample (Options.Sampling), roots
// when it has a client whose roots it can relay (Options.Roots: the
// gateway). A request for any other client feature is answered "method
// not found", and the call it belongs to, if any, is told
// (Asker.Undeclared).

// An Asker is where the requests a server sends during one call go (see
// WithAsker). Its functions are called on goroutines of the connection,
// possibly concurrently, and only while the call is in flight; ctx ends
// when the server withdraws its request or the connection breaks.
type Asker struct {
	// Elicit answers an elicitation/create, when the host declared
	// elicitation. A URL request has a URL (the SDK checked it); a form's
	// request and answer are Elicit's to check (the host compiles the
	// schema and checks the answer against it), since the SDK's client
	// refuses forms MCP allows (a multi-select whose items carry a type
	// beside their titled choices, SEP-1330).
	Elicit func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	// Sample answers a sampling/createMessage, when the host declared
	// sampling: a result, or an error the server is sent (a
	// *jsonrpc.Error keeps its code; CodeSamplingRefused for a refusal).
	Sample func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	// Roots answers a roots/list, when the host declared roots: a result,
	// or an error the server is sent (a *jsonrpc.Error keeps its code;
	// CodeRootsRefused for a refusal).
	Roots func(ctx context.Context, p *mcp.ListRootsParams) (*mcp.ListRootsResult, error)
	// Undeclared is told of a request for a client feature the host did
	// not declare (method names it); the server is answered "method not
	// found".
	Undeclared func(method string)
}

type askerKey struct{}

// WithAsker returns a context whose tools/call sends the requests its
// server makes during the call to a.
func WithAsker(ctx context.Context, a *Asker) context.Context {
	return context.WithValue(ctx, askerKey{}, a)
}

// CodeSamplingRefused is the JSON-RPC error code of a sampling request
// the client refuses, as the specification gives it ("User rejected
// sampling request").
const CodeSamplingRefused = -1

// CodeRootsRefused is the JSON-RPC error code of a roots/list the client
// refuses although it declared roots (the request belongs to no call, or
// the call's own client has no roots to give): the specification names
// no code of its own for it, so it is the internal error.
const CodeRootsRefused = jsonrpc.CodeInternalError

// declare offers the server the client features opts asks for, with
// their handlers: elicitation (form and URL modes), sampling (without
// tools) and roots (without listChanged: the roots are each call's
// client's, and a connection serves many; offerOnly answers roots/list,
// which the SDK would answer with its own empty list).
func (c *Conn) declare(opts *Options, clientOpts *mcp.ClientOptions) {
	decl := clientOpts.Capabilities
	c.declared = decl
	if opts.Elicitation {
		decl.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}
		clientOpts.ElicitationHandler = c.elicit
	}
	if opts.Sampling {
		decl.Sampling = &mcp.SamplingCapabilities{}
		clientOpts.CreateMessageHandler = c.sample
	}
	if opts.Roots {
		decl.RootsV2 = &mcp.RootCapabilities{}
	}
}

// Offered is the clientCapabilities a request of a 2026-07-28 connection
// carries in its _meta (SEP-2575 declares them per request) for a call that
// can answer only some of the client features the connection declared: the
// declaration narrowed to what f says the call can answer. A server then
// knows what it may ask during the call, and refuses a tool that needs
// more (MissingRequiredClientCapabilityError, -32021). It is nil on a
// connection of an older protocol version, whose capabilities are its
// session's.
func (c *Conn) Offered(f Features) map[string]any {
	if c.ProtocolVersion() < statelessVersion {
		return nil
	}
	caps := map[string]any{}
	if e := c.declared.Elicitation; e != nil && (f.Form || f.URL) {
		modes := map[string]any{}
		if f.Form && e.Form != nil {
			modes["form"] = map[string]any{}
		}
		if f.URL && e.URL != nil {
			modes["url"] = map[string]any{}
		}
		if len(modes) > 0 {
			caps["elicitation"] = modes
		}
	}
	if c.declared.Sampling != nil && f.Sampling {
		caps["sampling"] = map[string]any{}
	}
	if c.declared.RootsV2 != nil && f.Roots {
		caps["roots"] = map[string]any{}
	}
	return caps
}

// Features are the client features one call can answer (Offered).
type Features struct {
	Form, URL bool // elicitation, form and URL modes
	Sampling  bool
	Roots     bool
}

// statelessVersion is the first protocol version whose requests carry the
// client's capabilities in their _meta.
const statelessVersion = "2026-07-28"

// asker returns the Asker of the call a request that names no call
// belongs to, or nil.
func (c *Conn) asker() *Asker {
	if call := c.calls.only(nil); call != nil {
		return call.ask
	}
	return nil
}

// elicit is the client's elicitation handler, when the host declared
// elicitation.
func (c *Conn) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a := c.asker()
	if a == nil || a.Elicit == nil {
		c.log.Warn("elicitation declined: it belongs to no single call in flight, so nobody can be asked", "mode", req.Params.Mode)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	return a.Elicit(ctx, req.Params)
}

// sample is the client's sampling handler, when the host declared
// sampling.
func (c *Conn) sample(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	var f func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	if a := c.asker(); a != nil {
		f = a.Sample
	}
	return answer(ctx, c, f, req.Params, "sampling request refused: it belongs to no single call in flight",
		&jsonrpc.Error{Code: CodeSamplingRefused, Message: "sampling refused: the request belongs to no single call in flight, so nobody can be asked"})
}

// roots is the answer to a roots/list, when the host declared roots.
func (c *Conn) roots(ctx context.Context, req *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	var f func(context.Context, *mcp.ListRootsParams) (*mcp.ListRootsResult, error)
	if a := c.asker(); a != nil {
		f = a.Roots
	}
	return answer(ctx, c, f, req.Params, "roots/list refused: it belongs to no single call in flight, so no client can be asked",
		&jsonrpc.Error{Code: CodeRootsRefused, Message: "roots refused: the request belongs to no single call in flight, so no client can be asked; ask during a tool call"})
}

// answer hands p, a request the server sent, to f, the answer the Asker of
// the call it belongs to has for it; with no such answer (the request
// belongs to no single call in flight), it is refused with refusal, and
// the log says note.
func answer[P, R any](ctx context.Context, c *Conn, f func(context.Context, P) (*R, error), p P, note string, refusal *jsonrpc.Error) (*R, error) {
	if f == nil {
		c.log.Warn(note)
		return nil, refusal
	}
	res, err := f(ctx, p)
	if err == nil && res == nil {
		err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the client gave no answer"}
	}
	return res, err
}

// offerOnly answers every request a server sends (roots/list,
// sampling/createMessage, elicitation/create) but ping and what decl
// declares with the standard JSON-RPC error for a method the client does
// not have, -32601, as the protocol expects, where the SDK would answer
// roots/list with an empty list and the others with errors of its own. A
// roots/list when decl declares roots goes to the call's Asker (roots).
// The call in flight such a request belongs to, if any, is told
// (Asker.Undeclared). A method the SDK does not know at all never gets
// here; the SDK answers it with -32601 too. Notifications pass.
func (c *Conn) offerOnly(decl *mcp.ClientCapabilities) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if er, ok := req.(*mcp.ElicitRequest); ok && decl.Elicitation != nil && (er.Params.Mode == "" || er.Params.Mode == "form") {
				return c.elicit(ctx, er) // the form is the Asker's to check (see Asker.Elicit)
			}
			if lr, ok := req.(*mcp.ListRootsRequest); ok && decl.RootsV2 != nil {
				return c.roots(ctx, lr)
			}
			switch {
			case method == "ping", strings.HasPrefix(method, "notifications/"),
				method == "elicitation/create" && decl.Elicitation != nil,
				method == "sampling/createMessage" && decl.Sampling != nil:
				return next(ctx, method, req)
			}
			if a := c.asker(); a != nil && a.Undeclared != nil {
				a.Undeclared(method)
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method not found: %q", method)}
		}
	}
}
