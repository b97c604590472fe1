package airlock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/catalog"
	"github.com/airlockhq/airlock/internal/schema"
	"github.com/airlockhq/airlock/internal/upstream"
	storepkg "github.com/airlockhq/airlock/store"
)

// A server is one configured server as the host runs it: its connection,
// which a supervisor replaces when the server dies, and its tools, which a
// refresh replaces when the server says they changed. Snapshots hold
// servers, so a call always reaches the server's current connection.
type server struct {
	cfg      config.Server
	stateDir string // where its runtime directory goes

	link  atomic.Pointer[link] // nil until the server first started
	dirty atomic.Bool          // its tools must be discovered again at the next safe point
	// fresh: its next discovery must ask the server, not the SDK's
	// cache of the session (another replica said its lists changed).
	fresh atomic.Bool
	// told: it is marked dirty only because another replica announced
	// that its lists changed (announce.go). What its discovery then finds
	// is not announced again: every replica heard the first announcement.
	told atomic.Bool
	// quiet is the tools version such a discovery installed: no snapshot
	// swap announces it.
	quiet atomic.Uint64

	// slots bounds the calls in flight to the server (max_concurrency);
	// a call waits for one at most queue_timeout.
	slots chan struct{}
	// queued counts the calls waiting for a slot, of every partition.
	queued atomic.Int64
	// reloginMu makes one call at a time try to connect a server that
	// needed a login.
	reloginMu sync.Mutex
	// lanes are the connections of principals other than the host's
	// (partitioned servers only; see partition.go).
	lanesMu sync.Mutex
	lanes   map[Principal]*lane

	refreshMu sync.Mutex // one discovery at a time
	toolsMu   sync.Mutex
	tools     []*catalog.Tool
	version   uint64          // counts the times tools were replaced
	offers    []catalog.Offer // every tool of its last whole tools/list, for people (Available)
	// withheld are the allowed tools of its last discovery that the host
	// cannot call (catalog.Withhold).
	withheld []catalog.Withheld
	// content is what it offers besides tools, as of its tools'
	// discovery; found is what the last discovery found, installed with
	// the tools (setTools).
	content, found catalog.Content
	// taskSupport is each tool's execution.taskSupport as the server
	// last sent it, by name; kept across discoveries, since a page the
	// SDK serves from its cache is not read again. Only discovery (under
	// refreshMu) uses it.
	taskSupport map[string]string
	// pages are the cache fields of the pages its last discovery got
	// (expireListed); only discovery uses them, as taskSupport.
	pages []*mcp.Cacheable

	mu     sync.Mutex
	status ServerStatus

	life       context.Context // ends when the server's host or task does: stops its watchers
	watchers   sync.WaitGroup  // supervisor and health check
	abandoned  stopper         // stops connections that failed to start
	supervised atomic.Bool     // the supervisor runs
	checked    atomic.Bool     // the health check runs
	// track records a task server's processes as they start and stop
	// (task.go); nil for the host's, which the host records.
	track func(upstream.ProcessRecord, bool)
	ready chan struct{} // closed when the first start has ended, well or not
}

func newServer(cfg config.Server, stateDir string) *server {
	n := cfg.MaxConcurrency
	if n <= 0 {
		n = config.DefaultMaxConcurrency
	}
	return &server{cfg: cfg, stateDir: stateDir, status: ServerStatus{ID: cfg.ID, Status: StatusStarting},
		ready: make(chan struct{}), slots: make(chan struct{}, n)}
}

// setTools installs tools, with the resources, templates and prompts
// found by the discovery that found them; nil tools (a server that
// failed) installs none of them either. It returns the new tools version.
func (s *server) setTools(tools []*catalog.Tool) uint64 {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	s.tools = tools
	s.content = catalog.Content{}
	if tools != nil {
		s.content = s.found
	}
	s.version++
	return s.version
}

func (s *server) setFound(c catalog.Content) {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	s.found = c
}

func (s *server) contentNow() catalog.Content {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	return s.content
}

func (s *server) setOffers(offers []catalog.Offer) {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	s.offers = offers
}

func (s *server) setWithheld(w []catalog.Withheld) {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	s.withheld = w
}

func (s *server) withheldNow() []catalog.Withheld {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	return s.withheld
}

func (s *server) offersNow() []catalog.Offer {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	return s.offers
}

// An Offer is a tool a server advertises, allowed or not, for a person
// deciding what to allow (Host.Available): never part of a snapshot.
type Offer = catalog.Offer

// Available returns every tool each host-scoped server advertised at its
// last discovery, allowed or not, server by server in configuration order
// and by name within one. A server whose list broke the rules of
// discovery (or was never read: it failed to start, or waits for a login)
// offers nothing. Nothing here can be called: a tool reaches a snapshot
// only when the configuration allows it and it passes discovery's checks.
func (h *Host) Available() []Offer { return offersOf(h.servers) }

// Available returns what the host's servers offer (Host.Available), then
// what the task's own do.
func (t *Task) Available() []Offer { return append(t.h.Available(), offersOf(t.servers)...) }

func offersOf(servers []*server) []Offer {
	var out []Offer
	for _, s := range servers {
		out = append(out, s.offersNow()...)
	}
	return out
}

func (s *server) toolsNow() ([]*catalog.Tool, uint64) {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	return s.tools, s.version
}

func (s *server) setStatus(f func(*ServerStatus)) ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.status)
	return s.status
}

func (s *server) getStatus() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// startAll starts servers concurrently; life bounds their supervision.
func (h *Host) startAll(ctx, life context.Context, servers []*server) {
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() { h.start(ctx, life, s) })
	}
	wg.Wait()
}

// start connects one server and discovers its tools, reporting progress,
// then watches it until life ends: it is restarted when it dies, and its
// health is checked when the configuration asks.
func (h *Host) start(ctx, life context.Context, s *server) {
	defer close(s.ready)
	s.life = life
	began := time.Now()
	h.progress(s.getStatus())
	h.audit(ctx, storepkg.Event{Event: storepkg.EventServerStart, Server: s.cfg.ID})
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout())
	defer cancel()
	conn, tools, err := h.connect(ctx, s)
	if err != nil {
		h.log.Warn("server failed", "server", s.cfg.ID, "error", err.Msg)
		s.setTools(nil) // a list from the cache is not the server's word
		h.progress(h.setFailed(ctx, s, statusOf(err), err, time.Since(began)))
		return
	}
	h.progress(h.install(ctx, s, conn, tools, began, 0))
	h.watch(s)
}

// connect starts (or dials) a server and discovers its tools.
func (h *Host) connect(ctx context.Context, s *server) (*upstream.Conn, []*catalog.Tool, *Error) {
	uopts := h.upstreamOptions(s)
	var (
		conn *upstream.Conn
		err  error
	)
	switch t := h.dial(s.cfg); {
	case t != nil:
		conn, err = upstream.Dial(ctx, &s.cfg, t, uopts)
	case s.cfg.Remote():
		conn, err = h.dialRemote(ctx, s, uopts)
	default:
		conn, err = upstream.Start(ctx, &s.cfg, uopts)
	}
	if err != nil {
		if ae := authError(s.cfg.ID, "", err); ae != nil {
			return nil, nil, ae
		}
		kind := ConnectionError
		var se *upstream.StartError
		if errors.As(err, &se) && se.Contract {
			kind = ContractError
		}
		// The message may end with the server's stderr: no secret in it.
		return nil, nil, &Error{Kind: kind, Server: s.cfg.ID, Msg: h.gov.redactor.String(h.gov.scrub(err.Error())), Err: err}
	}
	tools, derr := h.discover(ctx, s, conn)
	if derr != nil {
		s.abandoned.stop(func() { conn.Abandon() })
		return nil, nil, derr
	}
	return conn, tools, nil
}

// A stopper stops, in the background, the connections a server gave up on
// (those that failed to start), so that the failure is reported when it is
// known, not after the waits of closing a server that does not answer.
// settle waits for the stops handed over so far, before the server is
// started again; wait, when the server stops for good, waits for them
// too, and a stop handed over after it runs at once. Its methods are safe
// for concurrent use.
type stopper struct {
	mu      sync.Mutex
	running []chan struct{} // closed when their stop has run
	waited  bool
}

func (s *stopper) stop(f func()) {
	s.mu.Lock()
	if s.waited {
		s.mu.Unlock()
		f()
		return
	}
	s.running = slices.DeleteFunc(s.running, isClosed)
	done := make(chan struct{})
	s.running = append(s.running, done)
	s.mu.Unlock()
	go func() {
		defer close(done)
		f()
	}()
}

func (s *stopper) settle() {
	s.mu.Lock()
	running := slices.Clone(s.running)
	s.mu.Unlock()
	for _, done := range running {
		<-done
	}
}

func (s *stopper) wait() {
	s.mu.Lock()
	s.waited = true
	s.mu.Unlock()
	s.settle()
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// limits are what every discovery allows a server: the configuration's,
// with the host's cache of compiled schemas, which a server's next
// discovery (a restart, a list change, a task's copy, a warm start's
// check of the cached list) finds filled.
func (h *Host) limits() catalog.Limits {
	lim := catalog.LimitsFrom(h.cfg.Limits)
	lim.Schema = &schema.CompileOptions{Cache: h.schemas}
	return lim
}

// discover lists a server's tools over conn, with every catalog check, and
// classifies them by local policy.
func (h *Host) discover(ctx context.Context, s *server, conn *upstream.Conn) ([]*catalog.Tool, *Error) {
	lister := &recordingLister{inner: pageTimeout{session: conn.Session(), timeout: s.cfg.RequestTimeout},
		taskSupport: maps.Clone(s.taskSupport)}
	if lister.taskSupport == nil {
		lister.taskSupport = map[string]string{}
	}
	if len(h.gov.secrets) > 0 {
		lister.scrub = h.gov.scrubbedTool
	}
	if s.fresh.Swap(false) {
		expireListed(s.pages)
	}
	lim := h.limits()
	s.setWithheld(nil)
	var advertised []*mcp.Tool
	var err error
	if caps := conn.Session().InitializeResult().Capabilities; caps != nil && caps.Tools != nil {
		advertised, err = catalog.List(ctx, s.cfg.ID, lister, lim)
	} // else a server of resources or prompts only: it has no tools to list
	var tools []*catalog.Tool
	if err == nil {
		// What it offers is shown even when the allowlist fails it
		// (a misspelt tool): that is when a person needs it most.
		s.setOffers(catalog.Offers(&s.cfg, advertised, lim))
		tools, err = catalog.Allowed(&s.cfg, advertised, lim)
	} else {
		s.setOffers(nil)
	}
	s.taskSupport = lister.taskSupport
	s.pages = lister.pages // and those of its resources and prompts (discoverContent)
	if err != nil {
		if ae := authError(s.cfg.ID, "", err); ae != nil {
			return nil, ae // tools/list needed (more) authorization
		}
		var ce *catalog.ContractError
		switch f := conn.Fault(); {
		case errors.As(err, &ce):
			return nil, &Error{Kind: ContractError, Server: s.cfg.ID, Msg: err.Error(), Err: err}
		case f != nil && f.Contract():
			return nil, &Error{Kind: ContractError, Server: s.cfg.ID, Msg: fmt.Sprintf("server %s: during tools/list, %s", s.cfg.ID, f.Msg), Err: err}
		case errors.Is(ctx.Err(), context.Canceled):
			return nil, &Error{Kind: ConnectionError, Server: s.cfg.ID, Msg: fmt.Sprintf("server %s: discovery cancelled", s.cfg.ID), Err: err}
		case ctx.Err() != nil:
			return nil, &Error{Kind: ConnectionError, Server: s.cfg.ID, Msg: fmt.Sprintf("server %s: discovery did not finish within %s (connect_timeout)", s.cfg.ID, s.cfg.ConnectTimeout), Err: err}
		}
		return nil, &Error{Kind: ConnectionError, Server: s.cfg.ID, Msg: fmt.Sprintf("server %s: tools/list failed: %v", s.cfg.ID, err), Err: err}
	}
	// Local policy, never the server's annotations, says what a tool may do.
	for _, t := range tools {
		effect, _ := h.gov.policy.Classify(t.Server, t.Remote)
		t.Effect = effect
		if t.Hidden > 0 {
			h.log.Warn("tool text had hidden characters; they are shown", "server", s.cfg.ID, "tool", t.Remote, "count", t.Hidden)
			h.audit(ctx, storepkg.Event{Event: storepkg.EventToolFlagged, Server: s.cfg.ID,
				Fields: map[string]any{"remote_tool": t.Remote, "flag": catalog.FlagHidden, "count": t.Hidden}})
		}
	}
	tools = h.withhold(ctx, s, tools, lister.taskSupport)
	h.rememberTools(ctx, s, conn.ProtocolVersion(), lister)
	s.setFound(h.discoverContent(ctx, s, conn))
	if tools == nil {
		tools = []*catalog.Tool{} // discovered: none allowed, which is not a failure
	}
	return tools, nil
}

func (h *Host) dial(srv config.Server) mcp.Transport {
	if h.opts.Dial == nil {
		return nil
	}
	return h.opts.Dial(srv)
}

// pageTimeout bounds each page of tools/list by the server's request timeout.
type pageTimeout struct {
	session *mcp.ClientSession
	timeout time.Duration
}

func (p pageTimeout) ListTools(ctx context.Context, params *mcp.ListToolsParams) (*mcp.ListToolsResult, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	return p.session.ListTools(ctx, params)
}

// checkHealth pings a server every interval: ping on 2025-11-25 sessions,
// and on 2026-07-28 ones too (the go-sdk answers it in both eras). A failed
// ping makes a ready server degraded; the next good one makes it ready.
func (h *Host) checkHealth(s *server) {
	life := s.life
	every(life, s.cfg.HealthCheck.Interval, func() bool {
		conn := s.current()
		if conn.Fault() != nil {
			return true // the supervisor has it
		}
		ctx, cancel := context.WithTimeout(life, s.cfg.HealthCheck.Timeout)
		err := conn.Session().Ping(ctx, nil)
		cancel()
		if life.Err() != nil {
			return false
		}
		prev := s.getStatus().Status
		st := s.setStatus(func(st *ServerStatus) {
			switch {
			case err == nil && st.Status == StatusDegraded:
				st.Status, st.Err = StatusReady, nil
			case err == nil:
			case st.Status == StatusReady:
				st.Status, st.Err = StatusDegraded, newError(ConnectionError, s.cfg.ID, "", err, "server %s: health check failed: %v", s.cfg.ID, err)
			}
			if err == nil {
				st.LastOK = time.Now()
			}
		})
		if st.Status != prev {
			h.log.Warn("server health changed", "server", s.cfg.ID, "status", st.Status)
			h.audit(life, storepkg.Event{Event: storepkg.EventHealth, Server: s.cfg.ID, Fields: map[string]any{"status": st.Status}})
		}
		return true
	})
}

// stopAll closes servers concurrently, each within its bounded time, after
// their watchers have stopped (their life must be over).
func stopAll(servers []*server) error {
	var wg sync.WaitGroup
	errs := make([]error, len(servers))
	for i, s := range servers {
		wg.Go(func() {
			s.watchers.Wait()
			if conn := s.current(); conn != nil {
				errs[i] = conn.Close()
			}
			s.abandoned.wait()
			s.setStatus(func(st *ServerStatus) {
				if st.Status != StatusFailed {
					st.Status = StatusStopped
				}
			})
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// statusOf is the status of a server that could not be connected.
func statusOf(err *Error) string {
	if err.Kind == AuthRequired {
		return StatusAuthRequired
	}
	return StatusFailed
}

// upstreamOptions are the options of a connection to s.
func (h *Host) upstreamOptions(s *server) *upstream.Options {
	version := h.opts.Version
	if version == "" {
		version = "dev"
	}
	track := s.track // a task records its own (task.go)
	if track == nil && !s.cfg.TaskScoped() {
		track = h.procs.track(s.cfg.ID)
	}
	return &upstream.Options{
		Track:           track,
		StopLater:       s.abandoned.stop,
		SecretEnv:       resolveSecretEnv(s.cfg.SecretEnv),
		Logger:          h.log,
		ClientInfo:      &mcp.Implementation{Name: "airlock", Version: version},
		StateDir:        s.stateDir,
		MaxMessageBytes: h.cfg.Limits.MaxMessageBytes,
		Grace:           h.opts.StopGrace,
		Trace:           h.trace.tap(s.cfg.ID),
		// Servers are told the host can ask a person only when it can
		// (input.go), that it samples only for those that may, and that it
		// has roots only when it relays its calls' clients' (roots.go).
		Elicitation: h.opts.Elicit != nil,
		Sampling:    s.cfg.MaySample(),
		Roots:       h.opts.Roots != nil,
		// A changed tool list only marks the server (and drops its cached
		// list): the catalog changes at the next safe point, never under a
		// turn's feet.
		OnToolsChanged: func() {
			s.told.Store(false) // the server's own word: a change it finds is announced
			if !s.dirty.Swap(true) {
				h.forgetTools(s)
				h.catalogChanged()
			}
		},
		// So does a changed resource or prompt list.
		OnContentChanged: func() {
			s.told.Store(false)
			if !s.dirty.Swap(true) {
				h.forgetList(s, contentKind)
				h.catalogChanged()
			}
		},
		OnResourceUpdated: func(uri string) { h.resourceUpdated(s, h.ownWho(s), uri) },
	}
}
