package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
)

// An exchange is one client request that the host's pipeline serves,
// perhaps in rounds: a tools/call, a prompts/get or a resources/read.
// Asking the client (asks.go), an approval question (approve.go) and a
// parked call (parked.go) need the same of each, whatever its method.
type exchange struct {
	// subject is what the request is for, as a signed request state
	// binds it: the tool's name for a call, the method and the name or
	// URI otherwise, so that a state of one never answers another.
	subject   string
	session   *mcp.ServerSession
	meta      mcp.Meta
	responses mcp.InputResponseMap // the answers the request carries
	state     string               // the request state it carries
	caps      func() *mcp.ClientCapabilities
	// needs is the method's result that ends a round with questions.
	needs func(reqs mcp.InputRequestMap, state string) mcp.Result
	// blank is a new result of the method, to decode one into.
	blank func() mcp.Result
}

// toolExchange, promptExchange and readExchange are the exchanges of
// the three methods.
func toolExchange(req *mcp.CallToolRequest) *exchange {
	p := req.Params
	return &exchange{subject: p.Name, session: req.Session, meta: p.GetMeta(),
		responses: p.InputResponses, state: p.RequestState, caps: req.ClientCapabilities,
		needs: func(reqs mcp.InputRequestMap, state string) mcp.Result {
			return &mcp.CallToolResult{InputRequests: reqs, RequestState: state}
		},
		blank: func() mcp.Result { return &mcp.CallToolResult{} }}
}

func promptExchange(req *mcp.GetPromptRequest) *exchange {
	p := req.Params
	return &exchange{subject: "prompts/get " + p.Name, session: req.Session, meta: p.GetMeta(),
		responses: p.InputResponses, state: p.RequestState, caps: req.ClientCapabilities,
		needs: func(reqs mcp.InputRequestMap, state string) mcp.Result {
			return &mcp.GetPromptResult{InputRequests: reqs, RequestState: state}
		},
		blank: func() mcp.Result { return &mcp.GetPromptResult{} }}
}

func readExchange(req *mcp.ReadResourceRequest) *exchange {
	p := req.Params
	ex := &exchange{subject: "resources/read " + p.URI, session: req.Session, meta: p.GetMeta(),
		responses: p.InputResponses, state: p.RequestState, caps: req.ClientCapabilities,
		blank: func() mcp.Result { return &mcp.ReadResourceResult{} }}
	ex.needs = func(reqs mcp.InputRequestMap, state string) mcp.Result {
		res := &mcp.ReadResourceResult{InputRequests: reqs, RequestState: state}
		if !ex.modern() {
			// For a 2025-11-25 client the SDK refuses a read result
			// without contents before its multi-round-trip middleware
			// can ask the client; an empty list passes, and the round
			// is answered by the retry.
			res.Contents = []*mcp.ResourceContents{}
		}
		return res
	}
	return ex
}

// answered reports whether the request is a retry: it carries answers or
// a request state.
func (ex *exchange) answered() bool { return len(ex.responses) > 0 || ex.state != "" }

// as is res as the result type R of its method's handler; nil stays nil.
func as[R mcp.Result](res mcp.Result, err error) (R, error) {
	r, _ := res.(R)
	return r, err
}

// A finisher turns the host's result of one exchange into its answer.
type finisher func(ctx context.Context, r *airlock.Result) (mcp.Result, error)
