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
// The package depends on nothing else in Airlock; the root package and the
// command line import it.
package config

import (
	"fmt"
	"maps"
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

// Defaults for keys that may be left out.
var defaultProtocolVersions = []string{"2026-07-28", "2025-11-25"}

const (
	defaultRequestTimeout = 30 * time.Second
	defaultConnectTimeout = 30 * time.Second
	defaultProbeTimeout   = 3 * time.Second
	maxTimeout            = 24 * time.Hour

	defaultApprovalTTL = time.Hour
	defaultHookTimeout = 5 * time.Second

	defaultMaxPages        = 100
	defaultMaxTools        = 1000
	defaultMaxDescription  = 2000
	defaultMaxMessageBytes = 16 << 20
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
	// Limits bound what servers may send.
	Limits Limits
	// Policy classifies tools and decides which calls run, which ask a
	// person first and which are refused.
	Policy Policy
	// Approvals configures the requests for a person's approval that an
	// ask decision creates.
	Approvals Approvals
	// Audit configures what the audit trail keeps.
	Audit Audit

	notices []string
}

// Notices returns messages worth showing to the person running Airlock that
// are not errors, such as a server that exposes no tools.
func (c *Config) Notices() []string {
	return slices.Clone(c.notices)
}

// Server is one upstream MCP server.
type Server struct {
	// ID names the server in tool names, policy and messages.
	ID string
	// Transport is "stdio".
	Transport string
	// Scope is "host" (one process shared by every task, the default) or
	// "task" (one process per task, in the task's worktree; see
	// [Server.ForWorkspace]).
	Scope string

	// Command and Args start the server process.
	Command string
	Args    []string
	// Cwd is the absolute, cleaned working directory of the process; it was
	// verified to exist and be a directory when the configuration was read.
	// It is empty for task servers until [Server.ForWorkspace] binds them.
	Cwd string
	// Env holds plain environment values that the caller adds to a minimal
	// base environment.
	Env map[string]string
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
	// ProtocolVersions are the protocol versions to offer, most preferred
	// first, each one of [SupportedProtocolVersions].
	ProtocolVersions []string

	// RequestTimeout bounds one request to the server.
	RequestTimeout time.Duration
	// ConnectTimeout bounds starting the server, the handshake and tool
	// discovery together.
	ConnectTimeout time.Duration
	// ProbeTimeout bounds the 2026-07-28 server/discover probe before
	// falling back to initialize. It is never longer than ConnectTimeout.
	ProbeTimeout time.Duration

	// MaxCallDuration, when set, has the host ask the server for progress
	// on every call: each progress notification starts the request timeout
	// again, and nothing stretches a call past MaxCallDuration. Unset, a
	// call waits RequestTimeout and no more.
	MaxCallDuration time.Duration

	// HealthCheck, when its Interval is set, has the host ping the server
	// that often and mark it degraded while pings fail.
	HealthCheck HealthCheck

	// Source is "file:line" where the server was defined, for messages.
	Source string
}

// HealthCheck is health_check: {interval, timeout} (defaults 30s and 5s
// when the key is given; no checks when it is not).
type HealthCheck struct {
	Interval time.Duration
	Timeout  time.Duration
}

// TaskScoped reports whether the server runs once per task.
func (s *Server) TaskScoped() bool { return s.Scope == "task" }

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
	b.ProtocolVersions = slices.Clone(s.ProtocolVersions)
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

// Limits bound what servers may send to Airlock.
type Limits struct {
	// MaxPages bounds the pages of one paginated list (tools/list and the like).
	MaxPages int
	// MaxTools bounds the tools one server may expose.
	MaxTools int
	// MaxDescription bounds a tool description, in characters.
	MaxDescription int
	// MaxMessageBytes bounds one message a server sends.
	MaxMessageBytes int
}

func defaultLimits() Limits {
	return Limits{
		MaxPages:        defaultMaxPages,
		MaxTools:        defaultMaxTools,
		MaxDescription:  defaultMaxDescription,
		MaxMessageBytes: defaultMaxMessageBytes,
	}
}

// newConfig returns a configuration with every default filled in.
func newConfig(dir string) *Config {
	return &Config{Dir: dir, Limits: defaultLimits(), Approvals: Approvals{TTL: defaultApprovalTTL}}
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
		Source:           source,
	}
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
