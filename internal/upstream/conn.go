package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/schema"
)

// maxResponseDepth bounds the nesting of a server's response. Real results
// nest a handful of levels; the SDK's own bound is far higher.
const maxResponseDepth = 256

// A lineLimitReader fails once one line (one newline-delimited JSON-RPC
// message) grows past limit bytes, so that a server can never make the host
// buffer an unbounded message. The SDK's decoder has its own cap, but this
// one records why the connection broke, in words a person can act on.
type lineLimitReader struct {
	f     *os.File
	limit int
	n     int // bytes of the current line seen so far
	fault func(Fault)
	eof   func() // called when the server closes its stdout
}

func (r *lineLimitReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	if err == io.EOF && r.eof != nil {
		r.eof()
	}
	for _, b := range p[:n] {
		if b == '\n' {
			r.n = 0
			continue
		}
		r.n++
		if r.n > r.limit {
			r.fault(Fault{Kind: FaultOversize, Msg: fmt.Sprintf("server sent a message larger than %d bytes (limits.max_message_bytes)", r.limit)})
			return 0, errOversize
		}
	}
	return n, err
}

func (r *lineLimitReader) Close() error { return r.f.Close() }

var errOversize = fmt.Errorf("message too large")

// guardedTransport hands the SDK a connection that checks every response a
// server sends before the SDK decodes it.
type guardedTransport struct {
	inner mcp.Transport
	fault func(Fault)
}

func (t *guardedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &guardedConn{Connection: c, fault: t.fault}, nil
}

// A guardedConn rejects responses that are not strict JSON: duplicate keys,
// invalid UTF-8 or excessive nesting. The SDK's decoder would accept them and
// keep one of two duplicate values, so a check elsewhere could see the other
// one. A server that sends such a response is broken or hostile: the
// connection is closed with a contract fault rather than trusting any of it.
type guardedConn struct {
	mcp.Connection
	fault     func(Fault)
	closeOnce sync.Once
}

func (c *guardedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		c.noteSessionMissing(err)
		return nil, err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.Error != nil {
		var werr *jsonrpc.Error
		if !errors.As(resp.Error, &werr) {
			// Not the server's error, which is always a JSON-RPC error
			// object: the SDK's own, for a request whose answer stream
			// ended before the answer and cannot be resumed.
			resp.Error = fmt.Errorf("%w (%v)", ErrAnswerLost, resp.Error)
		}
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && len(resp.Result) > 0 {
		if err := schema.Check(resp.Result, &schema.DecodeOptions{MaxDepth: maxResponseDepth, MaxBytes: len(resp.Result)}); err != nil {
			c.fault(Fault{Kind: FaultMalformed, Msg: fmt.Sprintf("server sent a malformed response: %v", err)})
			return nil, io.ErrUnexpectedEOF
		}
	}
	return msg, nil
}

func (c *guardedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if err != nil {
		if w, ok := ctx.Value(writeNoteKey{}).(*writeNote); ok {
			if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
				w.err.CompareAndSwap(nil, &err)
			}
		}
		c.noteSessionMissing(err)
	}
	return err
}

// ErrAnswerLost is the error of a request whose answer stream (HTTP) ended
// before the answer came, with nothing to resume it from: the server may
// have acted on the request.
var ErrAnswerLost = errors.New("the server's answer stream ended before the answer")

type writeNoteKey struct{}

type writeNote struct{ err atomic.Pointer[error] }

// NoteWriteError returns a context for one request (a tools/call) and a
// function that reports how writing that request failed, or nil. A request
// whose write failed with an answer that says the server did not take it
// (HTTP 404 for the session, 401 or 403) was never acted on, whatever else
// happened to the call meanwhile: the connection breaking because of that
// very answer also cancels the call, and the caller's error may then be the
// cancellation instead.
func NoteWriteError(ctx context.Context) (context.Context, func() error) {
	w := &writeNote{}
	return context.WithValue(ctx, writeNoteKey{}, w), func() error {
		if p := w.err.Load(); p != nil {
			return *p
		}
		return nil
	}
}

// noteSessionMissing turns the server's 404 for the session into a fault:
// the session is gone, and nothing more may be sent on it.
func (c *guardedConn) noteSessionMissing(err error) {
	if errors.Is(err, mcp.ErrSessionMissing) {
		c.fault(Fault{Kind: FaultSessionExpired, Msg: "the server ended the session (HTTP 404 for its session id)"})
	}
}

// Fingerprint stands for an identifier in logs and audit events without
// revealing it (a session id may work as a credential; a tenant name may
// name a customer): the first 12 hex digits of its SHA-256, or "" for "".
func Fingerprint(id string) string {
	if id == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:6])
}
