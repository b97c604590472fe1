package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/schema"
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
	limit := orDefault(opts.MaxMessageBytes, 16<<20)
	c := newConn(srv, opts)
	wrapped := *client
	wrapped.Transport = &httpLimits{
		base:       transportOf(client),
		limit:      limit,
		streamIdle: srv.StreamReadTimeout,
		terminate:  srv.TerminateOnClose,
		oauth:      srv.OAuth != nil,
		trace:      opts.Trace,
		heard:      c.heard,
		fault:      c.setFault,
	}
	t := &mcp.StreamableClientTransport{
		Endpoint:   srv.URL,
		HTTPClient: &wrapped,
		// httpLimits enforces the cap and says why; the SDK's own bound is
		// a backstop.
		MaxEventSize: 2 * limit,
	}
	if err := c.connectSession(ctx, t, opts, "the connection to the server ended"); err != nil {
		return nil, err
	}
	c.log.Info("server ready", "protocol", c.ProtocolVersion(), "session", Fingerprint(c.session.ID()))
	return c, nil
}

func transportOf(c *http.Client) http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}

// httpLimits is the round tripper under the SDK's Streamable HTTP client:
// what guardedConn does for stdio, and what only HTTP has.
//
//   - Every message the server sends, as a JSON body or as an event's data,
//     is checked for strict JSON (no duplicate keys, valid UTF-8, bounded
//     depth) before the SDK reads it, and bounded by the message cap; a
//     violation breaks the connection with a contract fault.
//   - A session id the server assigns must be visible ASCII and at most
//     maxSessionID bytes long; another breaks the connection with a
//     contract fault, and is never sent back.
//   - A 404 for a request that carried the session id is the server saying
//     it forgot the session: the connection breaks with a
//     FaultSessionExpired fault, and nothing more is sent on it.
//   - The request of a call (a context from WithCallNote) learns whether
//     its POST failed on the way or was refused, and whether its answer
//     stream ended without the answer.
//   - With Options.Trace, every message posted and every message that
//     passed the checks is traced.
type httpLimits struct {
	base       http.RoundTripper
	limit      int
	streamIdle time.Duration
	terminate  bool
	oauth      bool                                                                // the server has oauth:, whose transport takes 401 and 403
	trace      func(sent bool, msg []byte)                                         // Options.Trace, or nil
	heard      func(stream context.Context, method string, params json.RawMessage) // Conn.heard
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
	note, _ := req.Context().Value(callNoteKey{}).(*CallNote)
	if req.Method != http.MethodPost {
		note = nil // a stream resumed with GET carries no request
	} else if t.trace != nil {
		t.tracePost(req)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		if req.Method == http.MethodGet && errors.Is(err, syscall.ECONNREFUSED) {
			// The SDK resumes a broken stream with GET, and retries for
			// many seconds; a refused connection means the server is gone
			// (a stream of a server that came back would be gone too), so
			// the connection breaks now and its calls end with it.
			t.fault(Fault{Kind: FaultRefused, Msg: "the server's stream broke, and the server refused the connection when it was to be resumed: nothing listens at its address any more"})
		}
		note.wrote(err)
		return resp, err
	}
	if err := checkSessionID(resp.Header.Values("Mcp-Session-Id")); err != nil {
		resp.Body.Close()
		f := Fault{Kind: FaultMalformed, Msg: "server sent an unusable session id (Mcp-Session-Id): " + err.Error()}
		t.fault(f)
		return nil, &f
	}
	if resp.StatusCode == http.StatusNotFound && req.Header.Get("Mcp-Session-Id") != "" {
		t.fault(Fault{Kind: FaultSessionExpired, Msg: "the server ended the session (HTTP 404 for its session id)"})
		note.wrote(fmt.Errorf("HTTP 404 for the session: %w", mcp.ErrSessionMissing))
	} else if resp.StatusCode/100 != 2 && (!t.oauth || resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		// The request reached the server (or a proxy in front of it),
		// which answered with no JSON-RPC message; with oauth:, 401 and
		// 403 are the credentials' business (the OAuth transport below).
		note.wrote(&StatusError{Code: resp.StatusCode})
	}
	if resp.Body == nil {
		return resp, nil
	}
	check := &messages{limit: t.limit, fault: t.fault, trace: t.trace, stream: req.Context(), heard: t.heard}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode/100 != 2 {
		// The SDK reads such a body whole, for the JSON-RPC error a
		// 2026-07-28 server answers with HTTP 400 or 404 (SEP-2575): it
		// is checked as any message when it says it is JSON, and bounded
		// in any case.
		if strings.EqualFold(mt, "application/json") {
			resp.Body = &jsonBody{body: resp.Body, check: check, response: note.answeredInBody}
		} else {
			resp.Body = struct {
				io.Reader
				io.Closer
			}{io.LimitReader(resp.Body, int64(t.limit)), resp.Body}
		}
		return resp, nil
	}
	if strings.EqualFold(mt, "text/event-stream") {
		resp.Body = &sseBody{body: resp.Body, idle: t.streamIdle, check: check, note: note, ctx: req.Context()}
	} else {
		resp.Body = &jsonBody{body: resp.Body, check: check}
	}
	return resp, nil
}

// tracePost traces the message a POST carries. The SDK's requests can
// give their body again (GetBody); one that cannot is read and put back.
func (t *httpLimits) tracePost(req *http.Request) {
	var body []byte
	switch {
	case req.GetBody != nil:
		if rc, err := req.GetBody(); err == nil {
			body, _ = io.ReadAll(rc)
			rc.Close()
		}
	case req.Body != nil:
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(b))
		if err != nil {
			return
		}
		body = b
	}
	if len(bytes.TrimSpace(body)) > 0 {
		t.trace(true, body)
	}
}

// maxSessionID bounds the session id a server may assign, in bytes. The
// protocol says only that it is visible ASCII; the host sends it back with
// every request, so it is bounded too, generously: a UUID takes 36 bytes,
// a signed token a few hundred.
const maxSessionID = 1024

// checkSessionID checks the session ids a response carries: at most one,
// of at most maxSessionID bytes, each a visible ASCII character (0x21 to
// 0x7E), as the protocol requires. Its error names the problem without
// quoting the id, which may be anything, of any size.
func checkSessionID(ids []string) error {
	switch {
	case len(ids) == 0:
		return nil
	case len(ids) > 1:
		return fmt.Errorf("%d session ids in one response; at most one is allowed", len(ids))
	case len(ids[0]) > maxSessionID:
		return fmt.Errorf("%d bytes long; at most %d are allowed", len(ids[0]), maxSessionID)
	}
	for i := 0; i < len(ids[0]); i++ {
		if c := ids[0][i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("byte %d is 0x%02x; only visible ASCII (0x21 to 0x7E) is allowed", i, c)
		}
	}
	return nil
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

// messages checks the messages of one response, and traces those that
// pass.
type messages struct {
	limit  int
	fault  func(Fault)
	trace  func(sent bool, msg []byte) // or nil
	stream context.Context             // the request's whose response carries them
	heard  func(stream context.Context, method string, params json.RawMessage)
}

var errMalformed = errors.New("malformed message")

// check checks one message (or batch) for strict JSON, and reports whether
// it holds a response: an object with an id and a result or an error.
func (m *messages) check(msg []byte) (response bool, err error) {
	if err := schema.Check(msg, &schema.DecodeOptions{MaxDepth: maxResponseDepth, MaxBytes: len(msg)}); err != nil {
		m.fault(Fault{Kind: FaultMalformed, Msg: fmt.Sprintf("server sent a malformed message: %v", err)})
		return false, errMalformed
	}
	if m.trace != nil {
		m.trace(false, msg)
	}
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(msg, &head) != nil {
		return false, nil
	}
	if head.Method == "" && len(head.ID) > 0 && (len(head.Result) > 0 || len(head.Error) > 0) {
		if f := rawResultOf(m.stream); f != nil && len(head.Result) > 0 {
			f(head.Result) // the answer to the POST's own request
		}
		return true, nil
	}
	if head.Method != "" && len(head.ID) == 0 && m.heard != nil {
		m.heard(m.stream, head.Method, head.Params)
	}
	return false, nil
}

// A jsonBody is a response body that holds one message: it may not be
// larger than the cap, and must be strict JSON. It is passed on as it is
// read and checked when it ends; a bad one ends with an error instead of
// EOF, so the SDK never decodes it.
type jsonBody struct {
	body     io.ReadCloser
	check    *messages
	response func() // told that the body is a JSON-RPC response, or nil
	buf      []byte
}

func (b *jsonBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if len(b.buf)+n > b.check.limit {
		b.check.fault(oversize(b.check.limit))
		return 0, errOversize
	}
	b.buf = append(b.buf, p[:n]...)
	if err == io.EOF && len(bytes.TrimSpace(b.buf)) > 0 {
		response, cerr := b.check.check(b.buf)
		if cerr != nil {
			return 0, cerr
		}
		if response && b.response != nil {
			b.response()
		}
	}
	return n, err
}

func (b *jsonBody) Close() error { return b.body.Close() }

// An sseBody is a stream of server-sent events: no one event may be larger
// than the cap, each event's data must be strict JSON, and the stream may
// not stay silent for longer than idle (a keep-alive comment counts as
// traffic). An event is checked in the Read that completes it, before the
// SDK can see it whole.
type sseBody struct {
	body  io.ReadCloser
	idle  time.Duration
	check *messages
	note  *CallNote       // the call whose answer this stream carries, or nil
	ctx   context.Context // the request's: its end is not a lost answer

	line     []byte // the current line
	data     []byte // the current event's data
	n        int    // bytes of the current event
	answered bool   // a response went by
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
			b.ended()
			return 0, errStreamIdle
		}
	}
	for _, c := range p[:n] {
		if c != '\n' {
			if b.n++; b.n > b.check.limit {
				b.check.fault(oversize(b.check.limit))
				return 0, errOversize
			}
			b.line = append(b.line, c)
			continue
		}
		if cerr := b.endLine(); cerr != nil {
			return 0, cerr
		}
	}
	if err != nil {
		b.ended()
	}
	return n, err
}

// endLine handles one line of the stream: data lines are collected, and a
// blank line ends the event, whose data is then checked.
func (b *sseBody) endLine() error {
	line := bytes.TrimSuffix(b.line, []byte("\r"))
	b.line = b.line[:0]
	if len(line) > 0 {
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if len(b.data) > 0 {
				b.data = append(b.data, '\n')
			}
			b.data = append(b.data, bytes.TrimPrefix(v, []byte(" "))...)
		}
		return nil
	}
	data := b.data
	b.data, b.n = b.data[:0], 0
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	response, err := b.check.check(data)
	if response {
		b.answered = true
	}
	return err
}

// ended notes, for the call whose answer the stream was to carry, that it
// ended without one (unless the call itself was given up).
func (b *sseBody) ended() {
	if b.note != nil && !b.answered && b.ctx.Err() == nil {
		b.note.lost.Store(true)
	}
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

// A StatusError is an HTTP answer other than 2xx (or 404 for the session,
// or 401/403) to a request: the server, or a proxy in front of it, got the
// request and answered without a JSON-RPC message. It may have acted on
// the request first.
type StatusError struct {
	Code int
	// Said is the JSON-RPC error the body held, as "JSON-RPC error CODE:
	// MESSAGE", or "" for a body that held none.
	Said string
}

func (e *StatusError) Error() string {
	if e.Code == http.StatusUnauthorized || e.Code == http.StatusForbidden {
		return fmt.Sprintf("the server answered HTTP %d %s: it wants credentials, and its configuration gives none (configure oauth: for it; see docs/remote.md)",
			e.Code, http.StatusText(e.Code))
	}
	if e.Said != "" {
		return fmt.Sprintf("the server answered HTTP %d %s, with %s", e.Code, http.StatusText(e.Code), e.Said)
	}
	return fmt.Sprintf("the server answered HTTP %d %s instead of a JSON-RPC message", e.Code, http.StatusText(e.Code))
}

// ErrAnswerLost is the error of a call whose answer stream ended before
// the answer came: the server may have acted on the request.
var ErrAnswerLost = errors.New("the server's answer stream ended before the answer")

type callNoteKey struct{}

// A CallNote learns what happened on the wire to one request (a
// tools/call) sent with the context WithCallNote returns. It is safe for
// concurrent use; a nil *CallNote notes nothing.
type CallNote struct {
	err  atomic.Pointer[error]
	lost atomic.Bool
	body atomic.Bool // an HTTP error's body held a JSON-RPC response
}

func (n *CallNote) answeredInBody() {
	if n != nil {
		n.body.Store(true)
	}
}

// BodyAnswered reports whether the body of the HTTP error that answered
// the request (WriteErr is a *StatusError) held a JSON-RPC response.
func (n *CallNote) BodyAnswered() bool { return n.body.Load() }

// WithCallNote returns a context for one request and the note that learns
// about it.
func WithCallNote(ctx context.Context) (context.Context, *CallNote) {
	n := &CallNote{}
	return context.WithValue(ctx, callNoteKey{}, n), n
}

func (n *CallNote) wrote(err error) {
	if n != nil {
		n.err.CompareAndSwap(nil, &err)
	}
}

// WriteErr reports how sending the request failed: an error of the
// transport below (the egress guard, the network, the OAuth transport's
// refusals), mcp.ErrSessionMissing for a 404 for the session, or a
// *StatusError for another HTTP answer that is not 2xx. The SDK
// turns such failures into errors of its own that may look like a JSON-RPC
// answer of the server, or, when the failure broke the connection, into a
// cancellation.
func (n *CallNote) WriteErr() error {
	if p := n.err.Load(); p != nil {
		return *p
	}
	return nil
}

// AnswerLost reports whether the request's answer stream ended without the
// answer.
func (n *CallNote) AnswerLost() bool { return n.lost.Load() }
