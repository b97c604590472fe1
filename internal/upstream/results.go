package upstream

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The SDK decodes a result into its own types, and what they lack is
// gone: a tool's execution (MCP tasks), which the SDK does not know yet.
// A request sent with a context from WithRawResult shows its result, as
// the server sent it and after the strict check, to a function of the
// caller's before the SDK decodes it.

type rawResultKey struct{}

// WithRawResult returns a context whose requests show their results to f,
// as the server sent them, before the SDK decodes them. f is called on
// the connection's goroutines, before the request returns; it must not
// keep result, and should return quickly. An error the server answers
// with is not shown.
func WithRawResult(ctx context.Context, f func(result json.RawMessage)) context.Context {
	return context.WithValue(ctx, rawResultKey{}, f)
}

func rawResultOf(ctx context.Context) func(json.RawMessage) {
	if ctx == nil {
		return nil
	}
	f, _ := ctx.Value(rawResultKey{}).(func(json.RawMessage))
	return f
}

// rawResults are the requests of one stdio or in-process connection
// whose results someone wants to see (WithRawResult), by JSON-RPC id. A
// remote connection needs none: each request's answer comes on the
// response to its own POST, whose context says who wants it (http.go).
type rawResults struct {
	mu      sync.Mutex
	waiting map[jsonrpc.ID]func(json.RawMessage)
}

// sent notes a request sent with a context from WithRawResult.
func (r *rawResults) sent(ctx context.Context, msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return
	}
	f := rawResultOf(ctx)
	if f == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waiting == nil {
		r.waiting = map[jsonrpc.ID]func(json.RawMessage){}
	}
	r.waiting[req.ID] = f
	// A request that is never answered is forgotten when its caller
	// stops waiting.
	id := req.ID
	context.AfterFunc(ctx, func() {
		r.mu.Lock()
		delete(r.waiting, id)
		r.mu.Unlock()
	})
}

// answered shows a result to whoever wants it.
func (r *rawResults) answered(msg jsonrpc.Message) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return
	}
	r.mu.Lock()
	f, ok := r.waiting[resp.ID]
	delete(r.waiting, resp.ID)
	r.mu.Unlock()
	if ok && resp.Error == nil {
		f(resp.Result)
	}
}
