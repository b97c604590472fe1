package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/auth/bearer"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/metrics"
	"github.com/airlockhq/airlock/policy"
	"github.com/airlockhq/airlock/store"
)

// Defaults for the zero fields of Options.
const (
	DefaultMaxBodyBytes = 4 << 20
	DefaultDrainTimeout = 25 * time.Second
	DefaultListTTL      = time.Minute
)

// Options tune a Gateway. The zero value works.
type Options struct {
	// Logger receives the gateway's log. Session ids never appear in it
	// raw, only as fingerprints. Nil discards it.
	Logger *slog.Logger
	// Version is reported to clients as the server version. Empty means
	// "dev".
	Version string
	// Serve is the configuration's serve: section (origins, sessions,
	// the scopes inbound authentication requires).
	Serve config.Serve
	// Verifier, when set, makes the HTTP endpoint an OAuth resource server
	// (serve.auth): every request needs an access token it accepts, and
	// each call is made for the tenant and user the token names. Build it
	// from Serve.Auth with NewVerifier; it must be set when Serve.Auth is
	// (New panics otherwise, rather than serve without the authentication
	// the configuration asks for).
	Verifier *bearer.Verifier
	// MaxBodyBytes bounds one HTTP request body, and one line on stdio.
	// Zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// DrainTimeout bounds how long a shutdown lets calls in flight finish
	// before it cancels them. Zero means DefaultDrainTimeout.
	DrainTimeout time.Duration
	// ListTTL is how long a 2026-07-28 client may keep the tool list
	// (ttlMs). Zero means DefaultListTTL.
	ListTTL time.Duration
	// StateKey, when set, signs the request state of the questions a call
	// puts to its client (input_required rounds): gateways that share it
	// (replicas behind one load balancer) take each other's rounds, so that
	// a client's answer may reach any of them. Nil means a random key of
	// this gateway's own. At least 32 bytes.
	StateKey []byte
	// Metrics, when set, is served at GET /metrics on the HTTP endpoint
	// (the Prometheus exposition of the host's metrics.Metrics).
	Metrics http.Handler
	// Measures, when set, is the metrics.Metrics the gateway adds its own
	// to: its sessions, and what it hands to other replicas. Nil measures
	// nothing.
	Measures *metrics.Metrics
	// MetricsToken, when set, is the bearer token a scraper must send for
	// /metrics, which then answers under any host name (a scraper reaches
	// the gateway by its address). Without it, /metrics answers only
	// under the names every request is checked against (loopback, and
	// the resource's host), and, with a Verifier, not at all: a caller's
	// access token is for MCP, not for the host's metrics.
	MetricsToken string
	// Pages, when set, serves the paths under PagesPrefix (the operator
	// console) on the HTTP endpoint's server, behind the same Host check;
	// it checks its own requests' origins and sessions.
	Pages       http.Handler
	PagesPrefix string
	// Tasks are the servers' tasks: mappings, by server id: the tools the
	// gateway runs as MCP tasks for the clients that declare the tasks
	// extension (jobs.go). Nil offers no tasks.
	Tasks map[string]*config.Tasks
}

// A Gateway serves one Host's catalog to MCP clients. Create it with New,
// open the Host with the gateway as its Approver, CatalogChanged and
// CatalogHeard (see New), then Start it; it is then an http.Handler
// provider and a stdio server. Its methods are safe for concurrent use.
type Gateway struct {
	opts   Options
	log    *slog.Logger
	server *mcp.Server
	key    []byte // signs the request state of an approval question

	host  atomic.Pointer[airlock.Host]
	snap  atomic.Pointer[airlock.Snapshot] // the catalog the server lists
	calls inflight
	posts pending // POST requests being handled (http.go)

	listMu  sync.Mutex                             // one publish at a time
	listed  map[string]*mcp.Tool                   // what the server lists, by name
	names   atomic.Pointer[map[string]*mcp.Tool]   // listed, for readers without listMu
	content atomic.Pointer[contentIndex]           // and besides tools (content.go)
	subs    sessionSubs                            // the resources sessions subscribed to (subscribe.go)
	updates chan airlock.ResourceUpdate            // to pass on to the sessions subscribed (subscribe.go)
	sending atomic.Pointer[airlock.ResourceUpdate] // the update notify is passing on, for onlyTheirs

	changed chan struct{} // the host's catalog may have changed
	heard   chan struct{} // another replica said so (CatalogHeard)
	stop    context.CancelFunc
	done    chan struct{}

	handler func() http.Handler // built once

	sessionMu sync.Mutex
	opening   int            // initialize requests not yet answered, and listen streams open
	openingBy map[string]int // the same by owner, with serve.auth

	sessions *sessions     // 2025-11-25 sessions (sessions.go)
	levels   sessionLevels // the logging levels 2025-11-25 sessions set
	parked   parkedCalls   // 2026-07-28 calls waiting for their client's answer (parked.go)
	relays   relays        // their rounds handed among replicas (rounds.go)

	jobs      jobs                                // tool calls run as MCP tasks (jobs.go)
	taskTools atomic.Pointer[map[string]taskTool] // the listed tools that run as tasks, by name

	closeOnce sync.Once
}

// New returns a gateway, not yet serving. The Host it will serve must be
// opened with it:
//
//	g := gateway.New(opts)
//	h, err := airlock.Open(ctx, cfg, &airlock.Options{Approver: g, CatalogChanged: g.CatalogChanged,
//		CatalogHeard: g.CatalogHeard, Elicit: g.Elicit, ResourceUpdated: g.ResourceUpdated})
//	…
//	err = g.Start(ctx, h)
//
// so that a call policy wants approved can ask the person at the client,
// a server's question during a call reaches the client that made it, and
// a change of the catalog, or of a resource subscribed to, reaches the
// clients.
func New(opts *Options) *Gateway {
	g := &Gateway{listed: map[string]*mcp.Tool{}, changed: make(chan struct{}, 1), heard: make(chan struct{}, 1), updates: make(chan airlock.ResourceUpdate, updatesDepth)}
	if opts != nil {
		g.opts = *opts
	}
	if g.opts.MaxBodyBytes <= 0 {
		g.opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if g.opts.DrainTimeout <= 0 {
		g.opts.DrainTimeout = DefaultDrainTimeout
	}
	if g.opts.ListTTL <= 0 {
		g.opts.ListTTL = DefaultListTTL
	}
	if g.opts.Serve.MaxSessions <= 0 {
		g.opts.Serve.MaxSessions = config.DefaultMaxSessions
	}
	if g.opts.Serve.MaxSessionsPerUser <= 0 {
		g.opts.Serve.MaxSessionsPerUser = config.DefaultMaxSessionsPerUser
	}
	if g.opts.Serve.SessionIdleTimeout <= 0 {
		g.opts.Serve.SessionIdleTimeout = config.DefaultSessionIdleTimeout
	}
	if g.opts.Version == "" {
		g.opts.Version = "dev"
	}
	if g.opts.Serve.Auth != nil && g.opts.Verifier == nil {
		// Serving without the authentication the configuration asks for
		// would fail open.
		panic("gateway: Options.Serve.Auth is set but Options.Verifier is nil: build it with NewVerifier")
	}
	log := g.opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g.log = slog.New(scrubSessions(log.Handler()))
	g.handler = sync.OnceValue(g.buildHandler)
	g.key = g.opts.StateKey
	if len(g.key) == 0 {
		g.key = make([]byte, 32)
		rand.Read(g.key)
	}
	g.sessions = newSessions(g)
	g.opts.Measures.ObserveGateway(g.sessions.count)
	caps := capabilities()
	if len(g.opts.Tasks) > 0 {
		caps.AddExtension(taskExtension, map[string]any{})
	}
	g.server = mcp.NewServer(&mcp.Implementation{Name: "airlock", Title: "Airlock", Version: g.opts.Version}, &mcp.ServerOptions{
		Logger:             slog.New(dropPerRequest(g.log.Handler())),
		Capabilities:       caps,
		SetCacheable:       g.cacheable,
		InitializedHandler: g.initialized,
		CompletionHandler:  g.complete,
		SubscribeHandler:   g.subscribe,
		UnsubscribeHandler: g.unsubscribe,
	})
	g.content.Store(&contentIndex{})
	// Outermost, around the SDK's own multi-round-trip middleware.
	g.server.AddReceivingMiddleware(g.sessions.bound, g.traced, g.unasked, g.noteLevel, g.screen)
	g.server.AddSendingMiddleware(g.onlyTheirs)
	return g
}

// Start serves h: its current catalog is listed, and every change the host
// reports (CatalogChanged, CatalogHeard) is followed until Close. h must
// have been opened with g as its Approver and CatalogChanged (and
// CatalogHeard, without which another replica's word that a catalog
// changed is announced to clients even when nothing they see did).
func (g *Gateway) Start(ctx context.Context, h *airlock.Host) error {
	if !g.host.CompareAndSwap(nil, h) {
		return errors.New("gateway: already started")
	}
	if len(g.opts.Tasks) > 0 {
		// Before the catalog is listed: which tools run as tasks depends
		// on it (indexTaskTools).
		if st, ok := h.Store().(store.Jobs); ok {
			g.jobs.st = st
		} else {
			g.log.Warn("tasks are not offered: the store keeps no tasks")
		}
	}
	g.publish(g.turn(ctx, h), false)
	life, stop := context.WithCancel(context.WithoutCancel(ctx))
	g.stop, g.done = stop, make(chan struct{})
	g.sessions.share(life, h.Store())
	if g.offersTasks() {
		go g.keepJobs(life)
		g.opts.Measures.ObserveTasks(g.jobs.count)
	}
	var notifying sync.WaitGroup
	notifying.Go(func() { g.notify(life) })
	go func() {
		defer close(g.done)
		g.follow(life)
		notifying.Wait()
	}()
	return nil
}

// Close stops following the host's catalog (and passing on its resource
// updates) and ends every session. It does
// not close the Host, which the caller opened. It is idempotent.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		g.calls.close()
		if g.stop != nil {
			g.stop()
			<-g.done
		}
		for ss := range g.server.Sessions() {
			ss.Close()
		}
	})
	return nil
}

// CatalogChanged is the Host's Options.CatalogChanged: the catalog may
// have changed. It never blocks; a burst of calls costs one refresh.
func (g *Gateway) CatalogChanged() { wake(g.changed) }

// CatalogHeard is the Host's Options.CatalogHeard: another replica said
// that a server's catalog changed. As for CatalogChanged the gateway
// takes a turn, but tells its clients only when the catalog it lists did
// change: this host's copy may have been up to date already. It never
// blocks.
func (g *Gateway) CatalogHeard() { wake(g.heard) }

// settle is how long the gateway lets a burst of changes settle before it
// takes a turn: servers that restart together cost one refresh.
const settle = 50 * time.Millisecond

// follow takes a turn whenever the host says its catalog may have changed,
// and lists the new catalog if it did change (announcing it anyway when
// the host said so of its own servers: publish).
func (g *Gateway) follow(ctx context.Context) {
	for {
		announce := false
		select {
		case <-ctx.Done():
			return
		case <-g.changed:
			announce = true
		case <-g.heard:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(settle):
		}
		select {
		case <-g.changed:
			announce = true
		default:
		}
		select {
		case <-g.heard:
		default:
		}
		g.publish(g.turn(ctx, g.host.Load()), announce)
	}
}

// turn takes the host's safe point (servers that said their tools changed
// are discovered again) and returns the host's newest snapshot. Calls use
// that snapshot itself, not the turn's copy: a gateway cannot see its
// clients' turns, so limits.max_calls_per_turn applies to a client's calls
// only through the turn each call names (turn.go).
func (g *Gateway) turn(ctx context.Context, h *airlock.Host) *airlock.Snapshot {
	h.BeginTurn(ctx)
	return h.Snapshot()
}

// publish makes snap the catalog calls resolve against and the server
// lists. Only tools (and resources, templates and prompts: content.go)
// that were added, removed or changed are touched, which
// makes the SDK tell clients (notifications/tools/list_changed, once for
// changes close together). With announce (the host said its catalog may
// have changed: a server said its tools changed, or came back) clients are
// told even when nothing they can see changed: the notification means the
// list may have changed, and listing again costs a client little, where
// missing a change the server announced would cost it the tool.
func (g *Gateway) publish(snap *airlock.Snapshot, announce bool) {
	g.listMu.Lock()
	defer g.listMu.Unlock()
	if cur := g.snap.Load(); cur != nil && cur.ID() == snap.ID() {
		if announce && len(g.listed) > 0 {
			// The SDK notifies whenever a tool is added, the same tool
			// again included.
			name := slices.Min(slices.Collect(maps.Keys(g.listed)))
			g.server.AddTool(g.listed[name], g.call)
		}
		return
	}
	g.snap.Store(snap)
	next := map[string]*mcp.Tool{}
	for _, t := range snap.Tools() {
		mt, err := toolOf(t)
		if err != nil {
			g.log.Warn("tool not listed", "tool", t.Name, "error", err)
			continue
		}
		next[t.Name] = mt
	}
	gone := missing(g.listed, next)
	if len(gone) > 0 {
		g.server.RemoveTools(gone...)
	}
	for name, mt := range next {
		if old := g.listed[name]; old == nil || !same(old, mt) {
			g.server.AddTool(mt, g.call)
		}
	}
	g.listed = next
	g.names.Store(&next)
	tt := g.indexTaskTools(snap)
	g.taskTools.Store(&tt)
	ix := indexOf(snap)
	g.publishContent(g.content.Load(), ix)
	g.content.Store(ix)
	g.log.Info("catalog listed", "snapshot", snap.ID(), "generation", snap.Generation(), "tools", len(next), "removed", len(gone),
		"resources", len(ix.resources), "templates", len(ix.templates), "prompts", len(ix.prompts))
}

// toolOf is a catalog entry as clients see it: the input schema is exactly
// the one calls are validated against.
func toolOf(t airlock.Tool) (*mcp.Tool, error) {
	var in struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(t.InputSchema, &in); err != nil || in.Type != "object" {
		return nil, errors.New(`its input schema is not of type "object"`)
	}
	mt := &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: t.InputSchema, Annotations: annotations(t)}
	if t.OutputSchema != nil {
		mt.OutputSchema = t.OutputSchema
	}
	return mt, nil
}

// annotations are the hints a client gets about a tool: read-only when
// local policy says the tool only reads, whatever the server claims; a
// server's claim that a tool is harmless (not destructive) is not passed
// on, so a client assumes the worst of every tool policy did not classify
// as a read.
func annotations(t airlock.Tool) *mcp.ToolAnnotations {
	a := &mcp.ToolAnnotations{ReadOnlyHint: t.Effect == policy.Read}
	if s := t.Annotations; s != nil {
		a.Title = s.Title
		a.OpenWorldHint = s.OpenWorldHint
	}
	return a
}

// cacheable sets how long a client may keep a list (of tools, prompts,
// resources and resource templates), and who may keep a list or a
// resource read. Without inbound authentication every client acts for one
// principal and sees the same catalog, so a list may be shared; with it,
// principals may see different catalogs, and read with credentials of
// their own, so a list or a read is for its caller only. A read is stale
// at once: the resource may change.
func (g *Gateway) cacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	switch req.(type) {
	case *mcp.ListToolsRequest, *mcp.ListPromptsRequest, *mcp.ListResourcesRequest, *mcp.ListResourceTemplatesRequest:
		c.TTLMs, c.CacheScope = int(g.opts.ListTTL/time.Millisecond), "public"
	case *mcp.ReadResourceRequest:
		c.TTLMs, c.CacheScope = 0, "public"
	default:
		return
	}
	if g.opts.Verifier != nil {
		c.CacheScope = "private"
	}
}

// initialized logs a new 2025-11-25 session, by the fingerprint of its id.
func (g *Gateway) initialized(_ context.Context, req *mcp.InitializedRequest) {
	var client, version string
	if p := req.Session.InitializeParams(); p != nil {
		version = p.ProtocolVersion
		if p.ClientInfo != nil {
			client = p.ClientInfo.Name + " " + p.ClientInfo.Version
		}
	}
	attrs := []any{"session", fingerprint(req.Session.ID()), "client", clip(client), "protocol_version", clip(version)}
	if req.Extra != nil {
		if p := bearer.PrincipalFromTokenInfo(req.Extra.TokenInfo); p != nil {
			attrs = append(attrs, "tenant", p.Tenant, "user", p.User)
		}
	}
	g.log.Info("session started", attrs...)
}

// inflight counts the calls in flight, so that a shutdown can let them
// finish, refuses new ones once it has begun, and cancels those still in
// flight when it gives up waiting.
type inflight struct {
	mu     sync.Mutex
	n      int
	closed bool
	idle   chan struct{} // closed when the last call leaves after close
	abort  context.CancelFunc
	life   context.Context // ends when the calls in flight are cancelled
}

// enter counts a call in, unless a shutdown has begun, and returns its
// context, which also ends when the shutdown cancels calls.
func (f *inflight) enter(ctx context.Context) (context.Context, context.CancelFunc, bool) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, nil, false
	}
	if f.life == nil {
		f.life, f.abort = context.WithCancel(context.Background())
	}
	f.n++
	life := f.life
	f.mu.Unlock()
	// Outside the lock, which every call takes: a call cancelled in
	// between is cancelled by AfterFunc at once.
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(life, cancel)
	return ctx, func() { stop(); cancel() }, true
}

// cancel cancels the calls in flight.
func (f *inflight) cancel() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.abort != nil {
		f.abort()
	}
}

func (f *inflight) leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.closed && f.n == 0 && f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
}

// close refuses new calls and returns a channel closed once none is in
// flight.
func (f *inflight) close() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	if f.n == 0 {
		done := make(chan struct{})
		close(done)
		return done
	}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	return f.idle
}

func (f *inflight) closing() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// drain refuses new calls and waits, at most the drain timeout, for the
// calls in flight to finish. It reports whether they did.
func (g *Gateway) drain() bool {
	select {
	case <-g.calls.close():
		return true
	case <-time.After(g.opts.DrainTimeout):
		g.log.Warn("calls still in flight after the drain timeout; cancelling them", "drain_timeout", g.opts.DrainTimeout)
		g.calls.cancel()
		return false
	}
}
