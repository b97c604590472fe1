package upstream

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a server sends during a call but names no call by (log messages,
// logs.go; requests for a client feature, asks.go) is tied to the call it
// can only belong to through one registry: the tools/call requests of the
// connection in flight (and its prompts/get and resources/read requests,
// which a server may ask or log during too), each with what its caller
// asked for in its context.

// calls are the tools/call requests of one connection awaiting their
// answers.
type calls struct {
	mu sync.Mutex
	m  map[*inFlight]bool
}

// An inFlight is one tools/call on its way: its LogWatch (nil when it
// asked for no log messages) and its Asker (nil when it has none).
type inFlight struct {
	logs *logWatch
	ask  *Asker
}

type inFlightKey struct{}

// watchCalls is a sending middleware that registers each tools/call while
// it is in flight, with what its context carries (WithLogWatch,
// WithAsker), and marks the request's context with it, and so the
// response stream a remote server answers it on.
func (c *Conn) watchCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" && method != "prompts/get" && method != "resources/read" {
			return next(ctx, method, req)
		}
		call := &inFlight{logs: c.logWatch(ctx, req)}
		call.ask, _ = ctx.Value(askerKey{}).(*Asker)
		c.calls.enter(call)
		defer c.calls.leave(call)
		return next(context.WithValue(ctx, inFlightKey{}, call), method, req)
	}
}

func (l *calls) enter(call *inFlight) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[*inFlight]bool{}
	}
	l.m[call] = true
}

func (l *calls) leave(call *inFlight) {
	l.mu.Lock()
	delete(l.m, call)
	l.mu.Unlock()
	if w := call.logs; w != nil {
		w.mu.Lock()
		w.f = nil
		w.mu.Unlock()
	}
}

// only returns the one call in flight, or with among, the one call in
// flight among those it accepts; nil when there are none or several.
func (l *calls) only(among func(*inFlight) bool) *inFlight {
	l.mu.Lock()
	defer l.mu.Unlock()
	var one *inFlight
	for call := range l.m {
		if among != nil && !among(call) {
			continue
		}
		if one != nil {
			return nil
		}
		one = call
	}
	return one
}
