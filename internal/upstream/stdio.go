package upstream

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/config"
)

// A process is the part of a Conn that belongs to a stdio server's command.
type process struct {
	cmd    *exec.Cmd
	pgid   int
	stdin  *os.File
	stdout *os.File
	stderr *tail
	// stdoutSeen keeps its latest output on stdout, to quote a line that
	// is not JSON-RPC.
	stdoutSeen *stdoutWindow

	marker string        // its markerEnv value
	family family        // its processes, for closing
	record ProcessRecord // what a later host needs to stop it
	track  func(ProcessRecord, bool)

	exited     chan struct{} // closed once the process has been reaped
	stderrDone chan struct{} // closed once stderr is drained

	// stdinGrace, when set, is how long closing waits after closing stdin
	// before SIGTERM, and after SIGTERM before SIGKILL, in place of the
	// grace: a server whose start failed was given no work to finish.
	stdinGrace time.Duration
}

// abandonedGrace is how long a server whose start failed has to exit on
// its own once its stdin is closed, before SIGTERM, and then before
// SIGKILL: it was given no work to finish, so a server that ignores both
// is not waited for the whole grace twice.
const abandonedGrace = 100 * time.Millisecond

// newProcess prepares the state of a process that has not started yet.
func newProcess(opts *Options) process {
	return process{
		stderr:     newTail(orDefault(opts.StderrBytes, 64<<10)),
		stdoutSeen: &stdoutWindow{},
		marker:     rand.Text(),
		track:      opts.Track,
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
	}
}

// Start runs the server's command and completes the MCP handshake within
// the server's connect timeout. On any failure nothing is left running:
// the server is stopped before Start returns or, with Options.StopLater,
// by the stop handed to it.
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
			Reader: &lineLimitReader{f: c.stdout, limit: orDefault(opts.MaxMessageBytes, 16<<20), fault: c.setFault, eof: c.stdoutClosed,
				window: c.stdoutSeen},
			Writer:        c.stdin,
			MaxLineLength: -1, // lineLimitReader enforces the cap and says why
		}
		serr := c.handshake(ctx, transport, opts, probe)
		if serr == nil {
			c.log.Info("server ready", "protocol", c.ProtocolVersion(), "pid", c.pgid)
			return c, nil
		}
		// A slow 2026-07-28 server may miss the probe's bound, and then
		// refuse the initialize handshake because it already answered
		// server/discover. Start it once more and give the probe all the
		// time the connect timeout leaves.
		if attempt == 1 && serr.probeTimedOut && ctx.Err() == nil {
			c.stdinGrace = abandonedGrace
			c.Close()
			c.log.Warn("server missed the version probe's bound and refused initialize; restarting it without the bound", "probe_timeout", probe)
			c = newConn(srv, opts)
			probe = 0
			continue
		}
		serr.Stderr = c.abandon(opts.StopLater)
		return nil, serr
	}
}

// abandon stops a server whose start failed and returns the last lines it
// wrote on stderr. A server that has exited is closed at once, which is
// quick, and its stderr read to the end. One that still runs (it never
// answered, or broke the protocol) has abandonedGrace, not the grace, to
// exit once its stdin is closed, then SIGTERM and the grace, then
// SIGKILL: stopLater, when set, is given that, and the lines are those it
// wrote before the host gave up on it, not its answer to being stopped.
func (c *Conn) abandon(stopLater func(stop func())) string {
	c.stdinGrace = abandonedGrace
	select {
	case <-c.exited:
	default:
		if stopLater != nil {
			tail := c.stderrTail()
			stopLater(func() { c.Close() })
			return tail
		}
	}
	c.Close()
	return c.stderrTail()
}

// Abandon closes a connection the host gives up on before any call was
// made on it (its discovery failed): a stdio server has abandonedGrace,
// not the grace, to exit at each step of closing.
func (c *Conn) Abandon() error {
	c.stdinGrace = abandonedGrace
	return c.Close()
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
	// The marker comes last, so that it wins over a configured variable of
	// the same name (exec keeps the last of duplicates).
	env = append(slices.Clip(env), markerEnv+"="+c.marker)
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
	c.family.marker = c.marker
	err = startProcess(cmd, &c.family)
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
	c.stdoutSeen.src = stdoutR
	c.record = ProcessRecord{PGID: c.pgid, Marker: c.marker}
	if p, err := readProc(c.pgid); err == nil {
		c.record.Start, c.record.Command = p.start, commandHash(c.pgid)
	}
	if c.record.Command == "" {
		c.record.Command = argsHash(cmd.Args)
	}
	if c.track != nil {
		c.track(c.record, true)
	}
	go c.drainStderr(stderrR)
	go c.wait()
	return nil
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

// closeProcess closes a connection to a stdio server: the session and,
// in the order Close describes, the whole process group.
func (c *Conn) closeProcess() error {
	c.stdin.Close()
	sessionClosed := make(chan struct{})
	go func() {
		if c.session != nil {
			c.session.Close()
		}
		close(sessionClosed)
	}()

	var errs []error
	first, term := c.grace, c.grace
	if c.stdinGrace > 0 {
		first, term = c.stdinGrace, c.stdinGrace
	}
	if !c.waitExit(first) {
		c.log.Warn("server did not exit after stdin closed; sending SIGTERM")
		if err := signalGroup(c.pgid, syscall.SIGTERM); err != nil {
			errs = append(errs, err)
		}
		if !c.waitExit(term) {
			c.log.Warn("server did not exit after SIGTERM; sending SIGKILL")
			if err := signalGroup(c.pgid, syscall.SIGKILL); err != nil {
				errs = append(errs, err)
			}
			if !c.waitExit(c.grace) {
				errs = append(errs, fmt.Errorf("server %s: process %d survived SIGKILL", c.cfg.ID, c.pgid))
			}
		}
	}
	// The leader is gone; whatever it started goes too: what is left in its
	// group, what left the group but carries its marker (reparented to this
	// process, a child subreaper), and what those started.
	if found, err := c.family.stop(c.grace); err != nil {
		errs = append(errs, fmt.Errorf("server %s: %v", c.cfg.ID, err))
	} else if found {
		c.log.Warn("ended processes the server left behind")
	}
	stopped := len(errs) == 0
	forgetProcess(&c.family)
	if stopped && c.track != nil {
		c.track(c.record, false)
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

// baseEnv lists the host variables a server inherits. Everything else in
// the host's environment, tokens included, stays with the host.
var baseEnv = []string{"PATH", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "LC_CTYPE", "TZ"}

// packageCaches returns the variables that point a server's package
// managers at the caches of the user running Airlock. A server's HOME is its
// own, so that it reads none of the user's dotfiles (~/.npmrc and the
// registry tokens in it included); but then npx and uvx downloaded every
// package again, into every project's state directory and every task's, and
// a server started slower than outside Airlock every time. Each variable
// keeps the value the host has (an absolute path), else names the usual
// location under the user's home directory (or XDG_CACHE_HOME,
// XDG_DATA_HOME, GOPATH), where the tool would look outside Airlock.
//
// Only caches of downloaded packages, builds and interpreters are shared:
// they hold what anyone could download, never a credential. Configuration
// is not (npm's userconfig, ~/.config/uv, ~/.config/go/env: registries,
// tokens), nor XDG_CACHE_HOME as a whole, where some tools keep tokens
// (Hugging Face's ~/.cache/huggingface/token).
func packageCaches(getenv func(string) string) map[string]string {
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		return "" // a relative path would depend on the server's cwd
	}
	home := abs(getenv("HOME"))
	// in is elem under base (a directory) or, without one, under
	// home/fallback.
	in := func(base, fallback string, elem ...string) string {
		if base == "" && home != "" {
			base = filepath.Join(home, fallback)
		}
		if base == "" {
			return ""
		}
		return filepath.Join(append([]string{base}, elem...)...)
	}
	gopath, _, _ := strings.Cut(getenv("GOPATH"), string(filepath.ListSeparator))
	out := map[string]string{}
	for name, def := range map[string]string{
		"npm_config_cache":      in("", ".npm"), // npm and npx; npm ignores XDG
		"UV_CACHE_DIR":          in(abs(getenv("XDG_CACHE_HOME")), ".cache", "uv"),
		"UV_PYTHON_INSTALL_DIR": in(abs(getenv("XDG_DATA_HOME")), filepath.Join(".local", "share"), "uv", "python"),
		"PIP_CACHE_DIR":         in(abs(getenv("XDG_CACHE_HOME")), ".cache", "pip"),
		"GOCACHE":               in(abs(getenv("XDG_CACHE_HOME")), ".cache", "go-build"),
		"GOMODCACHE":            in(abs(gopath), "go", "pkg", "mod"),
	} {
		v := abs(getenv(name))
		if v == "" && name == "npm_config_cache" {
			v = abs(getenv("NPM_CONFIG_CACHE")) // npm reads either spelling
		}
		if v == "" {
			v = def
		}
		if v != "" {
			out[name] = v
		}
	}
	return out
}

// environment builds the server's environment: the few base variables, a
// private HOME and TMPDIR under the state directory, the locations of the
// user's package caches (packageCaches), then the configured env (which may
// override any of them).
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
	maps.Copy(vars, packageCaches(os.Getenv))
	for k, v := range c.cfg.Env {
		vars[k] = v
	}
	maps.Copy(vars, c.cfg.HostEnv)
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
