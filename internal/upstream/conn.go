package upstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/schema"
)

// Options tunes how servers are started and stopped. The zero value is what
// Airlock uses.
type Options struct {
	// Logger receives the host's log lines about the server, including every
	// line the server writes on stderr. Nil discards them.
	Logger *slog.Logger
	// ClientInfo names the host in the handshake. Nil means "airlock".
	ClientInfo *mcp.Implementation
	// StateDir is where each server gets a runtime directory (its HOME and
	// TMPDIR): StateDir/run/SERVER. Empty means a directory under os.TempDir.
	StateDir string
	// MaxMessageBytes caps one message from the server. Zero means 16 MiB.
	MaxMessageBytes int
	// StderrBytes is how much of the server's stderr is kept for failure
	// reports. Zero means 64 KiB.
	StderrBytes int
	// Grace is how long Close waits after closing stdin, and again after
	// SIGTERM, before escalating. Zero means 2s.
	Grace time.Duration
	// OnToolsChanged is called when the server says its tool list changed.
	OnToolsChanged func()
	// OnContentChanged is called when the server says its resource list
	// or its prompt list changed.
	OnContentChanged func()
	// OnResourceUpdated is called when the server says a resource it was
	// asked to watch (resources/subscribe) changed.
	OnResourceUpdated func(uri string)
	// Elicitation declares the elicitation capability, form and URL
	// modes, to the server: the host has a person to ask. An
	// elicitation/create the server sends during a call then goes to the
	// call's Asker (asks.go); without it, the server is answered "method
	// not found".
	Elicitation bool
	// Sampling declares the sampling capability (without tools) to the
	// server: its configuration lets it ask for samples. A
	// sampling/createMessage the server sends during a call then goes to
	// the call's Asker; without it, "method not found".
	Sampling bool
	// Roots declares the roots capability (without listChanged) to the
	// server: the host relays a call's roots/list to the call's client (the
	// gateway). A roots/list the server sends during a call then goes to
	// the call's Asker; without it, "method not found".
	Roots bool
	// SecretEnv holds secret environment values for the server (NAME to
	// value). They are added last and appear nowhere else.
	SecretEnv map[string]string
	// StopLater, when set, is given the stopping of a stdio server whose
	// start failed while it still runs, so that Start reports the failure
	// as soon as it is known, not after Close's waits (up to a few Grace
	// periods). The caller runs stop in the background and waits for it
	// before it relies on the server being gone. Nil stops the server
	// before Start returns.
	StopLater func(stop func())
	// Trace, when set, sees every JSON-RPC message the connection carries,
	// as JSON text: sent is true for what the host sends, false for what
	// the server sends. A message the host refuses (malformed, over the
	// size cap) is not traced; the connection's fault says why. Trace is
	// called on the connection's goroutines, never concurrently for one
	// direction of a stdio connection; it must not keep msg, and should
	// return quickly.
	Trace func(sent bool, msg []byte)
	// Track, when set, is told about a stdio server's process: running
	// true as soon as it has started (before the handshake), false once it
	// and everything it started have stopped. The host records them, so
	// that a host process that dies first leaves the next one what it
	// needs to stop them (StopLeftover).
	Track func(rec ProcessRecord, running bool)
}

// FaultKind says why a connection broke.
type FaultKind int

const (
	// FaultExited: the server process exited.
	FaultExited FaultKind = iota + 1
	// FaultOversize: the server sent a message over the size cap.
	FaultOversize
	// FaultMalformed: the server sent a response that is not strict JSON.
	FaultMalformed
	// FaultClosed: the host closed the connection.
	FaultClosed
	// FaultSessionExpired: a remote server no longer knows the session
	// (HTTP 404); a new session is needed.
	FaultSessionExpired
	// FaultRefused: a remote server refused the connection when a stream
	// was to be resumed: nothing listens at its address any more.
	FaultRefused
	// FaultStalled: a stdio server stopped reading its input, and a
	// message to it could not be written whole.
	FaultStalled
)

// A Fault is the first reason a connection stopped working.
type Fault struct {
	Kind FaultKind
	Msg  string
}

// Contract reports whether the fault is the server breaking the protocol
// contract, as opposed to the connection or process going away.
func (f *Fault) Contract() bool {
	return f.Kind == FaultOversize || f.Kind == FaultMalformed
}

func (f *Fault) Error() string { return f.Msg }

// A StartError reports why a server could not be connected.
type StartError struct {
	Server string
	// Contract is true when the server ran but broke the protocol contract
	// (an unacceptable version, no tools capability, an oversized or
	// malformed message), false when it could not be started or reached.
	Contract bool
	Msg      string
	// Stderr holds the last lines the server wrote on stderr, if any.
	Stderr string
	Err    error

	probeTimedOut bool // the version probe hit its bound
}

func (e *StartError) Error() string {
	msg := e.Msg
	if e.Stderr != "" {
		msg += "; its stderr ended with:\n" + indent(e.Stderr)
	}
	return msg
}

func (e *StartError) Unwrap() error { return e.Err }

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// A Conn is a live connection to one server: a stdio process (Start), an
// mcp.Transport (Dial) or Streamable HTTP (DialHTTP). Its methods are safe
// for concurrent use.
type Conn struct {
	cfg     config.Server
	log     *slog.Logger
	grace   time.Duration
	session *mcp.ClientSession

	// process is a stdio server's process (stdio.go); its cmd stays nil on
	// a connection made by Dial or DialHTTP.
	process

	fault  atomic.Pointer[Fault]
	broken chan struct{} // closed with the first fault
	// live ends with the first fault too, for calls to hang off.
	live    context.Context
	endLive context.CancelFunc

	progressMu sync.Mutex
	progress   map[string]*progressWatch // by progress token
	tokens     atomic.Uint64

	calls    calls                   // the tools/call requests in flight (calls.go)
	logs     logs                    // the session's log level (logs.go)
	declared *mcp.ClientCapabilities // the client features offered to the server (asks.go)

	// late catches answers that come after their callers stopped waiting
	// (late.go); nil on a remote connection.
	late *lateAnswers

	closeOnce sync.Once
	closeErr  error
}

// Dial connects to a server over t instead of starting its command: an
// in-process server (mcp.NewInMemoryTransports) or, later, a remote one.
// Every check of Start but those about the process applies.
func Dial(ctx context.Context, srv *config.Server, t mcp.Transport, opts *Options) (*Conn, error) {
	if opts == nil {
		opts = &Options{}
	}
	c := newConn(srv, opts)
	if err := c.connectSession(ctx, t, opts, "the server closed the connection"); err != nil {
		return nil, err
	}
	c.log.Info("server ready", "protocol", c.ProtocolVersion())
	return c, nil
}

// connectSession runs the handshake over t for a connection without a
// process, closing c if it fails. With no process to watch, the session
// ending by itself is how a server going away shows: it breaks the
// connection with a FaultExited fault that says ended.
func (c *Conn) connectSession(ctx context.Context, t mcp.Transport, opts *Options, ended string) error {
	if err := c.handshake(ctx, t, opts, c.cfg.ProbeTimeout); err != nil {
		c.Close()
		return err
	}
	go func() {
		c.session.Wait()
		c.setFault(Fault{Kind: FaultExited, Msg: ended})
	}()
	return nil
}

func newConn(srv *config.Server, opts *Options) *Conn {
	c := &Conn{
		cfg:     *srv,
		log:     opts.Logger,
		grace:   opts.Grace,
		process: newProcess(opts),
		broken:  make(chan struct{}),
	}
	c.live, c.endLive = context.WithCancel(context.Background())
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.log = c.log.With("server", srv.ID)
	if c.grace <= 0 {
		c.grace = 2 * time.Second
	}
	return c
}

// handshake runs the MCP handshake over t, with every response checked for
// strict JSON, and verifies the outcome against the server's configuration.
func (c *Conn) handshake(ctx context.Context, t mcp.Transport, opts *Options, probe time.Duration) *StartError {
	srv := &c.cfg
	var probeTimedOut atomic.Bool
	fail := func(contract bool, err error, format string, args ...any) *StartError {
		return &StartError{Server: srv.ID, Contract: contract, Msg: fmt.Sprintf(format, args...), Err: err, probeTimedOut: probeTimedOut.Load()}
	}
	var transport mcp.Transport = t // a remote one is checked in its round tripper (http.go)
	if !srv.Remote() {
		c.late = &lateAnswers{}
		var (
			stdout *stdoutWindow
			stdin  *os.File
		)
		if c.cmd != nil {
			stdout, stdin = c.stdoutSeen, c.stdin
		}
		transport = &guardedTransport{
			inner:  t,
			late:   c.late,
			stdout: stdout,
			stdin:  stdin,
			trace:  opts.Trace,
			heard:  c.heard,
			fault: func(f Fault) {
				c.setFault(f)
				if c.stdout != nil {
					c.stdout.Close()
				}
			},
		}
	}
	info := opts.ClientInfo
	if info == nil {
		info = &mcp.Implementation{Name: "airlock", Version: "dev"}
	}
	// The host offers servers no client features but elicitation, when
	// it has a person to ask, sampling, to a server that may sample, and
	// roots, when it relays them to the client whose call it is (asks.go). It runs a call's rounds of input itself: the
	// SDK hands input_required results back.
	decl := &mcp.ClientCapabilities{}
	clientOpts := &mcp.ClientOptions{
		Logger:         c.log,
		Capabilities:   decl,
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	}
	c.declare(opts, clientOpts)
	if opts.OnToolsChanged != nil {
		notify := opts.OnToolsChanged
		clientOpts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { notify() }
	}
	if opts.OnContentChanged != nil {
		notify := opts.OnContentChanged
		clientOpts.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) { notify() }
		clientOpts.PromptListChangedHandler = func(context.Context, *mcp.PromptListChangedRequest) { notify() }
	}
	if opts.OnResourceUpdated != nil {
		updated := opts.OnResourceUpdated
		clientOpts.ResourceUpdatedHandler = func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if req.Params != nil && req.Params.URI != "" {
				updated(req.Params.URI)
			}
		}
	}
	client := mcp.NewClient(info, clientOpts)
	client.AddSendingMiddleware(boundProbe(probe, &probeTimedOut), c.watchCalls)
	client.AddReceivingMiddleware(c.offerOnly(decl))

	connectCtx, cancel := context.WithTimeout(ctx, srv.ConnectTimeout)
	defer cancel()
	session, err := client.Connect(connectCtx, transport, &mcp.ClientSessionOptions{ProtocolVersion: firstVersion(srv.ProtocolVersions)})
	if err != nil {
		switch f := c.Fault(); {
		case f != nil && f.Kind != FaultClosed:
			return fail(f.Contract(), err, "server %s: during the handshake, %s", srv.ID, f.Msg)
		case errors.Is(ctx.Err(), context.Canceled):
			return fail(false, ctx.Err(), "server %s: handshake cancelled", srv.ID)
		case connectCtx.Err() != nil:
			// The connect timeout, or the caller's deadline for the whole
			// start, which the host derives from it (StartTimeout) and so
			// reaches first.
			return fail(false, err, "server %s: no handshake within %s (connect_timeout)", srv.ID, srv.ConnectTimeout)
		}
		return fail(false, err, "server %s: handshake failed: %v", srv.ID, err)
	}
	c.session = session

	init := session.InitializeResult()
	if !slices.Contains(srv.ProtocolVersions, init.ProtocolVersion) {
		return fail(true, nil, "server %s: negotiated protocol version %s, which protocol_versions %v does not allow", srv.ID, init.ProtocolVersion, srv.ProtocolVersions)
	}
	if caps := init.Capabilities; caps == nil || (caps.Tools == nil && caps.Resources == nil && caps.Prompts == nil) {
		return fail(true, nil, "server %s: advertises none of the tools, resources and prompts capabilities", srv.ID)
	}
	return nil
}

// firstVersion picks the version the handshake starts with: the newest the
// deployment allows. The SDK falls back from 2026-07-28 to the initialize
// handshake on its own.
func firstVersion(allowed []string) string {
	best := ""
	for _, v := range allowed {
		if v > best { // protocol versions are dates: they sort as strings
			best = v
		}
	}
	return best
}

// boundProbe limits how long the 2026-07-28 server/discover probe may take.
// A legacy server is supposed to answer it with "method not found", but some
// ignore unknown requests; without a bound the handshake would wait out the
// whole connect timeout before falling back to initialize.
func boundProbe(d time.Duration, timedOut *atomic.Bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "server/discover" || d <= 0 {
				return next(ctx, method, req)
			}
			probeCtx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			res, err := next(probeCtx, method, req)
			if err != nil && probeCtx.Err() != nil && ctx.Err() == nil {
				timedOut.Store(true)
			}
			return res, err
		}
	}
}

func (c *Conn) setFault(f Fault) {
	if c.fault.CompareAndSwap(nil, &f) {
		close(c.broken)
		c.endLive()
	}
}

// Live returns a context that ends when the connection stops working: a
// call in flight on a connection that broke (a remote server that forgot
// the session, a process that died) ends then, instead of waiting for an
// answer that the host would no longer trust.
func (c *Conn) Live() context.Context { return c.live }

// Broken is closed when the connection stops working, for whatever reason
// (Fault says which): the server exited, broke the contract, or the host
// closed it.
func (c *Conn) Broken() <-chan struct{} { return c.broken }

// Fault returns the first reason the connection broke, or nil while it is
// healthy.
func (c *Conn) Fault() *Fault { return c.fault.Load() }

// Session returns the SDK session.
func (c *Conn) Session() *mcp.ClientSession { return c.session }

// ProtocolVersion returns the negotiated protocol version.
func (c *Conn) ProtocolVersion() string { return c.session.InitializeResult().ProtocolVersion }

// PGID returns the process group of the server.
func (c *Conn) PGID() int { return c.pgid }

// ProcessRecord identifies a stdio server's processes; its PGID is 0 for a
// connection without a process.
func (c *Conn) ProcessRecord() ProcessRecord { return c.record }

// SessionID returns the session id the server assigned, or "" (a stdio or
// stateless server).
func (c *Conn) SessionID() string {
	if c.session == nil {
		return ""
	}
	return c.session.ID()
}

// WatchProgress returns a fresh progress token for one request; onProgress
// is called (on the connection's reader) with each notification the server
// sends about it. done releases the token; once it returns, onProgress is
// not called again.
func (c *Conn) WatchProgress(onProgress func(*mcp.ProgressNotificationParams)) (token string, done func()) {
	token = "airlock-" + strconv.FormatUint(c.tokens.Add(1), 10)
	w := &progressWatch{f: onProgress}
	c.progressMu.Lock()
	if c.progress == nil {
		c.progress = map[string]*progressWatch{}
	}
	c.progress[token] = w
	c.progressMu.Unlock()
	return token, func() {
		c.progressMu.Lock()
		delete(c.progress, token)
		c.progressMu.Unlock()
		w.mu.Lock()
		w.f = nil
		w.mu.Unlock()
	}
}

// A progressWatch is one request's WatchProgress; f is nil once done.
type progressWatch struct {
	mu sync.Mutex
	f  func(*mcp.ProgressNotificationParams)
}

// heard is told of each notification as the connection reads it, in the
// order the server wrote it, before the SDK hands it on (later, and on
// another goroutine, when the call it was about may have returned): a
// call's progress and log messages go to the call while it is still in
// flight. stream is the context of the request whose response stream
// carried it (a remote server's), or nil.
func (c *Conn) heard(stream context.Context, method string, params json.RawMessage) {
	switch method {
	case "notifications/progress":
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(params, &p) == nil {
			c.noteProgress(&p)
		}
	case "notifications/message":
		c.heardLog(stream, params)
	}
}

func (c *Conn) noteProgress(p *mcp.ProgressNotificationParams) {
	t, ok := p.ProgressToken.(string)
	if !ok {
		return // not one of ours
	}
	c.progressMu.Lock()
	w := c.progress[t]
	c.progressMu.Unlock()
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f != nil {
		w.f(p)
	}
}

// Close ends the server: it closes stdin (the polite request to exit),
// waits, sends SIGTERM to the whole process group, waits, then SIGKILL; and
// finally ends what the server left behind, in its group or out of it
// (family.stop). It is idempotent, safe for concurrent use, and returns
// within about five times the grace period.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Conn) close() error {
	c.setFault(Fault{Kind: FaultClosed, Msg: "connection closed by the host"})
	if c.cmd == nil {
		return c.closeSession()
	}
	return c.closeProcess()
}

// closeSession closes a connection without a process, bounded in time.
// Closing tells a remote server that its session ended; a server that is
// gone or breaks off that request has nothing left to release, so the
// failure goes to the log, not to the caller: no process is left running.
func (c *Conn) closeSession() error {
	if c.session == nil {
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- c.session.Close() }()
	select {
	case err := <-done:
		if err != nil {
			c.log.Warn("the server was not told that its session ended", "error", err)
		}
	case <-time.After(c.grace):
		c.log.Warn("the server was not told that its session ended", "error", fmt.Sprintf("no answer within %s", c.grace))
	}
	return nil
}

// orDefault returns v, or def when v is not positive: the zero value of an
// Options size field means its default.
func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// maxResponseDepth bounds the nesting of a server's response. Real results
// nest a handful of levels; the SDK's own bound is far higher.
const maxResponseDepth = 256

// A lineLimitReader fails once one line (one newline-delimited JSON-RPC
// message) grows past limit bytes, so that a server can never make the host
// buffer an unbounded message. The SDK's decoder has its own cap, but this
// one records why the connection broke, in words a person can act on.
type lineLimitReader struct {
	f      *os.File
	limit  int
	n      int // bytes of the current line seen so far
	fault  func(Fault)
	eof    func()        // called when the server closes its stdout
	window *stdoutWindow // keeps what was read, for guardedConn to show
}

func (r *lineLimitReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	if err == io.EOF && r.eof != nil {
		r.eof()
	}
	for rest := p[:n]; ; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			r.n += len(rest)
		} else {
			r.n += i
		}
		if r.n > r.limit {
			r.fault(Fault{Kind: FaultOversize, Msg: fmt.Sprintf("server sent a message larger than %d bytes (limits.max_message_bytes)", r.limit)})
			return 0, errOversize
		}
		if i < 0 {
			break
		}
		r.n, rest = 0, rest[i+1:]
	}
	if n > 0 && r.window != nil {
		r.window.add(p[:n])
	}
	return n, err
}

func (r *lineLimitReader) Close() error { return r.f.Close() }

var _ io.ReadCloser = (*lineLimitReader)(nil)

var errOversize = fmt.Errorf("message too large")

// guardedTransport hands the SDK a connection that checks every response a
// server sends before the SDK decodes it. It serves stdio and in-process
// transports; a remote connection is checked in its HTTP round tripper
// instead (http.go), because the SDK's Streamable HTTP connection must reach
// the SDK unwrapped: the SDK tells it the negotiated protocol version
// through an unexported method, which a wrapper would hide.
type guardedTransport struct {
	inner  mcp.Transport
	late   *lateAnswers
	trace  func(sent bool, msg []byte)
	heard  func(stream context.Context, method string, params json.RawMessage) // Conn.heard
	fault  func(Fault)
	stdout *stdoutWindow // a stdio server's latest output; nil for others
	stdin  *os.File      // a stdio server's input; nil for others
}

func (t *guardedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	g := &guardedConn{Connection: c, late: t.late, trace: t.trace, heard: t.heard, fault: t.fault, stdout: t.stdout, raw: &rawResults{}}
	if t.stdin != nil {
		g.stdin, g.writing = t.stdin, make(chan struct{}, 1)
	}
	return g, nil
}

// A guardedConn rejects responses that are not strict JSON: duplicate keys,
// invalid UTF-8 or excessive nesting. The SDK's decoder would accept them and
// keep one of two duplicate values, so a check elsewhere could see the other
// one. A server that sends such a response is broken or hostile: the
// connection is closed with a contract fault rather than trusting any of it.
// A stdio server that writes what is not JSON at all (a banner, a log line)
// breaks the contract too; the fault quotes the line.
type guardedConn struct {
	mcp.Connection
	late   *lateAnswers
	trace  func(sent bool, msg []byte) // Options.Trace, or nil
	heard  func(stream context.Context, method string, params json.RawMessage)
	fault  func(Fault)
	stdout *stdoutWindow
	raw    *rawResults // the requests whose results are wanted as sent (results.go)
	// stdin is a stdio server's input, whose writes are bounded by the
	// writer's context: a server that stops reading its input fills the
	// pipe, and a write without a bound would block for ever, whatever
	// request_timeout or an interrupt says. writing lets one write at a
	// time own the pipe's deadline.
	stdin   *os.File
	writing chan struct{}
}

func (c *guardedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		c.notJSON(err)
		return nil, err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && len(resp.Result) > 0 {
		opts := schema.DecodeOptions{MaxDepth: maxResponseDepth, MaxBytes: len(resp.Result)}
		if err := schema.Check(resp.Result, &opts); err != nil {
			c.fault(Fault{Kind: FaultMalformed, Msg: fmt.Sprintf("server sent a malformed response: %v", err)})
			return nil, io.ErrUnexpectedEOF
		}
	}
	c.tap(false, msg)
	c.raw.answered(msg)
	c.late.answered(msg)
	if n, ok := msg.(*jsonrpc.Request); ok && !n.IsCall() && c.heard != nil {
		c.heard(nil, n.Method, n.Params)
	}
	return msg, nil
}

// notJSON breaks the connection with a contract fault when a stdio
// server wrote what is not JSON at all: err is the SDK's read error.
func (c *guardedConn) notJSON(err error) {
	var syntax *json.SyntaxError
	if c.stdout != nil && errors.As(err, &syntax) {
		c.fault(Fault{Kind: FaultMalformed, Msg: c.stdout.notJSON(syntax)})
	}
}

func (c *guardedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.tap(true, msg)
	c.raw.sent(ctx, msg)
	c.late.sent(ctx, msg)
	if c.stdin == nil {
		return c.Connection.Write(ctx, msg)
	}
	select {
	case c.writing <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.writing }()
	deadline, _ := ctx.Deadline()
	c.stdin.SetWriteDeadline(deadline)
	var (
		mu       sync.Mutex
		finished bool
	)
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !finished {
			c.stdin.SetWriteDeadline(time.Now())
		}
	})
	err := c.Connection.Write(ctx, msg)
	stop()
	mu.Lock()
	finished = true
	mu.Unlock()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// Part of the message may be in the pipe: nothing more can be
		// sent on it. The deadline stays in the past.
		c.fault(Fault{Kind: FaultStalled, Msg: "server stopped reading its input (stdin): a message to it could not be written"})
		return err
	}
	c.stdin.SetWriteDeadline(time.Time{})
	return err
}

// tap shows msg to Options.Trace, as the wire carries it.
func (c *guardedConn) tap(sent bool, msg jsonrpc.Message) {
	if c.trace == nil {
		return
	}
	if b, err := jsonrpc.EncodeMessage(msg); err == nil {
		c.trace(sent, b)
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
