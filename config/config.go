// Package config turns an airlock.yaml file, or an mcpServers JSON file as
// written for Claude Desktop, Claude Code and Cursor, into a validated,
// immutable [Config].
//
// Validation is strict on purpose: a key this version does not understand is
// an error, never silently ignored, because an ignored policy or limit would
// quietly weaken what the operator asked for. Every problem is reported as an
// [*Error] naming the file, the line and the key path, and all problems found
// in one file are returned together (joined with [errors.Join], in line order)
// so they can be fixed in one pass.
//
// The package depends on nothing else in Airlock but the egress rules for
// registered URLs (auth/egress), so that a URL the configuration accepts is
// one the host will use; the root package and the command line import it.
package config

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FileName is the name of the configuration file that [Find] looks for.
const FileName = "airlock.yaml"

// altFileName is also accepted by [Find], because .yml is a common spelling.
const altFileName = "airlock.yml"

// SupportedProtocolVersions lists the MCP protocol versions this version of
// Airlock can speak, newest first.
var SupportedProtocolVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Defaults that a configuration read from a file gets for keys left out,
// and that the host applies to a Config built in Go whose fields are zero.
const (
	// DefaultStateDir is the state directory's name, beside the
	// configuration file (see [Config.StateDir]).
	DefaultStateDir       = ".airlock"
	DefaultQueueTimeout   = 10 * time.Second
	DefaultMaxConcurrency = 16
	DefaultApprovalTTL    = time.Hour
	DefaultHookTimeout    = 5 * time.Second
	// DefaultMaxResourceBytes is limits.max_resource_bytes left out: 8 MiB.
	DefaultMaxResourceBytes = 8 << 20
)

// Defaults for keys that may be left out.
var defaultProtocolVersions = []string{"2026-07-28", "2025-11-25"}

const (
	defaultRequestTimeout = 30 * time.Second
	defaultConnectTimeout = 30 * time.Second
	defaultProbeTimeout   = 3 * time.Second
	maxTimeout            = 24 * time.Hour

	// Remote (transport: http) servers.
	defaultHTTPConnectTimeout = 5 * time.Second
	defaultStreamReadTimeout  = 300 * time.Second
	defaultRedirectURI        = "http://127.0.0.1:8765/callback"

	defaultMaxPages        = 100
	defaultMaxTools        = 1000
	defaultMaxDescription  = 2000
	defaultMaxMessageBytes = 16 << 20

	defaultMaxCallsPerTurn        = 32
	defaultMaxConcurrentPerTenant = 64
	defaultMaxInputRounds         = 8

	defaultTenant = "default"
)

// Config is a validated configuration. It is never modified after it is
// returned, so it may be shared freely between goroutines.
type Config struct {
	// Path is the absolute path of the file the configuration was read from,
	// or "" when it was parsed from bytes.
	Path string
	// Dir is the absolute directory that relative paths resolve against: the
	// directory of the file.
	Dir string
	// Development relaxes the egress rules for local testing: plain http to
	// loopback with an explicit port, and loopback reachable by every server.
	Development bool
	// Servers are the configured upstream servers, in file order; servers
	// imported from mcpServers files follow those listed under servers:.
	Servers []Server
	// Limits bound what servers may send and how many calls run.
	Limits Limits
	// Tenancy is the credential partition the command line acts for.
	Tenancy Tenancy
	// Egress configures how remote connections leave the host.
	Egress Egress
	// Policy classifies tools and decides which calls run, which ask a
	// person first and which are refused.
	Policy Policy
	// Approvals configures the requests for a person's approval that an
	// ask decision creates.
	Approvals Approvals
	// Audit configures what the audit trail keeps.
	Audit Audit
	// Serve configures the gateway, airlock serve.
	Serve Serve
	// Store says where the journal, approvals and audit trail are kept.
	Store Store
	// Agent configures the agent loop, airlock run.
	Agent Agent

	notices []string
}

// StateDir returns the default state directory: .airlock beside the
// configuration file.
func (c *Config) StateDir() string { return filepath.Join(c.Dir, DefaultStateDir) }

// Notices returns messages worth showing to the person running Airlock that
// are not errors, such as a server that exposes no tools.
func (c *Config) Notices() []string {
	return slices.Clone(c.notices)
}

// Tenancy is tenancy: {tenant, user}, the partition whose credentials,
// approvals and limits a call counts against.
type Tenancy struct {
	// Tenant defaults to "default".
	Tenant string
	// User defaults to $USER, else the name of the account airlock runs
	// as, else "default".
	User string
}

// Egress is egress: {proxy}.
type Egress struct {
	// Proxy is the URL of an egress proxy (http or https, a host and an
	// optional port, nothing else) that every connection to a remote server
	// and its authorization server goes through, or "" for none. Proxy
	// environment variables are never consulted.
	Proxy string
}

// Server is one upstream MCP server. Keys of the other transport are
// refused when the configuration is read, so the fields of a stdio server
// that only apply to http are zero, and the other way round.
type Server struct {
	// ID names the server in tool names, policy and messages.
	ID string
	// Transport is "stdio" (a local process) or "http" (a remote server
	// reached over Streamable HTTP; see [Server.Remote]).
	Transport string
	// Scope is "host" (one process shared by every task, the default) or
	// "task" (one process per task, in the task's worktree; see
	// [Server.ForWorkspace]). A remote server is always "host".
	Scope string

	// Command and Args start the server process.
	Command string
	Args    []string
	// Cwd is the absolute, cleaned working directory of the process; it was
	// verified to exist and be a directory when the configuration was read.
	// It is empty for task servers until [Server.ForWorkspace] binds them,
	// and for remote servers.
	Cwd string
	// Env holds plain environment values that the caller adds to a minimal
	// base environment.
	Env map[string]string
	// HostEnv holds values the host itself adds to the server's
	// environment (over Env), which depend on where this host runs rather
	// than on the configuration, such as the paths a bundled workspace
	// server must protect (the state directory among them). They are not
	// part of the launch an approval is bound to (LaunchFingerprint): one
	// configuration is one launch, on every replica, wherever its state
	// directory is. Never read from a configuration file.
	HostEnv map[string]string
	// SecretEnv maps a variable of the server's environment to the host
	// variable its value is read from when the server starts, such as
	// API_KEY: HOST_VAR. The configuration holds names only: every host
	// variable was verified to be set and non-empty when the configuration
	// was read, and the host resolves and redacts the values. No name is
	// both here and in Env.
	SecretEnv map[string]string

	// AllowedTools lists the tools the server may expose. Empty means none;
	// exactly ["*"] means every tool (see [Server.AllowsAll]).
	AllowedTools []string
	// AllowedResources lists the resources the server may expose, as URI
	// globs (see [MatchResource]): * matches any run of characters but /,
	// ** any run including /. Empty means none; exactly ["*"] means every
	// resource (see [Server.AllowsAllResources]).
	AllowedResources []string
	// AllowedPrompts lists the prompts the server may expose, by the
	// server's own names, exactly. Empty means none; exactly ["*"] means
	// every prompt (see [Server.AllowsAllPrompts]).
	AllowedPrompts []string
	// ToolPrefix, when not nil, is what the local names of the server's
	// tools start with instead of "ID__": "" gives them the server's own
	// names. See [Server.LocalPrefix].
	ToolPrefix *string
	// ProtocolVersions are the protocol versions to offer, most preferred
	// first, each one of [SupportedProtocolVersions].
	ProtocolVersions []string

	// URL is the MCP endpoint of a remote server. It passed
	// egress.ValidateURL with AllowedHosts and Config.Development.
	URL string
	// Resource is the OAuth resource (RFC 8707) a remote server's tokens
	// are for. Set exactly when OAuth is; it is never derived from URL,
	// and passed the same checks.
	Resource string
	// AllowedHosts lists the host names and IP literals (lower case,
	// without brackets) that URL and Resource may name. A server imported
	// from an mcpServers file has its URL's host, because such files have
	// no allowlist.
	AllowedHosts []string
	// AllowPrivateNetworks lets this remote server's connections reach
	// private addresses; loopback is reachable only in development mode,
	// cloud metadata addresses never.
	AllowPrivateNetworks bool
	// Scopes are the OAuth scopes to request. Only with OAuth, and
	// optional: when empty, the scopes a server asks for are requested
	// (the MCP specification's scope selection: the scope of its 401
	// challenge, else its resource metadata's scopes_supported, else
	// none).
	Scopes []string
	// OAuth, when not nil, has the host log in to the server's
	// authorization server and send its access token.
	OAuth *OAuth
	// StreamReadTimeout bounds the wait for the next event of a response
	// stream from a remote server. It is never shorter than
	// RequestTimeout.
	StreamReadTimeout time.Duration
	// TerminateOnClose has the host end a remote server's session (HTTP
	// DELETE) when it closes the connection.
	TerminateOnClose bool
	// CAFile is the absolute path of a PEM file of CA certificates that
	// the server's connections (its authorization server's included)
	// trust besides the system's, or "".
	CAFile string

	// RequestTimeout bounds one request to the server.
	RequestTimeout time.Duration
	// ConnectTimeout bounds, for a stdio server, starting it, the
	// handshake and tool discovery together; for a remote server, opening
	// the network connection. See [Server.StartTimeout].
	ConnectTimeout time.Duration
	// ProbeTimeout bounds the 2026-07-28 server/discover probe before
	// falling back to initialize. It is never longer than ConnectTimeout
	// for a stdio server, nor than RequestTimeout for a remote one (the
	// probe is one request of the handshake).
	ProbeTimeout time.Duration

	// QueueTimeout is how long a call waits for one of the server's
	// MaxConcurrency slots before it is refused as busy, never sent.
	QueueTimeout time.Duration
	// MaxConcurrency bounds the calls in flight to the server per
	// credential partition.
	MaxConcurrency int

	// MaxCallDuration, when set, has the host ask the server for progress
	// on every call: each progress notification starts the request timeout
	// again, and nothing stretches a call past MaxCallDuration. Unset, a
	// call waits RequestTimeout and no more.
	MaxCallDuration time.Duration

	// HealthCheck, when its Interval is set, has the host ping the server
	// that often and mark it degraded while pings fail.
	HealthCheck HealthCheck

	// Sampling says what becomes of the server's sampling requests
	// (sampling/createMessage): SamplingDeny or "" (the default) refuses
	// them, SamplingAsk asks a person first, SamplingAllow passes
	// them to the host's model. Only a server that may sample is told the
	// host can (the sampling capability).
	Sampling string

	// Instructions says whether the agent loop (airlock run) puts the
	// server's instructions in its system prompt: InstructionsInclude,
	// bounded and scrubbed as descriptions are; InstructionsOmit or ""
	// (the default) leaves them out. The gateway relays no server's
	// instructions either way.
	Instructions string

	// Tasks, when not nil, has the gateway run some of the server's tools
	// as MCP tasks (the io.modelcontextprotocol/tasks extension) for
	// clients that negotiated it.
	Tasks *Tasks

	// Source is "file:line" where the server was defined, for messages.
	Source string
}

// Tasks is a server's tasks: mapping. A call of one of its Tools, from a
// client of the gateway that declared the tasks extension, is answered at
// once with a task the client polls, while the call runs through the same
// pipeline in the background; other calls are answered as they finish. A
// Required tool is only ever run as a task: a client that did not declare
// the extension is refused its calls, saying so.
type Tasks struct {
	// Tools and Required are patterns of the server's own tool names, in
	// which * stands for any run of characters, as in policy rules; a
	// Required tool is one of Tools too.
	Tools    []string
	Required []string
	// TTL is how long a task, and its result, is kept after it was
	// created (default DefaultTaskTTL); PollInterval how often its client
	// is asked to poll it (default DefaultTaskPollInterval).
	TTL          time.Duration
	PollInterval time.Duration
	// MaxResultBytes bounds a task's result as it is kept (default
	// DefaultTaskResultBytes); a larger one settles the task failed.
	MaxResultBytes int
}

// Defaults of a tasks: mapping.
const (
	DefaultTaskTTL          = time.Hour
	DefaultTaskPollInterval = time.Second
	DefaultTaskResultBytes  = 1 << 20
)

// A TaskMode says whether the gateway runs a tool as a task.
type TaskMode int

const (
	TaskNever    TaskMode = iota // the tool is called as any other
	TaskOptional                 // as a task for a client that declared the extension
	TaskRequired                 // only as a task
)

// Mode is how the gateway runs the server's tool of that (own) name.
func (t *Tasks) Mode(tool string) TaskMode {
	if t == nil {
		return TaskNever
	}
	match := func(globs []string) bool {
		return slices.ContainsFunc(globs, func(g string) bool { return matchName(g, tool) })
	}
	switch {
	case match(t.Required):
		return TaskRequired
	case match(t.Tools):
		return TaskOptional
	}
	return TaskNever
}

// Grants airlock obtains tokens with (OAuth.Grant).
const (
	// GrantAuthorizationCode: a person logs in (airlock auth login).
	GrantAuthorizationCode = "authorization_code"
	// GrantClientCredentials: airlock obtains tokens with its own client
	// credentials, without a person (CI jobs, daemons).
	GrantClientCredentials = "client_credentials"
)

// OAuth is a remote server's oauth: mapping: how airlock identifies itself
// to the authorization server. With the authorization code grant, at least
// one of ClientID, ClientMetadataURL and DynamicRegistration is set; with
// the client credentials grant, ClientID and exactly one of
// ClientSecretEnv and PrivateKeyFile.
type OAuth struct {
	// Grant is GrantClientCredentials, or GrantAuthorizationCode or ""
	// (the default: a person logs in).
	Grant string
	// ClientID is a client id registered with the authorization server
	// in advance, or "".
	ClientID string
	// ClientSecretEnv names the host variable that holds ClientID's
	// secret, for a confidential client registered in advance, or "". The
	// secret itself is never in the configuration, and is redacted
	// wherever the host writes.
	ClientSecretEnv string
	// ClientMetadataURL is the https URL of airlock's client ID metadata
	// document, used as the client id where the authorization server
	// supports it, or "".
	ClientMetadataURL string
	// DynamicRegistration allows registering a client (RFC 7591) when
	// neither of the above applies.
	DynamicRegistration bool
	// RedirectURI is where the login's answer arrives: plain http to a
	// loopback IP literal with an explicit port, on which airlock listens
	// during a login. It defaults to http://127.0.0.1:8765/callback.
	RedirectURI string
	// PrivateKeyFile is the absolute path of the PEM private key that
	// signs the client's assertions (private_key_jwt, RFC 7523) with the
	// client credentials grant, or "". Only its owner may read it; it is
	// read when a token is first needed and never written anywhere.
	PrivateKeyFile string
}

// The values of a server's sampling: key.
const (
	SamplingDeny  = "deny"
	SamplingAsk   = "ask"
	SamplingAllow = "allow"
)

// MaySample reports whether the server's sampling requests may ever reach
// a model: sampling is ask or allow.
func (s *Server) MaySample() bool {
	return s.Sampling == SamplingAsk || s.Sampling == SamplingAllow
}

// ClientCredentials reports whether airlock obtains the server's tokens
// with its own client credentials, without a person logging in.
func (o *OAuth) ClientCredentials() bool { return o != nil && o.Grant == GrantClientCredentials }

// HealthCheck is health_check: {interval, timeout} (defaults 30s and 5s
// when the key is given; no checks when it is not).
type HealthCheck struct {
	Interval time.Duration
	Timeout  time.Duration
}

// LocalPrefix is what the local names of the server's tools start with:
// ToolPrefix when it is set, else the id and "__" (fs__read_file). A
// local name is the prefix and the server's own name, unless that is no
// valid name or is another tool's too; then it is hashed (see the
// catalog's naming).
func (s *Server) LocalPrefix() string {
	if s.ToolPrefix != nil {
		return *s.ToolPrefix
	}
	return s.ID + "__"
}

// TaskScoped reports whether the server runs once per task.
func (s *Server) TaskScoped() bool { return s.Scope == "task" }

// Remote reports whether the server is reached over the network
// (transport: http).
func (s *Server) Remote() bool { return s.Transport == "http" }

// StartTimeout bounds bringing the server up: connecting, the handshake and
// tool discovery together. For a stdio server that is ConnectTimeout; for a
// remote one, ConnectTimeout opens the network connection and the handshake
// and discovery are bounded by RequestTimeout, so it is ConnectTimeout plus
// two RequestTimeouts.
func (s *Server) StartTimeout() time.Duration {
	if s.Remote() {
		return s.ConnectTimeout + 2*s.RequestTimeout
	}
	return s.ConnectTimeout
}

// WorkspaceEnv is the variable that tells a task server its worktree.
const WorkspaceEnv = "AGENT_WORKSPACE_ROOT"

// ForWorkspace returns the server bound to a task's worktree dir: ${workspace}
// in its command, args and env replaced by dir, its cwd set to dir and
// AGENT_WORKSPACE_ROOT set to dir unless the configuration sets it.
func (s *Server) ForWorkspace(dir string) Server {
	b := *s
	expand := func(v string) string { return strings.ReplaceAll(v, workspaceVar, dir) }
	b.Command = expand(s.Command)
	b.Args = make([]string, len(s.Args))
	for i, a := range s.Args {
		b.Args[i] = expand(a)
	}
	b.Env = make(map[string]string, len(s.Env)+1)
	for k, v := range s.Env {
		b.Env[k] = expand(v)
	}
	if _, ok := b.Env[WorkspaceEnv]; !ok {
		b.Env[WorkspaceEnv] = dir
	}
	b.SecretEnv = maps.Clone(s.SecretEnv)
	b.Cwd = dir
	b.AllowedTools = slices.Clone(s.AllowedTools)
	b.AllowedResources = slices.Clone(s.AllowedResources)
	b.AllowedPrompts = slices.Clone(s.AllowedPrompts)
	b.ProtocolVersions = slices.Clone(s.ProtocolVersions)
	b.AllowedHosts = slices.Clone(s.AllowedHosts)
	b.Scopes = slices.Clone(s.Scopes)
	if s.Tasks != nil {
		t := *s.Tasks
		t.Tools, t.Required = slices.Clone(t.Tools), slices.Clone(t.Required)
		b.Tasks = &t
	}
	return b
}

// AllowsAll reports whether every tool of the server is allowed.
func (s *Server) AllowsAll() bool {
	return len(s.AllowedTools) == 1 && s.AllowedTools[0] == "*"
}

// Allows reports whether the tool named tool (the server's own name for it)
// is allowed.
func (s *Server) Allows(tool string) bool {
	return s.AllowsAll() || slices.Contains(s.AllowedTools, tool)
}

// Limits bound what servers may send to Airlock, and how many calls run.
// Past a call limit, a call is denied with the limit named.
type Limits struct {
	// MaxPages bounds the pages of one paginated list (tools/list and the like).
	MaxPages int
	// MaxTools bounds the tools one server may expose.
	MaxTools int
	// MaxDescription bounds a tool description, in characters.
	MaxDescription int
	// MaxMessageBytes bounds one message a server sends.
	MaxMessageBytes int
	// MaxCallsPerTurn bounds the tool calls of one agent turn.
	MaxCallsPerTurn int
	// MaxConcurrentPerTenant bounds the calls in flight for one tenant,
	// across every server.
	MaxConcurrentPerTenant int
	// MaxResourceBytes bounds, in bytes, what one resource read may
	// return.
	MaxResourceBytes int
	// MaxInputRounds bounds the times a server may ask a person for input
	// during one call (an input_required result, or an elicitation/create
	// request); a server that asks once more breaks the contract.
	MaxInputRounds int
}

func defaultLimits() Limits {
	return Limits{
		MaxPages:        defaultMaxPages,
		MaxTools:        defaultMaxTools,
		MaxDescription:  defaultMaxDescription,
		MaxMessageBytes: defaultMaxMessageBytes,

		MaxResourceBytes: DefaultMaxResourceBytes,

		MaxCallsPerTurn:        defaultMaxCallsPerTurn,
		MaxConcurrentPerTenant: defaultMaxConcurrentPerTenant,
		MaxInputRounds:         defaultMaxInputRounds,
	}
}

// newConfig returns a configuration with every default filled in.
func newConfig(dir string) *Config {
	return &Config{Dir: dir, Limits: defaultLimits(), Tenancy: Tenancy{Tenant: defaultTenant},
		Approvals: Approvals{TTL: DefaultApprovalTTL}}
}

// newServer returns a server with every default filled in.
func newServer(dir, source string) Server {
	return Server{
		Transport:        "stdio",
		Scope:            "host",
		Cwd:              dir,
		ProtocolVersions: slices.Clone(defaultProtocolVersions),
		RequestTimeout:   defaultRequestTimeout,
		ConnectTimeout:   defaultConnectTimeout,
		ProbeTimeout:     defaultProbeTimeout,
		QueueTimeout:     DefaultQueueTimeout,
		MaxConcurrency:   DefaultMaxConcurrency,
		Source:           source,
	}
}

// makeRemote turns a server from newServer into a remote one with the
// remote defaults: it has no process, so no working directory.
func (s *Server) makeRemote() {
	s.Transport = "http"
	s.Cwd = ""
	s.ConnectTimeout = defaultHTTPConnectTimeout
	s.StreamReadTimeout = defaultStreamReadTimeout
	s.TerminateOnClose = true
}

// Error is one problem in a configuration file.
type Error struct {
	// File is the name of the file as the user gave it.
	File string
	// Line is the 1-based line of the problem, or 0 when it has none.
	Line int
	// Path is the key path, such as servers[1].allowed_tools, or "".
	Path string
	// Msg says what is wrong and how to fix it.
	Msg string
}

// Error formats the problem as "file:line: path: message".
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// source formats a definition site for Server.Source and messages.
func source(file string, line int) string {
	return file + ":" + strconv.Itoa(line)
}
