package airlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/artifact"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/catalog"
	"github.com/airlockhq/airlock/internal/redact"
	"github.com/airlockhq/airlock/internal/schema"
	"github.com/airlockhq/airlock/metrics"
	storepkg "github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/postgres"
)

// Options tune a Host. The zero value works.
type Options struct {
	// StateDir holds the host's state: server runtime directories, the
	// artifact store, logs. Empty means ".airlock" beside the config file.
	StateDir string
	// Logger receives the host's log, including every line servers write on
	// stderr. Nil discards it.
	Logger *slog.Logger
	// Progress, when set, is called as each server moves through starting,
	// ready and failed while Open runs. Calls come from several goroutines.
	Progress func(ServerStatus)
	// Version is reported to servers as the client version. Empty means "dev".
	Version string
	// Dial, when set, is asked for a transport before a server's command is
	// started: a non-nil transport (an in-process server from
	// mcp.NewInMemoryTransports, say) is used instead of the command.
	// Every check but those about the process still applies.
	Dial func(srv config.Server) mcp.Transport
	// Store keeps the journal, approvals and the audit trail. Nil means the
	// store the configuration names (OpenConfiguredStore): the PostgreSQL
	// database of store.url, else the SQLite database STATE/airlock.db.
	Store storepkg.Store
	// Approver, when set, is asked about calls that policy wants approved
	// (see Approver). Nil leaves them pending: the call ends
	// approval_required.
	Approver Approver
	// Before and After are library hooks, run around every call: before
	// hooks ahead of policy (after the configured command hooks' turn is
	// decided together with them), after hooks on every result.
	Before []BeforeHook
	After  []AfterHook
	// Principal is who the host acts for: its tenant and user choose the
	// credential partition of remote servers, and policy sees them. Empty
	// fields mean the configuration's tenancy (tenant "default" and the
	// operating-system user unless it says otherwise).
	Principal Principal
	// Secrets are further values to redact wherever the host writes
	// (secret_env values are always redacted).
	Secrets []string
	// CallProgress, when set, is told of each progress notification a
	// server sends about a call in flight: the host then asks every server
	// for progress on every call (a progress token), and changes nothing
	// else about a call. It is called on the connection's reader
	// goroutine, one call at a time for one call, never after that call's
	// Call has returned; it should return quickly.
	CallProgress func(CallProgress)
	// Trace, when set, receives every JSON-RPC message the host sends to
	// and receives from its servers (the tasks' included), one JSON
	// object a line: {"time", "server", "direction": "sent"|"received",
	// "message"}, the message redacted as the audit trail is (secret_env
	// values and credential formats). The host writes it from a goroutine
	// of its own, in the order messages pass, and flushes it on Close; it
	// never closes Trace. A write error stops the trace and is logged.
	Trace io.Writer
	// WarmStart shows the tools of servers whose tool lists are in the
	// store's cache before those servers have started: Open returns at once
	// for them, they start in the background, and a call to one waits for
	// it. What a server says when it answers replaces the cached list at
	// the next safe point (BeginTurn).
	WarmStart bool
	// ShutdownWait is how long Close lets calls in flight finish before it
	// cancels them. Zero means 10s.
	ShutdownWait time.Duration
	// StopGrace is how long closing waits for a server at each step (after
	// closing stdin, after SIGTERM). Zero means 2s.
	StopGrace time.Duration
	// Auth configures the credentials of remote servers.
	Auth AuthOptions
	// CatalogChanged, when set, is called when the catalog may have
	// changed: a server said its tools changed, or got a new connection
	// (restarted, or connected after a login). Nothing changes until the
	// next safe point (BeginTurn), which builds the new snapshot. Calls
	// come from several goroutines, may come in bursts, and must not
	// block.
	CatalogChanged func()
	// CatalogHeard, when set, is called instead of CatalogChanged when the
	// catalog may have changed only because another replica sharing the
	// store announced that a server's tools, resources or prompts changed:
	// at the next safe point the host asks that server again, and its
	// catalog changes only if what the server says differs from what it
	// had. Nil means CatalogChanged. Calls follow CatalogChanged's rules.
	CatalogHeard func()
	// ResourceUpdated, when set, is told each time a server says a
	// resource subscribed to (Host.Subscribe) changed. It must not
	// block.
	ResourceUpdated func(ResourceUpdate)
	// Metrics, when set, counts the host's calls, reads, prompt gets,
	// completions and token refreshes, and reports its gauges (in flight,
	// queued, servers' states, approvals pending, unknown outcomes) when
	// scraped (metrics.go). Nil measures nothing.
	Metrics *metrics.Metrics
	// TracerProvider, when set, makes a span of every tool call, resource
	// read and prompt get (spans.go), a child of the span in the caller's
	// context. Nil means the OTLP exporter the standard environment
	// configures (OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT; the host shuts it
	// down when it closes), or else OpenTelemetry's global provider, which
	// makes no spans unless the program set one.
	TracerProvider trace.TracerProvider
	// Elicit, when set, is the person a server's questions go to during a
	// call (see InputRequest): elicitations, input_required rounds, and
	// sampling requests of servers whose sampling: is ask. A call's own
	// Call.Elicit goes first.
	//
	// Servers are told (the elicitation capability) that the host can ask
	// a person exactly when Elicit is set: a connection serves every call,
	// so the declaration is the host's, not a call's. Nil declares
	// nothing, and a server that asks anyway is refused (a 2026-07-28 one
	// ends the call contract_error). A program whose calls bring their own
	// Elicitor (the gateway, which asks the client whose call it is) sets
	// Elicit too, to one that declines: an Elicitor that returns a nil
	// answer declines.
	Elicit Elicitor
	// Sample, when set, samples a model for servers whose sampling: is
	// allow, or ask once a person agreed. Nil refuses every sampling
	// request, as does sampling: deny (the default), which also leaves
	// sampling undeclared to the server. A call's own Call.Sample goes
	// first.
	Sample Sampler
	// Roots, when set, gives a server the roots it asks for during a call
	// (roots/list, or a roots request of an input_required round); a
	// call's own Call.Roots goes first. Servers are told the host has
	// roots (the roots capability) exactly when Roots is set, as for
	// Elicit. Nil (the default: the host has no roots of its own) declares
	// none, and a server that asks anyway is refused (the call ends
	// contract_error). A program whose calls bring their own (the gateway,
	// which relays the request to the client whose call it is) sets Roots
	// too, to one that refuses: an error refuses the request.
	Roots RootsLister
}

// Server states, as `airlock tools --json` and `status` report them.
const (
	StatusStarting = "starting"
	StatusReady    = "ready"
	StatusDegraded = "degraded" // it runs, but fails its health checks or its catalog
	StatusFailed   = "failed"
	StatusStopped  = "stopped"
	// StatusAuthRequired: a remote server needs a person to log in
	// (airlock auth login SERVER) before it can be used.
	StatusAuthRequired = "auth_required"
)

// A CallProgress is a progress notification a server sent about a call in
// flight (Options.CallProgress).
type CallProgress struct {
	// ToolCallID is the call's Call.ID; Tool and Server name its tool
	// (local name) and server.
	ToolCallID   string
	Tool, Server string
	// Progress is how far the call has got; Total, when the server knows
	// it, what Progress will reach (0: unknown). The server chooses the
	// unit.
	Progress, Total float64
	// Message is the server's own words, if any, with configured secrets
	// scrubbed. It is the server's text: show it as such, with control
	// characters removed.
	Message string
}

// ServerStatus describes one configured server.
type ServerStatus struct {
	ID              string
	Status          string
	ProtocolVersion string
	Tools           int           // tools the server contributes to the snapshot
	Took            time.Duration // time to reach ready or failed
	Err             *Error        // why it failed
	LastOK          time.Time     // last time the server answered
	Restarts        int           // times it was restarted after it died
}

// A Host connects to the configured MCP servers and runs every tool call
// through one pipeline. Its methods are safe for concurrent use.
type Host struct {
	cfg       *config.Config
	gov       *governance
	trail     *auditTrail
	opts      Options
	log       *slog.Logger
	artifacts *artifact.Store
	creds     *Credentials    // remote servers' OAuth logins, opened on first use
	tenants   tenantLimit     // calls in flight per tenant
	cluster   *cluster        // the limits shared with other replicas (leases.go)
	turns     *namedTurns     // the calls of the turns that calls name (turns.go)
	subs      subscriptions   // resources subscribed to (subscribe.go)
	procs     *procRecord     // the host-scoped stdio servers running, on disk
	trace     *wireTrace      // Options.Trace, or nil
	spans     spans           // Options.TracerProvider's tracer (spans.go)
	servers   []*server       // scope: host, shared by every task
	perTask   []config.Server // scope: task, started by each task
	line      *lineage        // the host's snapshots
	calls     tracker         // every call in flight, for a graceful close
	// background are the host's own goroutines that end with life
	// (watchAnnouncements).
	background sync.WaitGroup
	// ending are the outcomes written without their calls waiting
	// (endIntent), which Close waits for before the store closes.
	ending sync.WaitGroup
	// uncounted limits the warning that reads run uncounted across
	// replicas (room, countNamedTurn) to one a minute.
	uncounted rate.Sometimes
	life      context.Context // ends when the host closes: stops supervisors
	endLife   context.CancelFunc

	tasksMu sync.Mutex
	tasks   map[*Task]bool // attached here, released when the host closes

	acting acting // the principals SnapshotFor acts for, and their lanes (acting.go)

	warned sync.Map // the warnings already written to the audit trail

	schemas *schema.Cache // the tool schemas every discovery compiled (limits)

	closeOnce sync.Once
	closeErr  error
}

// Open starts every host-scoped server, discovers its tools and builds the
// first snapshot; task-scoped servers start with each task (OpenTask). A server that fails to start or breaks the catalog rules
// is reported in Servers and contributes no tools; the others still work.
// Open fails only when the host itself cannot run: the state directory
// cannot be created, or two tools cannot be given distinct local names.
func Open(ctx context.Context, cfg *config.Config, opts *Options) (*Host, error) {
	h := &Host{cfg: cfg, schemas: schema.NewCache(0, 0), uncounted: rate.Sometimes{First: 1, Interval: time.Minute}}
	if opts != nil {
		h.opts = *opts
	}
	h.log = h.opts.Logger
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.opts.StateDir == "" {
		h.opts.StateDir = cfg.StateDir()
	}
	for what, name := range map[string]string{"tenant": h.opts.Principal.Tenant, "user": h.opts.Principal.User} {
		if name != "" {
			if err := config.CheckPrincipal(what, name); err != nil {
				return nil, fmt.Errorf("Options.Principal: %w", err)
			}
		}
	}
	if err := MakeStateDir(h.opts.StateDir); err != nil {
		return nil, fmt.Errorf("cannot create the state directory %s: %w", h.opts.StateDir, err)
	}
	arts, err := artifact.Open(filepath.Join(h.opts.StateDir, "artifacts"))
	if err != nil {
		return nil, err
	}
	h.artifacts = arts
	if h.gov, err = openGovernance(cfg, &h.opts, h.opts.StateDir); err != nil {
		return nil, err
	}
	// Secrets never reach the log either.
	h.log = slog.New(redact.NewHandler(h.log.Handler(), h.gov.redactor))
	stopLeftovers(h.opts.StateDir, h.opts.StopGrace, h.log)
	h.procs = newProcRecord(hostProcPath(h.opts.StateDir), h.log)
	// With the standard OpenTelemetry environment set, audit events are
	// also exported as OTLP log records.
	if h.trail, err = openTrail(ctx, h.gov.store, audit.Options{Logger: h.log, Redactor: h.gov.redactor,
		RecordValues: cfg.Audit.RecordValues, Now: h.gov.now}); err != nil {
		h.gov.close()
		return nil, err
	}
	if h.spans, err = openSpans(ctx, h.opts.TracerProvider, h.log); err != nil {
		h.trail.close()
		h.gov.close()
		return nil, err
	}
	h.creds = OpenCredentials(cfg, &h.opts)
	if db, ok := h.gov.store.(*postgres.DB); ok {
		h.creds.vault = db.Vault()
	}
	if a, ok := h.gov.store.(storepkg.Announcer); ok {
		h.creds.announcer = a
	}
	if h.opts.Trace != nil {
		h.trace = newWireTrace(h.opts.Trace, h.gov.redactor, h.log)
	}
	h.tenants.limit = cfg.Limits.MaxConcurrentPerTenant
	h.cluster = openCluster(h.gov.store, h.log)
	h.turns = openNamedTurns(h.gov.store)
	h.recoverOpen(ctx)

	for _, sc := range cfg.Servers {
		if sc.TaskScoped() {
			h.perTask = append(h.perTask, sc)
			continue
		}
		h.servers = append(h.servers, newServer(sc, h.opts.StateDir))
	}
	h.life, h.endLife = context.WithCancel(context.WithoutCancel(ctx))
	// With a warm start, a server whose tool list is in the cache starts in
	// the background; its cached tools are in the first snapshot, and what
	// the server says now reaches the catalog at the next safe point.
	var now []*server
	for _, s := range h.servers {
		if h.opts.WarmStart {
			if tools, ok := h.cachedTools(ctx, s); ok {
				if c, ok := h.cachedContentOf(ctx, s); ok {
					s.setFound(c)
				}
				s.setTools(tools)
				s.watchers.Go(func() { h.start(h.life, h.life, s) })
				continue
			}
		}
		now = append(now, s)
	}
	h.startAll(ctx, h.life, now)
	h.line = newLineage(h.servers, nil)
	if err := h.build(h.line); err != nil {
		h.Close()
		return nil, err
	}
	h.opts.Metrics.Observe(h.metricsState)
	h.watchAnnouncements()
	return h, nil
}

// stateIgnore is the .gitignore of a state directory: everything in it.
const stateIgnore = "# Airlock's state (database, logs, credentials, task worktrees): never commit it.\n*\n"

// MakeStateDir creates the state directory dir and its parents (mode 0700)
// if need be, and keeps git away from it: a state directory inside a
// repository, as .airlock beside airlock.yaml usually is, holds the
// database, logs, credentials and the worktrees of tasks, which must show
// neither in `git status` nor in a commit. So dir gets a .gitignore that
// ignores everything, itself included, unless it has one. Everything
// that creates a state directory (Open, OpenStore, a login's credential
// store, the command line's log) calls it first.
func MakeStateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, ".gitignore"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString(stateIgnore)
	return errors.Join(err, f.Close())
}

func (h *Host) catalogChanged() {
	if h.opts.CatalogChanged != nil {
		h.opts.CatalogChanged()
	}
}

func (h *Host) catalogHeard() {
	if h.opts.CatalogHeard == nil {
		h.catalogChanged()
		return
	}
	h.opts.CatalogHeard()
}

func (h *Host) progress(st ServerStatus) {
	if h.opts.Progress != nil {
		h.opts.Progress(st)
	}
}

// Snapshot returns the current catalog snapshot without refreshing it (see
// BeginTurn). Calls made for one model turn should all use the snapshot
// that was current when the turn began.
func (h *Host) Snapshot() *Snapshot { return h.line.snap.Load() }

// Servers reports every host-scoped server, in configuration order.
func (h *Host) Servers() []ServerStatus {
	return statuses(h.servers)
}

func statuses(servers []*server) []ServerStatus {
	out := make([]ServerStatus, len(servers))
	for i, s := range servers {
		out[i] = s.getStatus()
	}
	return out
}

// TaskServers lists the task-scoped servers of the configuration: they run
// only inside a task (OpenTask).
func (h *Host) TaskServers() []string {
	var ids []string
	for _, s := range h.perTask {
		ids = append(ids, s.ID)
	}
	return ids
}

// Logger is the host's log (redacted as the host redacts), for what runs
// on top of the host, such as the agent loop.
func (h *Host) Logger() *slog.Logger { return h.log }

// StateDir returns the directory where the host keeps its state.
func (h *Host) StateDir() string { return h.opts.StateDir }

// Store returns the store the host keeps its journal, approvals and
// audit trail in: the one Options.Store gave, or the one the configuration
// names.
func (h *Host) Store() storepkg.Store { return h.gov.store }

// Close stops every server, each within a bounded time, and reports the
// servers that could not be stopped cleanly. It is idempotent.
func (h *Host) Close() error {
	h.closeOnce.Do(func() {
		// Stop starting calls, let the ones in flight finish (or cancel
		// them), then stop the servers and flush the audit trail.
		wait := h.opts.ShutdownWait
		if wait <= 0 {
			wait = 10 * time.Second
		}
		if detail, err := h.calls.drain(wait); err != nil || detail != "" {
			h.log.Warn("closing with calls in flight", "detail", detail, "error", err)
		}
		h.tasksMu.Lock()
		tasks := slices.Collect(maps.Keys(h.tasks))
		h.tasksMu.Unlock()
		for _, t := range tasks {
			t.Release()
		}
		h.acting.close(h)
		if h.endLife != nil {
			h.endLife()
		}
		h.background.Wait()
		for _, s := range h.servers {
			s.closeLanes() // released with their tasks; this is a backstop
		}
		err := stopAll(h.servers)
		if err != nil {
			h.audit(context.Background(), storepkg.Event{Event: storepkg.EventCloseFailed, Fields: map[string]any{"error": err.Error()}})
		}
		h.ending.Wait()
		h.cluster.close()
		h.trail.close()
		h.spans.close()
		h.trace.close()
		h.closeErr = errors.Join(err, h.gov.close())
	})
	return h.closeErr
}

// A Snapshot is an immutable catalog: the tools a model may call, under
// their local names. Every call resolves against the snapshot it is given,
// so a server changing its tools meanwhile cannot change what a call means.
type Snapshot struct {
	snap    *catalog.Snapshot
	servers map[string]*server // the servers its tools belong to
	task    *Task              // the task it belongs to, or nil
	turn    *turn              // the turn it was begun for, or nil
	who     Principal          // whom its calls are made for
	// warnings are the configuration entries that name none of its tools.
	warnings []Warning
	// withheld are the allowed tools of its servers the host cannot call.
	withheld []Withheld
}

// ID identifies the snapshot's content; the same servers and tools give
// the same id.
func (s *Snapshot) ID() string { return s.snap.ID() }

// Generation increases with every snapshot a host builds.
func (s *Snapshot) Generation() uint64 { return s.snap.Generation() }

// Tools returns the model-visible catalog, ordered by name.
func (s *Snapshot) Tools() []Tool {
	tools := s.snap.Tools()
	out := make([]Tool, len(tools))
	for i, t := range tools {
		out[i] = Tool{
			Name:        t.Name,
			Server:      t.Server,
			RemoteName:  t.Remote,
			Title:       t.Title,
			Description: t.Description,
			InputSchema: t.Input.JSON(),
			Annotations: t.Annotations,
			Effect:      t.Effect,
			Hidden:      t.Hidden,
		}
		if t.Output != nil {
			out[i].OutputSchema = t.Output.JSON()
		}
	}
	return out
}

// A Tool is one entry of the model-visible catalog.
type Tool struct {
	Name         string // local name: ^[A-Za-z0-9_-]{1,64}$
	Server       string
	RemoteName   string
	Title        string
	Description  string
	InputSchema  json.RawMessage // exactly the schema calls are validated against
	OutputSchema json.RawMessage // nil when the tool has none
	// Annotations are the server's hints (read-only, destructive, ...). They
	// never lower Effect.
	Annotations *mcp.ToolAnnotations
	// Effect is what local policy says the tool may do.
	Effect Effect
	// Hidden counts the characters of the server's title, description and
	// schema descriptions for the tool that nobody would have seen
	// (bidirectional overrides, zero-width and tag characters, …). They
	// are shown as [U+XXXX] in what the model gets; tag characters, which
	// can spell out an instruction, are removed. A tool with any is worth
	// a person's look.
	Hidden int
}

// resolveSecretEnv reads the host variables a server's secret_env names.
func resolveSecretEnv(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for name, hostVar := range m {
		out[name] = os.Getenv(hostVar)
	}
	return out
}
