package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/config"
)

// DialHTTP connects to a remote server over Streamable HTTP. client carries
// every request: the host gives it a transport that dials only through the
// egress guard, adds the partition's credentials, and follows no redirects.
// On top of it, DialHTTP bounds what the server may send (a JSON response
// or one server-sent event larger than the message cap breaks the
// connection with a contract fault), closes a stream that stays silent for
// stream_read_timeout (the SDK then resumes it with Last-Event-ID where the
// server supports that), and, when terminate_on_close is false, keeps the
// session's DELETE from being sent when the connection closes.
//
// A 404 for the session (the server forgot it) breaks the connection with
// a FaultSessionExpired fault: the host then opens a new session rather
// than sending anything more on this one.
func DialHTTP(ctx context.Context, srv *config.Server, client *http.Client, opts *Options) (*Conn, error) {
	if opts == nil {
		opts = &Options{}
	}
	if client == nil {
		return nil, &StartError{Server: srv.ID, Msg: fmt.Sprintf("server %s: no HTTP client", srv.ID)}
	}
	limit := cmp(opts.MaxMessageBytes, 16<<20)
	c := newConn(srv, opts)
	wrapped := *client
	wrapped.Transport = &httpLimits{
		base:       transportOf(client),
		limit:      limit,
		streamIdle: srv.StreamReadTimeout,
		terminate:  srv.TerminateOnClose,
		fault:      c.setFault,
	}
	t := &mcp.StreamableClientTransport{
		Endpoint:   srv.URL,
		HTTPClient: &wrapped,
		// httpLimits enforces the cap and says why; the SDK's own bound is
		// a backstop.
		MaxEventSize: 2 * limit,
	}
	if err := c.handshake(ctx, t, opts, srv.ProbeTimeout); err != nil {
		c.Close()
		return nil, err
	}
	go func() {
		c.session.Wait()
		c.setFault(Fault{Kind: FaultExited, Msg: "the connection to the server ended"})
	}()
	c.log.Info("server ready", "protocol", c.ProtocolVersion(), "session", Fingerprint(c.session.ID()))
	return c, nil
}

func transportOf(c *http.Client) http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}

// httpLimits is the round tripper under the SDK's Streamable HTTP client.
type httpLimits struct {
	base       http.RoundTripper
	limit      int
	streamIdle time.Duration
	terminate  bool
	fault      func(Fault)
}

func (t *httpLimits) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodDelete && !t.terminate {
		// terminate_on_close: false. The SDK ends every session with a
		// DELETE; answering it here, as a server that does not let clients
		// end sessions would, leaves the session to the server.
		if req.Body != nil {
			req.Body.Close()
		}
		return &http.Response{
			Status: "405 Method Not Allowed", StatusCode: http.StatusMethodNotAllowed,
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, Body: http.NoBody, Request: req,
		}, nil
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if strings.EqualFold(mt, "text/event-stream") {
		resp.Body = &sseBody{body: resp.Body, limit: t.limit, idle: t.streamIdle, fault: t.fault}
	} else {
		resp.Body = &jsonBody{body: resp.Body, limit: t.limit, fault: t.fault}
	}
	return resp, nil
}

// CloseIdleConnections passes the call on, so that closing the SDK's
// client frees the pooled connections.
func (t *httpLimits) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func oversize(limit int) Fault {
	return Fault{Kind: FaultOversize, Msg: fmt.Sprintf("server sent a message larger than %d bytes (limits.max_message_bytes)", limit)}
}

// A jsonBody is a response body that holds one message: it may not be
// larger than the cap.
type jsonBody struct {
	body  io.ReadCloser
	limit int
	n     int
	fault func(Fault)
}

func (b *jsonBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.n += n
	if b.n > b.limit {
		b.fault(oversize(b.limit))
		return 0, errOversize
	}
	return n, err
}

func (b *jsonBody) Close() error { return b.body.Close() }

// An sseBody is a stream of server-sent events: no one event may be larger
// than the cap, and the stream may not stay silent for longer than idle (a
// keep-alive comment counts as traffic).
type sseBody struct {
	body  io.ReadCloser
	limit int
	idle  time.Duration
	fault func(Fault)

	n        int  // bytes of the current event
	lineEnd  bool // the previous byte ended a line
	idleHit  bool
	mu       sync.Mutex
	closed   bool
	closeErr error
}

// errStreamIdle ends a stream that stayed silent too long. The SDK treats
// it like any broken stream: it resumes where the server supports that.
var errStreamIdle = errors.New("the server's stream stayed silent past stream_read_timeout")

func (b *sseBody) Read(p []byte) (int, error) {
	var timer *time.Timer
	if b.idle > 0 {
		timer = time.AfterFunc(b.idle, func() {
			b.mu.Lock()
			b.idleHit = true
			b.mu.Unlock()
			b.Close()
		})
	}
	n, err := b.body.Read(p)
	if timer != nil && !timer.Stop() {
		b.mu.Lock()
		hit := b.idleHit
		b.mu.Unlock()
		if hit {
			return 0, errStreamIdle
		}
	}
	for _, c := range p[:n] {
		switch c {
		case '\r':
		case '\n':
			if b.lineEnd {
				b.n = 0 // a blank line ends the event
			}
			b.lineEnd = true
		default:
			b.lineEnd = false
			b.n++
			if b.n > b.limit {
				b.fault(oversize(b.limit))
				return 0, errOversize
			}
		}
	}
	return n, err
}

func (b *sseBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.closed = true
		b.closeErr = b.body.Close()
	}
	return b.closeErr
}

// SessionID returns the session id the server assigned, or "" (a stdio or
// stateless server).
func (c *Conn) SessionID() string {
	if c.session == nil {
		return ""
	}
	return c.session.ID()
}
