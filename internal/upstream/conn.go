package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"

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
// server sends before the SDK decodes it. It serves stdio and in-process
// transports; a remote connection is checked in its HTTP round tripper
// instead (http.go), because the SDK's Streamable HTTP connection must reach
// the SDK unwrapped: the SDK tells it the negotiated protocol version
// through an unexported method, which a wrapper would hide.
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
	fault func(Fault)
}

func (c *guardedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return nil, err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && len(resp.Result) > 0 {
		if err := schema.Check(resp.Result, &schema.DecodeOptions{MaxDepth: maxResponseDepth, MaxBytes: len(resp.Result)}); err != nil {
			c.fault(Fault{Kind: FaultMalformed, Msg: fmt.Sprintf("server sent a malformed response: %v", err)})
			return nil, io.ErrUnexpectedEOF
		}
	}
	return msg, nil
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
