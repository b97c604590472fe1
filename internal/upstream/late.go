package upstream

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A call whose caller stopped waiting (its request timed out, or it was
// cancelled) may still be answered: the server had acted on it after all.
// The SDK drops such an answer, since nobody waits for it any more; the
// connection can catch it first, for the host to keep as evidence of what
// happened to a write whose outcome it had to record as unknown.

type lateKey struct{}

// A LateWatch learns the JSON-RPC id of one call sent with the context
// WithLateWatch returns, so that Conn.AwaitLate can catch an answer to it
// that comes after the caller stopped waiting. A nil *LateWatch learns
// nothing.
type LateWatch struct {
	mu   sync.Mutex
	id   jsonrpc.ID
	sent bool // id is the request's
}

// learned returns the id the watch learned, if it did.
func (w *LateWatch) learned() (jsonrpc.ID, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.id, w.sent
}

// WithLateWatch returns a context for one call and the watch that learns
// its request's id.
func WithLateWatch(ctx context.Context) (context.Context, *LateWatch) {
	w := &LateWatch{}
	return context.WithValue(ctx, lateKey{}, w), w
}

// A LateAnswer is what a server answered to a call after its caller had
// stopped waiting: a result, or the server's JSON-RPC error.
type LateAnswer struct {
	Result json.RawMessage
	Err    error
	At     time.Time
}

// lateAnswers are the calls of one connection whose answers are awaited
// after their callers stopped waiting.
type lateAnswers struct {
	mu      sync.Mutex
	waiting map[jsonrpc.ID]func(LateAnswer)
}

// sent notes the id of a call request sent with a LateWatch's context.
func (l *lateAnswers) sent(ctx context.Context, msg jsonrpc.Message) {
	if l == nil {
		return
	}
	w, _ := ctx.Value(lateKey{}).(*LateWatch)
	if req, ok := msg.(*jsonrpc.Request); ok && w != nil && req.IsCall() {
		w.mu.Lock()
		w.id, w.sent = req.ID, true
		w.mu.Unlock()
	}
}

// answered hands an answer that is awaited to its taker, in a goroutine of
// its own so that reading goes on.
func (l *lateAnswers) answered(msg jsonrpc.Message) {
	resp, ok := msg.(*jsonrpc.Response)
	if l == nil || !ok {
		return
	}
	l.mu.Lock()
	f := l.waiting[resp.ID]
	delete(l.waiting, resp.ID)
	l.mu.Unlock()
	if f != nil {
		go f(LateAnswer{Result: resp.Result, Err: resp.Error, At: time.Now()})
	}
}

// AwaitLate calls f, once, with the answer to the call w watched if one
// comes within d. It reports whether it can: not when the call's request
// was never sent, nor on a Streamable HTTP connection, where a request's
// answer stream closes when its caller stops waiting.
func (c *Conn) AwaitLate(w *LateWatch, d time.Duration, f func(LateAnswer)) bool {
	if c.late == nil || w == nil {
		return false
	}
	id, sent := w.learned()
	if !sent {
		return false
	}
	c.late.mu.Lock()
	if c.late.waiting == nil {
		c.late.waiting = map[jsonrpc.ID]func(LateAnswer){}
	}
	c.late.waiting[id] = f
	c.late.mu.Unlock()
	time.AfterFunc(d, func() {
		c.late.mu.Lock()
		delete(c.late.waiting, id)
		c.late.mu.Unlock()
	})
	return true
}
