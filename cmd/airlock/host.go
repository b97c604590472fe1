package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/lines"
)

//go:embed default.yaml
var defaultConfig []byte

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// loadConfig reads --config, else the airlock.yaml config.Find finds from
// the working directory (saying which one when it is above it), else the
// built-in default.
func (e *env) loadConfig(c *common) (*config.Config, error) {
	path, err := e.configFile(c)
	if errors.Is(err, fs.ErrNotExist) {
		wd, err := os.Getwd()
		if err != nil {
			return nil, usageError("cannot determine the working directory: %v", err)
		}
		// A directory the default refuses to serve gets the refusal
		// alone (hostOf), not a notice that it is served first.
		if !c.json && checkDefaultRoot(wd) == nil {
			fmt.Fprintln(e.stderr, "airlock: no airlock.yaml here or above; using the built-in default (the workspace server over this directory)")
		}
		cfg, err := config.Parse(defaultConfig, "(built-in default)", wd)
		if err != nil {
			return nil, configError(err)
		}
		return cfg, nil
	}
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(path, &config.LoadOptions{Allow: c.allow})
	if err != nil {
		return nil, configError(err)
	}
	return cfg, nil
}

// configFile returns the configuration file to use: --config, else the one
// config.Find finds from the working directory, named as reached from it
// (and said on stderr when it is above it). When there is none, the error
// wraps fs.ErrNotExist.
func (e *env) configFile(c *common) (string, error) {
	if c.config != "" {
		return c.config, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", usageError("cannot determine the working directory: %v", err)
	}
	path, err := config.Find(wd)
	if errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err != nil {
		return "", configError(err)
	}
	if filepath.Dir(path) != wd {
		// Found above: messages name it as reached from here.
		if rel, err := filepath.Rel(wd, path); err == nil {
			path = rel
		}
		fmt.Fprintf(e.stderr, "airlock: using %s\n", path)
	}
	return path, nil
}

func configError(err error) error {
	return &exitError{code: exitUsage, msg: strings.TrimSpace(err.Error())}
}

// A session is what a command works with: the host, and the task it acts
// in when --task is given.
type session struct {
	h    *airlock.Host
	task *airlock.Task
	cfg  *config.Config // as loaded
}

// Snapshot is the catalog of the session: the task's when there is one.
func (s *session) Snapshot() *airlock.Snapshot {
	if s.task != nil {
		return s.task.Snapshot()
	}
	return s.h.Snapshot()
}

// BeginTurn is the safe point between turns: the newest snapshot, after
// servers that said their tools changed were discovered again.
func (s *session) BeginTurn(ctx context.Context) *airlock.Snapshot {
	if s.task != nil {
		return s.task.BeginTurn(ctx)
	}
	return s.h.BeginTurn(ctx)
}

// Available is what the host's servers offer, and the task's, allowed or
// not.
func (s *session) Available() []airlock.Offer {
	if s.task != nil {
		return s.task.Available()
	}
	return s.h.Available()
}

// Servers reports the host's servers, and the task's.
func (s *session) Servers() []airlock.ServerStatus {
	if s.task != nil {
		return s.task.Servers()
	}
	return s.h.Servers()
}

// stateDir is --state, else .airlock beside the configuration.
func stateDir(c *common, cfg *config.Config) string {
	if c.state != "" {
		return c.state
	}
	return cfg.StateDir()
}

// openSession loads the configuration, starts every host server (showing
// progress on a terminal) and, with --task, attaches to the task.
func (e *env) openSession(c *common) (*session, error) {
	h, cfg, err := e.openHost(c)
	if err != nil {
		return nil, err
	}
	return e.attach(c, h, cfg)
}

// sessionOf is openSession with the configuration already loaded.
func (e *env) sessionOf(c *common, cfg *config.Config) (*session, error) {
	h, cfg, err := e.hostOf(c, cfg)
	if err != nil {
		return nil, err
	}
	return e.attach(c, h, cfg)
}

// attach makes the session of a started host: with --task, attached to
// the task.
func (e *env) attach(c *common, h *airlock.Host, cfg *config.Config) (*session, error) {
	var err error
	s := &session{h: h, cfg: cfg}
	if c.task == "" {
		if ids := h.TaskServers(); len(ids) > 0 && !c.json {
			fmt.Fprintf(e.stderr, "airlock: %s run only inside a task: airlock task open ID, then --task ID\n", strings.Join(ids, ", "))
		}
		return s, nil
	}
	if s.task, err = h.AttachTask(e.ctx, c.task); err != nil {
		e.closeSession(s)
		return nil, taskError(err)
	}
	return s, nil
}

// taskError maps a task error to an exit: a server failure is 3, anything
// else (no such task, in use, a bad id) is 2.
func taskError(err error) error {
	var ae *airlock.Error
	if errors.As(err, &ae) {
		return &exitError{code: exitServer, msg: ae.Msg}
	}
	return usageError("%v", err)
}

// openHost loads the configuration and starts every host server, showing
// progress on a terminal.
func (e *env) openHost(c *common) (*airlock.Host, *config.Config, error) {
	cfg, err := e.loadConfig(c)
	if err != nil {
		return nil, nil, err
	}
	return e.hostOf(c, cfg)
}

// hostOf starts every host server of cfg, as openHost does.
func (e *env) hostOf(c *common, cfg *config.Config) (*airlock.Host, *config.Config, error) {
	if cfg.Path == "" {
		// The built-in default serves the working directory, which
		// nobody chose; before anything is created there.
		if err := checkDefaultRoot(cfg.Dir); err != nil {
			return nil, nil, err
		}
	}
	// Notices explain what the configuration leaves out (an mcpServers
	// server without an allowlist exposes no tools); stderr carries them in
	// --json mode too, where stdout stays pure JSON.
	for _, n := range cfg.Notices() {
		fmt.Fprintln(e.stderr, "airlock: "+n)
	}
	return e.startHost(c, cfg)
}

// startHost starts every host server of cfg, showing progress on a
// terminal, and returns the host and the configuration it runs.
func (e *env) startHost(c *common, cfg *config.Config) (*airlock.Host, *config.Config, error) {
	var err error
	state := stateDir(c, cfg)
	if cfg, err = protectOwnFiles(cfg, state); err != nil {
		return nil, nil, err
	}
	logger, logClose, err := openLog(state, c.verbose, e.stderr)
	if err != nil {
		return nil, nil, err
	}
	closeLog := logClose
	// Every command's host tells servers it can ask a person, so that a
	// server whose tools depend on it lists the same ones whatever the
	// command; where nobody can be asked, its questions are declined.
	elicit := e.elicit
	switch {
	case elicit != nil:
	case c.answerWait > 0:
		elicit = answerElsewhere(e.stderr, c.answerWait)
	default:
		elicit = declineAll
	}
	opts := &airlock.Options{StateDir: state, Logger: logger, Version: version(), Approver: e.approver, Auth: e.stepUps,
		CallProgress: e.callProgress, Elicit: elicit}
	if !c.json && !c.verbose && isTerminal(e.stderr) {
		opts.Progress = newProgress(e.stderr, len(cfg.Servers)).update
	}
	if e.hostOptions != nil {
		if err := e.hostOptions(cfg, opts); err != nil {
			closeLog()
			return nil, nil, err
		}
	}
	if c.trace != "" {
		f, err := openTrace(c.trace)
		if err != nil {
			closeLog()
			return nil, nil, err
		}
		opts.Trace = f
		closeLog = func() {
			logClose()
			f.Close()
		}
	}
	h, err := airlock.Open(e.ctx, cfg, opts)
	if err != nil {
		closeLog()
		var ae *airlock.Error
		if errors.As(err, &ae) {
			return nil, nil, &exitError{code: exitServer, msg: ae.Msg}
		}
		if errors.Is(err, airlock.ErrStoreUnavailable) {
			// The store cannot be read or reached: exit 3, as for the
			// governance commands; 2 is for the command line.
			return nil, nil, &exitError{code: exitServer, msg: err.Error()}
		}
		return nil, nil, usageError("%v", err)
	}
	e.closeLog = closeLog
	return h, cfg, nil
}

// closeSession releases the task, stops every server and closes the log.
func (e *env) closeSession(s *session) {
	if s.task != nil {
		if err := s.task.Release(); err != nil {
			fmt.Fprintf(e.stderr, "airlock: %v\n", err)
		}
	}
	if err := s.h.Close(); err != nil {
		fmt.Fprintf(e.stderr, "airlock: %v\n", err)
	}
	if e.closeLog != nil {
		e.closeLog()
	}
}

// openTrace creates (or empties) the wire trace file, readable by its
// owner only: redacted as it is, it holds what servers were sent and
// answered. Anything but a regular file is refused.
func openTrace(path string) (*os.File, error) {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, usageError("--trace %s: not a regular file: give a file name for the trace", path)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, usageError("--trace %s: cannot create the file: %v", path, errText(err))
	}
	return f, nil
}

// openLog opens the host's log in the state directory: a server's stderr is
// kept there, not on the terminal (unless --verbose) and never on stdout.
func openLog(state string, verbose bool, stderr io.Writer) (*slog.Logger, func(), error) {
	dir := filepath.Join(state, "log")
	if err := airlock.MakeStateDir(state); err != nil {
		return nil, nil, usageError("cannot create the state directory %s: %v", state, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, usageError("cannot create the state directory %s: %v", state, err)
	}
	path := filepath.Join(dir, "airlock.log")
	if fi, err := os.Stat(path); err == nil && fi.Size() > 16<<20 {
		os.Rename(path, path+".1") // keep one previous log, bound the rest
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, usageError("cannot open the log: %v", err)
	}
	var w io.Writer = f
	if verbose {
		w = io.MultiWriter(f, stderr)
	}
	return slog.New(slog.NewTextHandler(&lines.Writer{W: w}, nil)), func() { f.Close() }, nil
}

// progress shows each server's start on a terminal.
type progress struct {
	mu  sync.Mutex
	w   io.Writer
	col colours
}

func newProgress(w io.Writer, n int) *progress {
	return &progress{w: w, col: coloursFor(w)}
}

func (p *progress) update(st airlock.ServerStatus) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch st.Status {
	case airlock.StatusStarting:
		fmt.Fprintf(p.w, "%s %s starting…\n", p.col.dim("·"), st.ID)
	case airlock.StatusReady:
		fmt.Fprintf(p.w, "%s %s ready in %s (%s, %s)\n", p.col.green("✓"), st.ID, roundDuration(st.Took), st.ProtocolVersion, plural(st.Tools, "tool"))
	case airlock.StatusFailed:
		fmt.Fprintf(p.w, "%s %s failed after %s\n", p.col.red("✗"), st.ID, roundDuration(st.Took))
	case airlock.StatusAuthRequired:
		fmt.Fprintf(p.w, "%s %s needs a login: airlock auth login %s\n", p.col.paint("33", "!"), st.ID, st.ID)
	}
}

func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
