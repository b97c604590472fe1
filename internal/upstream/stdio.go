package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/config"
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
	// SecretEnv holds secret environment values for the server (NAME to
	// value). They are added last and appear nowhere else.
	SecretEnv map[string]string
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

// A Conn is a live connection to one stdio server. Its methods are safe for
// concurrent use.
type Conn struct {
	cfg     config.Server
	log     *slog.Logger
	grace   time.Duration
	cmd     *exec.Cmd
	pgid    int
	stdin   *os.File
	stdout  *os.File
	stderr  *tail
	session *mcp.ClientSession

	exited     chan struct{} // closed once the process has been reaped
	stderrDone chan struct{} // closed once stderr is drained

	fault  atomic.Pointer[Fault]
	broken chan struct{} // closed with the first fault
	// live ends with the first fault too, for calls to hang off.
	live    context.Context
	endLive context.CancelFunc

	progressMu sync.Mutex
	progress   map[string]func() // progress token → called on each notification
	tokens     atomic.Uint64

	closeOnce sync.Once
	closeErr  error
}

// Start runs the server's command and completes the MCP handshake within
// the server's connect timeout. On any failure nothing is left running.
func Start(ctx context.Context, srv *config.Server, opts *Options) (*Conn, error) {
	if opts == nil {
		opts = &Options{}
	}
	c := newConn(srv, opts)

	env, err := c.environment(opts.StateDir, opts.SecretEnv)
	if err != nil {
		return nil, &StartError{Server: srv.ID, Msg: fmt.Sprintf("server %s: %v", srv.ID, err), Err: err}
	}
	path, err := resolveCommand(srv.Command, srv.Cwd, env)
	if err != nil {
		return nil, &StartError{Server: srv.ID, Msg: fmt.Sprintf("server %s: %v", srv.ID, err), Err: err}
	}
	probe := srv.ProbeTimeout
	for attempt := 1; ; attempt++ {
		if err := c.spawn(path, env); err != nil {
			return nil, &StartError{Server: srv.ID, Msg: fmt.Sprintf("server %s: cannot start %s: %v", srv.ID, srv.Command, err), Err: err}
		}
		transport := &mcp.IOTransport{
			Reader:        &lineLimitReader{f: c.stdout, limit: orDefault(opts.MaxMessageBytes, 16<<20), fault: c.setFault, eof: c.stdoutClosed},
			Writer:        c.stdin,
			MaxLineLength: -1, // lineLimitReader enforces the cap and says why
		}
		serr := c.handshake(ctx, transport, opts, probe)
		if serr == nil {
			c.log.Info("server ready", "protocol", c.ProtocolVersion(), "pid", c.pgid)
			return c, nil
		}
		c.Close()
		// A slow 2026-07-28 server may miss the probe's bound, and then
		// refuse the initialize handshake because it already answered
		// server/discover. Start it once more and give the probe all the
		// time the connect timeout leaves.
		if attempt == 1 && serr.probeTimedOut && ctx.Err() == nil {
			c.log.Warn("server missed the version probe's bound and refused initialize; restarting it without the bound", "probe_timeout", probe)
			c = newConn(srv, opts)
			probe = 0
			continue
		}
		serr.Stderr = c.stderr.lastLines(10)
		return nil, serr
	}
}

// Dial connects to a server over t instead of starting its command: an
// in-process server (mcp.NewInMemoryTransports) or, later, a remote one.
// Every check of Start but those about the process applies.
func Dial(ctx context.Context, srv *config.Server, t mcp.Transport, opts *Options) (*Conn, error) {
	if opts == nil {
		opts = &Options{}
	}
	c := newConn(srv, opts)
	if err := c.handshake(ctx, t, opts, srv.ProbeTimeout); err != nil {
		c.Close()
		return nil, err
	}
	// Without a process to watch, the session ending by itself is how a
	// server going away shows.
	go func() {
		c.session.Wait()
		c.setFault(Fault{Kind: FaultExited, Msg: "the server closed the connection"})
	}()
	c.log.Info("server ready", "protocol", c.ProtocolVersion())
	return c, nil
}

func newConn(srv *config.Server, opts *Options) *Conn {
	c := &Conn{
		cfg:        *srv,
		log:        opts.Logger,
		grace:      opts.Grace,
		stderr:     newTail(orDefault(opts.StderrBytes, 64<<10)),
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
		broken:     make(chan struct{}),
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
	var transport mcp.Transport = &guardedTransport{
		inner: t,
		fault: func(f Fault) {
			c.setFault(f)
			if c.stdout != nil {
				c.stdout.Close()
			}
		},
	}
	if srv.Remote() {
		transport = t // checked in its round tripper (http.go)
	}
	info := opts.ClientInfo
	if info == nil {
		info = &mcp.Implementation{Name: "airlock", Version: "dev"}
	}
	clientOpts := &mcp.ClientOptions{
		Logger: c.log,
		// The host offers no client features (roots, sampling, elicitation)
		// to servers.
		Capabilities: &mcp.ClientCapabilities{},
	}
	if opts.OnToolsChanged != nil {
		notify := opts.OnToolsChanged
		clientOpts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { notify() }
	}
	clientOpts.ProgressNotificationHandler = func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		c.noteProgress(req.Params.ProgressToken)
	}
	client := mcp.NewClient(info, clientOpts)
	client.AddSendingMiddleware(boundProbe(probe, &probeTimedOut))

	connectCtx, cancel := context.WithTimeout(ctx, srv.ConnectTimeout)
	defer cancel()
	session, err := client.Connect(connectCtx, transport, &mcp.ClientSessionOptions{ProtocolVersion: firstVersion(srv.ProtocolVersions)})
	if err != nil {
		switch f := c.Fault(); {
		case f != nil && f.Kind != FaultClosed:
			return fail(f.Contract(), err, "server %s: %s during the handshake", srv.ID, f.Msg)
		case ctx.Err() != nil:
			return fail(false, ctx.Err(), "server %s: handshake cancelled", srv.ID)
		case connectCtx.Err() != nil:
			return fail(false, err, "server %s: no handshake within %s (connect_timeout)", srv.ID, srv.ConnectTimeout)
		}
		return fail(false, err, "server %s: handshake failed: %v", srv.ID, err)
	}
	c.session = session

	init := session.InitializeResult()
	if !slices.Contains(srv.ProtocolVersions, init.ProtocolVersion) {
		return fail(true, nil, "server %s: negotiated protocol version %s, which protocol_versions %v does not allow", srv.ID, init.ProtocolVersion, srv.ProtocolVersions)
	}
	if init.Capabilities == nil || init.Capabilities.Tools == nil {
		return fail(true, nil, "server %s: does not advertise the tools capability", srv.ID)
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

func (c *Conn) spawn(path string, env []string) error {
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return err
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		stdoutR.Close()
		stdoutW.Close()
		return err
	}
	cmd := &exec.Cmd{
		Path:   path,
		Args:   append([]string{c.cfg.Command}, c.cfg.Args...),
		Dir:    c.cfg.Cwd,
		Env:    env,
		Stdin:  stdinR,
		Stdout: stdoutW,
		Stderr: stderrW,
	}
	setGroup(cmd)
	err = cmd.Start()
	// The child has its own copies of these ends now (or never will).
	stdinR.Close()
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		stdinW.Close()
		stdoutR.Close()
		stderrR.Close()
		return err
	}
	c.cmd, c.pgid = cmd, cmd.Process.Pid
	c.stdin, c.stdout = stdinW, stdoutR
	go c.drainStderr(stderrR)
	go c.wait()
	return nil
}

// drainStderr copies the server's stderr into the tail and the host's log,
// line by line, until every process holding the pipe is gone.
func (c *Conn) drainStderr(r *os.File) {
	defer close(c.stderrDone)
	defer r.Close()
	br := bufio.NewReaderSize(r, 4096)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			c.stderr.Write(line)
			if err == bufio.ErrBufferFull {
				c.stderr.Write([]byte("\n"))
			}
			c.log.Info("stderr", "line", strings.TrimRight(string(line), "\r\n"))
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

// wait reaps the process. When the server exits on its own, the connection
// is broken at once so that calls in flight fail instead of waiting for a
// grandchild that may still hold stdout open.
func (c *Conn) wait() {
	err := c.cmd.Wait()
	close(c.exited)
	msg := "server exited"
	if err != nil {
		msg = "server exited: " + err.Error()
	}
	c.setFault(Fault{Kind: FaultExited, Msg: msg})
	c.stdout.Close()
}

// stdoutClosed records why the server's output ended. The usual reason is
// that it exited; give the reaper a moment to say so, with the exit status,
// before settling for a vaguer reason.
func (c *Conn) stdoutClosed() {
	select {
	case <-c.exited:
	case <-time.After(time.Second):
		c.setFault(Fault{Kind: FaultExited, Msg: "server closed its output"})
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

// Close ends the server: it closes stdin (the polite request to exit),
// waits, sends SIGTERM to the whole process group, waits, then SIGKILL; and
// finally sweeps the group for processes the server left behind. It is
// idempotent, safe for concurrent use, and returns within about three times
// the grace period.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Conn) close() error {
	c.setFault(Fault{Kind: FaultClosed, Msg: "connection closed by the host"})
	if c.cmd == nil {
		return c.closeSession()
	}
	c.stdin.Close()
	sessionClosed := make(chan struct{})
	go func() {
		if c.session != nil {
			c.session.Close()
		}
		close(sessionClosed)
	}()

	var errs []error
	if !c.waitExit(c.grace) {
		c.log.Warn("server did not exit after stdin closed; sending SIGTERM")
		if err := signalGroup(c.pgid, syscall.SIGTERM); err != nil {
			errs = append(errs, err)
		}
		if !c.waitExit(c.grace) {
			c.log.Warn("server did not exit after SIGTERM; sending SIGKILL")
			if err := signalGroup(c.pgid, syscall.SIGKILL); err != nil {
				errs = append(errs, err)
			}
			if !c.waitExit(c.grace) {
				errs = append(errs, fmt.Errorf("server %s: process %d survived SIGKILL", c.cfg.ID, c.pgid))
			}
		}
	}
	// The leader is gone; whatever it started in its group goes too.
	if groupAlive(c.pgid) {
		signalGroup(c.pgid, syscall.SIGTERM)
		if !waitUntil(c.grace, func() bool { return !groupAlive(c.pgid) }) {
			signalGroup(c.pgid, syscall.SIGKILL)
			if !waitUntil(c.grace, func() bool { return !groupAlive(c.pgid) }) {
				errs = append(errs, fmt.Errorf("server %s: processes of group %d survived SIGKILL", c.cfg.ID, c.pgid))
			}
		}
	}
	// Anything still holding stdout (a process that left the group) must not
	// keep the SDK's reader alive.
	c.stdout.Close()
	select {
	case <-sessionClosed:
	case <-time.After(c.grace):
		errs = append(errs, fmt.Errorf("server %s: session did not close", c.cfg.ID))
	}
	select {
	case <-c.stderrDone:
	case <-time.After(c.grace):
		// A process that left the group still holds stderr; stop waiting.
	}
	return errors.Join(errs...)
}

// closeSession closes a connection without a process, bounded in time.
func (c *Conn) closeSession() error {
	if c.session == nil {
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- c.session.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(c.grace):
		return fmt.Errorf("server %s: session did not close within %s", c.cfg.ID, c.grace)
	}
}

func (c *Conn) waitExit(d time.Duration) bool {
	select {
	case <-c.exited:
		return true
	case <-time.After(d):
		return false
	}
}

func waitUntil(d time.Duration, done func() bool) bool {
	deadline := time.Now().Add(d)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		if done() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait)
	}
}

// orDefault returns v, or def when v is not positive: the zero value of an
// Options size field means its default.
func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// baseEnv lists the host variables a server inherits. Everything else in
// the host's environment, tokens included, stays with the host.
var baseEnv = []string{"PATH", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "LC_CTYPE", "TZ"}

// environment builds the server's environment: the few base variables, a
// private HOME and TMPDIR under the state directory, then the configured env
// (which may override any of them).
func (c *Conn) environment(stateDir string, secrets map[string]string) ([]string, error) {
	if stateDir == "" {
		stateDir = filepath.Join(os.TempDir(), "airlock")
	}
	run := filepath.Join(stateDir, "run", c.cfg.ID)
	home, tmp := filepath.Join(run, "home"), filepath.Join(run, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("cannot create its runtime directory: %v", err)
		}
	}
	vars := map[string]string{"HOME": home, "TMPDIR": tmp}
	for _, k := range baseEnv {
		if v, ok := os.LookupEnv(k); ok {
			vars[k] = v
		}
	}
	for k, v := range c.cfg.Env {
		vars[k] = v
	}
	for k, v := range secrets {
		vars[k] = v
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env, nil
}

// resolveCommand finds the executable for command. The bare name "airlock"
// is the running binary itself, so that bundled servers need nothing
// installed and always match the host's version. A name with a slash is
// relative to the server's cwd; any other name is looked up in the PATH the
// server will see.
func resolveCommand(command, cwd string, env []string) (string, error) {
	if command == "airlock" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("cannot locate the airlock binary: %v", err)
		}
		return exe, nil
	}
	if strings.Contains(command, "/") {
		path := command
		if !filepath.IsAbs(path) {
			path = filepath.Join(cwd, path)
		}
		if err := checkExecutable(path); err != nil {
			return "", fmt.Errorf("command %q: %v", command, err)
		}
		return path, nil
	}
	pathVar := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	for _, dir := range filepath.SplitList(pathVar) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // a relative PATH entry would depend on the cwd
		}
		path := filepath.Join(dir, command)
		if checkExecutable(path) == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("command %q not found in PATH", command)
}

func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("no such file")
	case err != nil:
		return errors.New("cannot be inspected")
	case fi.IsDir():
		return errors.New("is a directory")
	case fi.Mode().Perm()&0o111 == 0:
		return errors.New("is not executable")
	}
	return nil
}

var _ io.ReadCloser = (*lineLimitReader)(nil)

// WatchProgress returns a fresh progress token for one request; onProgress
// is called (on the connection's reader) each time the server reports
// progress on it. done releases the token.
func (c *Conn) WatchProgress(onProgress func()) (token string, done func()) {
	token = "airlock-" + strconv.FormatUint(c.tokens.Add(1), 10)
	c.progressMu.Lock()
	if c.progress == nil {
		c.progress = map[string]func(){}
	}
	c.progress[token] = onProgress
	c.progressMu.Unlock()
	return token, func() {
		c.progressMu.Lock()
		delete(c.progress, token)
		c.progressMu.Unlock()
	}
}

func (c *Conn) noteProgress(token any) {
	t, ok := token.(string)
	if !ok {
		return // not one of ours
	}
	c.progressMu.Lock()
	f := c.progress[t]
	c.progressMu.Unlock()
	if f != nil {
		f()
	}
}
