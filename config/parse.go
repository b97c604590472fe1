package config

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

var (
	topKeys = keySet{
		known: []string{"servers", "limits", "development", "import", "policy", "approvals", "audit",
			"tenancy", "egress", "serve", "store", "agent"},
		elsewhere: withKeys(map[string]string{
			"tools": "under policy:", "rules": "under policy:", "cedar": "under policy:", "hooks": "under policy:",
			"ttl": "under approvals:", "record_values": "under audit:",
			"id": "in a server entry under servers:", "command": "in a server entry under servers:",
			"args": "in a server entry under servers:", "allowed_tools": "in a server entry under servers:",
			"allowed_resources": "in a server entry under servers:", "allowed_prompts": "in a server entry under servers:",
			"url": "in a server entry under servers:", "allowed_hosts": "in a server entry under servers:",
			"oauth": "in a server entry under servers:", "scopes": "in a server entry under servers:",
			"tenant": "under tenancy:", "user": "under tenancy:", "proxy": "under egress:",
			"password_env": "under store:", "audit_key": "under store:",
			"allowed_origins": "under serve:", "max_sessions": "under serve:", "session_idle_timeout": "under serve:", "metrics_token_env": "under serve:",
			"provider": "under agent:", "model": "under agent:", "base_url": "under agent:", "api_key_env": "under agent:",
			"max_steps": "under agent:", "max_tools_in_prompt": "under agent:", "system": "under agent:",
			"instructions": "in a server entry under servers:", "mcpServers": "in a JSON file: import it with import: [FILE.json]",
		}, limitKeys.known, "under limits:"),
		refused: map[string]string{"api_key": apiKeyRefused, "apiKey": apiKeyRefused},
	}
	serverKeys = keySet{
		known: []string{"id", "transport", "scope", "command", "args", "cwd", "env", "allowed_tools",
			"tool_prefix", "protocol_versions", "request_timeout", "connect_timeout", "probe_timeout", "secret_env", "health_check",
			"max_call_duration", "queue_timeout", "max_concurrency",
			"url", "resource", "allowed_hosts", "allow_private_networks", "scopes", "oauth",
			"stream_read_timeout", "terminate_on_close", "ca_file", "sampling",
			"allowed_resources", "allowed_prompts", "instructions", "tasks"},
		elsewhere: withKeys(map[string]string{
			"servers": "at the top level", "limits": "at the top level",
			"development": "at the top level", "import": "at the top level", "agent": "at the top level",
			"tenancy": "at the top level", "egress": "at the top level", "proxy": "under egress: at the top level",
			"client_id": "under oauth:", "client_metadata_url": "under oauth:",
			"dynamic_registration": "under oauth:", "redirect_uri": "under oauth:",
			"grant": "under oauth:", "private_key_file": "under oauth:",
		}, limitKeys.known, "under limits: at the top level"),
	}
	healthKeys = keySet{known: []string{"interval", "timeout"}}
	taskKeys   = keySet{known: []string{"tools", "required", "ttl", "poll_interval", "max_result_bytes"}}
	limitKeys  = keySet{
		known: []string{"max_pages", "max_tools", "max_description", "max_message_bytes",
			"max_calls_per_turn", "max_concurrent_per_tenant", "max_input_rounds", "max_resource_bytes"},
	}
)

// withKeys adds keys to elsewhere, each found where: the limits belong
// under limits: whatever the mapping they are misplaced in.
func withKeys(elsewhere map[string]string, keys []string, where string) map[string]string {
	for _, k := range keys {
		elsewhere[k] = where
	}
	return elsewhere
}

// Parse reads an airlock.yaml document. name is used in messages (for
// example "airlock.yaml" or "(built-in default)"); dir is the directory that
// relative paths resolve against. The returned Config has Path "".
func Parse(data []byte, name, dir string) (*Config, error) {
	return parseYAML(data, name, dir, os.LookupEnv)
}

func parseYAML(data []byte, name, dir string, env func(string) (string, bool)) (*Config, error) {
	absDir, err := checkInput(data, name, dir)
	if err != nil {
		return nil, err
	}
	root, perr := decodeYAML(data, name)
	if perr != nil {
		return nil, perr
	}
	r := &yamlReader{file: name, dir: absDir, lookupEnv: env}
	cfg := newConfig(absDir)
	r.crossCheck(r.read(root, cfg), cfg)
	if err := r.probs.join(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// checkInput returns the absolute form of dir, after refusing a file too
// large to be a configuration.
func checkInput(data []byte, name, dir string) (string, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolve configuration directory: %w", err)
	}
	if len(data) > maxFileBytes {
		return "", tooLarge(name)
	}
	return absDir, nil
}

// tooLarge is the error for a configuration file over maxFileBytes.
func tooLarge(name string) *Error {
	return &Error{File: name, Msg: "is larger than 4 MiB; a configuration file is a few kilobytes"}
}

// yamlFile is an airlock.yaml as read, waiting for crossCheck.
type yamlFile struct {
	root    *yaml.Node
	top     map[string]pair
	servers []*serverEntry
	imports []imported
	// importFailed is set when reading an import: entry or its file found
	// a problem.
	importFailed bool
	policy       policyEntries
}

// read reads every key of the file into cfg, and returns what the checks
// between them need.
func (r *yamlReader) read(root *yaml.Node, cfg *Config) *yamlFile {
	top, _ := r.fields(root, "", topKeys)
	f := &yamlFile{root: root, top: top}
	if p, ok := top["development"]; ok {
		cfg.Development, _ = r.boolean(p.val, "development")
	}
	userSet := false
	if p, ok := top["tenancy"]; ok {
		userSet = r.tenancy(p, &cfg.Tenancy)
	}
	if !userSet {
		name, msg := defaultUser(r.lookupEnv, user.Current)
		if msg != "" {
			r.errorf(top["tenancy"].line, "tenancy.user", "%s", msg)
		}
		cfg.Tenancy.User = name
	}
	if p, ok := top["egress"]; ok {
		r.egress(p, &cfg.Egress)
	}
	if p, ok := top["servers"]; ok {
		f.servers = r.servers(p, cfg)
	}
	if p, ok := top["limits"]; ok {
		r.limits(p.val, &cfg.Limits)
	}
	if p, ok := top["import"]; ok {
		before := len(r.probs.list)
		f.imports = r.imports(p)
		f.importFailed = len(r.probs.list) > before
	}
	if p, ok := top["policy"]; ok {
		f.policy = r.policy(p.val, &cfg.Policy)
	}
	if p, ok := top["approvals"]; ok {
		r.approvals(p, &cfg.Approvals)
	}
	if p, ok := top["audit"]; ok {
		r.audit(p, &cfg.Audit)
	}
	if p, ok := top["serve"]; ok {
		r.serve(p, &cfg.Serve)
	}
	if p, ok := top["store"]; ok {
		r.store(p, &cfg.Store)
	}
	if p, ok := top["agent"]; ok {
		r.agent(p, &cfg.Agent)
	}
	return f
}

// serverEntry is a servers: entry as read.
type serverEntry struct {
	*entry
	s Server
	// workspace holds the values that use ${workspace}, which only a
	// task server may.
	workspace []spot
}

// servers reads the servers: list. The servers read without a problem are
// configured; every entry waits for checkServer.
func (r *yamlReader) servers(p pair, cfg *Config) []*serverEntry {
	items, ok := r.list(p.val, "servers", "")
	if !ok {
		return nil
	}
	var out []*serverEntry
	for e := range r.mappings(items, serverKeys) {
		out = append(out, r.server(e))
	}
	for _, se := range out {
		if !se.ok {
			continue
		}
		cfg.Servers = append(cfg.Servers, se.s)
		if len(se.s.AllowedTools) == 0 {
			cfg.notices = append(cfg.notices, noToolsNotice(se.s.ID, fmt.Sprintf("allowed_tools is empty (%s)", se.s.Source)))
		}
	}
	cfg.notices = append(cfg.notices, r.notices...)
	r.notices = nil
	return out
}

// server reads one entry of servers:. It reports every problem it finds
// rather than stopping at the first.
func (r *yamlReader) server(e *entry) *serverEntry {
	se := &serverEntry{entry: e, s: newServer(r.dir, source(r.file, e.line))}
	r.serverKind(se)
	r.serverProcess(se)
	r.serverTools(se)
	r.serverTimeouts(se)
	if p, ok := se.entry.keys["tasks"]; ok {
		se.s.Tasks = r.tasks(p.val, se.entry.path+".tasks")
	}
	if se.s.Remote() {
		r.remote(se)
	}
	return se
}

// serverKind reads what a server is: its id, its transport and its scope.
// The transport decides which other keys the entry may have: those of the
// other transport are refused, and left out so that nothing reads them.
func (r *yamlReader) serverKind(se *serverEntry) {
	e, s := se.entry, &se.s
	r.require(e, "id", "is required: name the server with 1 to 32 letters, digits, _ or -")
	s.ID, _ = r.keyText(e, "id", checkID)
	if t, ok := r.keyText(e, "transport", oneOf("stdio", "http")); ok {
		if t == "http" {
			s.makeRemote()
		}
		s.Transport = t
	}
	refuse := func(keys []string, msg string) {
		for _, key := range keys {
			if p, ok := e.keys[key]; ok {
				r.errorf(p.line, e.path+"."+key, "%s", msg)
				delete(e.keys, key)
			}
		}
	}
	switch s.Transport {
	case "http":
		refuse(stdioOnlyKeys, "is only for transport: stdio (a transport: http server is reached at its url): remove it")
	case "stdio":
		refuse(httpOnlyKeys, "is only for transport: http: set transport: http, or remove it")
	}
	if sc, ok := r.keyText(e, "scope", oneOf("host", "task")); ok {
		s.Scope = sc
	}
}

// serverProcess reads how a stdio server's process starts: command, args,
// cwd, env and secret_env.
func (r *yamlReader) serverProcess(se *serverEntry) {
	e, s := se.entry, &se.s
	if p, ok := e.keys["command"]; ok {
		if c, ok := r.text(p.val, e.path+".command"); ok {
			switch {
			case strings.TrimSpace(c) == "":
				r.errorf(p.line, e.path+".command", "must not be empty: give the program to run")
			case checkString(c) != "":
				r.errorf(p.line, e.path+".command", "%s", checkString(c))
			default:
				r.workspace(se, c, p.line, e.path+".command")
			}
			s.Command = c
		}
	} else if !s.Remote() {
		r.errorf(e.line, e.path+".command", "is required: give the program that starts the server")
	}
	if p, ok := e.keys["args"]; ok {
		if items, ok := r.list(p.val, e.path+".args", ""); ok {
			s.Args = make([]string, 0, len(items))
			for it, a := range r.texts(items) {
				if msg := checkString(a); msg != "" {
					r.errorf(it.line, it.path, "%s", msg)
				}
				r.workspace(se, a, it.line, it.path)
				s.Args = append(s.Args, a)
			}
		}
	}
	if s.Scope == "task" {
		// A task server runs in its task's worktree, which exists only once
		// the task is opened.
		s.Cwd = ""
	}
	if p, ok := e.keys["cwd"]; ok && s.Scope == "task" {
		r.errorf(p.line, e.path+".cwd", "a scope: task server runs in its task's worktree; remove cwd (use ${workspace} in args for paths inside it)")
	} else if ok {
		if c, ok := r.text(p.val, e.path+".cwd"); ok {
			r.workspace(se, c, p.line, e.path+".cwd")
			if abs, msg := resolveCwd(r.dir, c, c); msg != "" {
				r.errorf(p.line, e.path+".cwd", "%s", msg)
			} else {
				s.Cwd = abs
			}
		}
	}
	if p, ok := e.keys["env"]; ok {
		s.Env = r.envMap(p.val, e.path+".env", func(v string, line int, path string) { r.workspace(se, v, line, path) })
	}
	if p, ok := e.keys["secret_env"]; ok {
		s.SecretEnv = r.secretEnv(p.val, e.path+".secret_env", s.Env)
	}
}

// workspace notes a value that uses ${workspace}, for checkServer.
func (r *yamlReader) workspace(se *serverEntry, v string, line int, path string) {
	if strings.Contains(v, workspaceVar) {
		se.workspace = append(se.workspace, spot{line: line, path: path, at: r.probs.mark()})
	}
}

// serverTools reads allowed_tools, allowed_resources, allowed_prompts,
// tool_prefix, protocol_versions, sampling and instructions.
func (r *yamlReader) serverTools(se *serverEntry) {
	e, s := se.entry, &se.s
	if p, ok := r.require(e, "allowed_tools", `is required: list the tools to expose, or ["*"] for every tool`); ok {
		s.AllowedTools = r.toolList(p.val, e.path+".allowed_tools")
	}
	if p, ok := e.keys["allowed_resources"]; ok {
		s.AllowedResources = r.allowList(p.val, e.path+".allowed_resources", checkResourceGlob, "resource")
	}
	if p, ok := e.keys["allowed_prompts"]; ok {
		s.AllowedPrompts = r.allowList(p.val, e.path+".allowed_prompts", checkPrompt, "prompt")
	}
	if v, ok := r.keyText(e, "tool_prefix", checkToolPrefix); ok {
		s.ToolPrefix = &v
	}
	if p, ok := e.keys["protocol_versions"]; ok {
		s.ProtocolVersions = r.protocolVersions(p.val, e.path+".protocol_versions")
	}
	if v, ok := r.keyText(e, "sampling", oneOf(SamplingDeny, SamplingAsk, SamplingAllow)); ok {
		s.Sampling = v
	}
	if v, ok := r.keyText(e, "instructions", oneOf(InstructionsOmit, InstructionsInclude)); ok {
		s.Instructions = v
	}
}

// serverTimeouts reads the bounds of a server's requests and calls.
func (r *yamlReader) serverTimeouts(se *serverEntry) {
	e, s := se.entry, &se.s
	// A refused request_timeout or connect_timeout leaves 0, which bounds
	// nothing, so that no other timeout is checked against it.
	if p, ok := e.keys["request_timeout"]; ok {
		s.RequestTimeout, _ = r.timeout(p.val, e.path+".request_timeout")
	}
	if p, ok := e.keys["connect_timeout"]; ok {
		s.ConnectTimeout, _ = r.timeout(p.val, e.path+".connect_timeout")
	}
	r.optionalTimeout(e, "max_call_duration", &s.MaxCallDuration)
	if p, ok := e.keys["health_check"]; ok {
		if r.healthCheck(p.val, e.path+".health_check", &s.HealthCheck) {
			r.note(e, "health_check")
		}
	}
	probeBound := s.ConnectTimeout
	if s.Remote() {
		probeBound = s.RequestTimeout
	}
	if !r.optionalTimeout(e, "probe_timeout", &s.ProbeTimeout) && probeBound > 0 {
		// A short bound shortens the default probe with it.
		s.ProbeTimeout = min(s.ProbeTimeout, probeBound)
	}
	r.optionalTimeout(e, "queue_timeout", &s.QueueTimeout)
	if p, ok := e.keys["max_concurrency"]; ok {
		if n, ok := r.integer(p.val, e.path+".max_concurrency", 1, 10000, "calls"); ok {
			s.MaxConcurrency = n
		}
	}
}

// tasks reads a server's tasks: mapping.
func (r *yamlReader) tasks(n *yaml.Node, at string) *Tasks {
	f, ok := r.fields(n, at, taskKeys)
	if !ok {
		return nil
	}
	t := &Tasks{TTL: DefaultTaskTTL, PollInterval: DefaultTaskPollInterval, MaxResultBytes: DefaultTaskResultBytes}
	globs := func(key string) []string {
		p, ok := f[key]
		if !ok {
			return nil
		}
		items, ok := r.list(p.val, joinPath(at, key), "")
		if !ok {
			return nil
		}
		out, _ := r.distinct(items, checked(checkTaskTool))
		return out
	}
	t.Tools, t.Required = globs("tools"), globs("required")
	if len(t.Tools) == 0 && len(t.Required) == 0 {
		r.errorf(resolve(n).Line, at, `names no tool: list the tools to run as tasks under tools (patterns such as "build_*" match the server's own tool names)`)
	}
	r.timeoutKey(f, at, "ttl", &t.TTL)
	r.timeoutKey(f, at, "poll_interval", &t.PollInterval)
	if p, ok := f["max_result_bytes"]; ok {
		if v, ok := r.integer(p.val, joinPath(at, "max_result_bytes"), 1024, 1<<30, "bytes"); ok {
			t.MaxResultBytes = v
		}
	}
	if p, ok := f["poll_interval"]; ok && t.PollInterval > t.TTL {
		r.errorf(p.line, joinPath(at, "poll_interval"), "%s is longer than the ttl (%s): a task would be gone before its client polls it", fmtDuration(t.PollInterval), fmtDuration(t.TTL))
	}
	return t
}

// optionalTimeout reads the timeout at key of e, if it is there, into dst,
// and notes it for the checks. It reports whether the key is there.
func (r *yamlReader) optionalTimeout(e *entry, key string, dst *time.Duration) bool {
	there, read := r.timeoutKey(e.keys, e.path, key, dst)
	if read {
		r.note(e, key)
	}
	return there
}

// timeoutKey reads the timeout at key of the mapping f at path, if it is
// there, into dst. It reports whether the key is there, and whether its
// value was read.
func (r *yamlReader) timeoutKey(f map[string]pair, path, key string, dst *time.Duration) (there, read bool) {
	p, ok := f[key]
	if !ok {
		return false, false
	}
	d, ok := r.timeout(p.val, joinPath(path, key))
	if ok {
		*dst = d
	}
	return true, ok
}

// envValues reads a mapping of environment variables (NAME: value). value
// reads the value at each valid name, and says whether it is kept.
func (r *yamlReader) envValues(n *yaml.Node, path string, value func(p pair, path string) (string, bool)) map[string]string {
	ps, ok := r.pairs(n, path)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(ps))
	for _, p := range ps {
		kp := joinPath(path, p.key)
		if msg := checkEnvName(p.key); msg != "" {
			r.errorf(p.line, kp, "%s", msg)
			continue
		}
		if v, ok := value(p, kp); ok {
			out[p.key] = v
		}
	}
	return out
}

// envMap reads an env: mapping of NAME: value.
func (r *yamlReader) envMap(n *yaml.Node, path string, check func(v string, line int, path string)) map[string]string {
	return r.envValues(n, path, func(p pair, path string) (string, bool) {
		v, ok := r.checkedText(p, path, checkString)
		if ok {
			check(v, p.line, path)
		}
		return v, ok
	})
}

// checkedText reads the string value of p at path, and refuses it, at
// its key's line, with what check says is wrong with it.
func (r *yamlReader) checkedText(p pair, path string, check func(string) string) (string, bool) {
	v, ok := r.text(p.val, path)
	if !ok {
		return "", false
	}
	if msg := check(v); msg != "" {
		r.errorf(p.line, path, "%s", msg)
		return "", false
	}
	return v, true
}

// MinRedactedSecret is the shortest secret value redaction replaces
// (internal/redact.MinSecretLen): shorter ones would match ordinary text.
const MinRedactedSecret = 8

// secretEnv reads a secret_env: mapping of NAME: HOST_VAR. Each host
// variable must be set and non-empty now, so that a missing secret stops
// the configuration from loading instead of starting a server without it.
// Messages name variables, never their values.
func (r *yamlReader) secretEnv(n *yaml.Node, path string, env map[string]string) map[string]string {
	return r.envValues(n, path, func(p pair, path string) (string, bool) {
		if _, dup := env[p.key]; dup {
			r.errorf(p.line, path, "%s is also set under env: give it in one place (secret_env for a secret)", p.key)
			return "", false
		}
		host, ok := r.checkedText(p, path, checkSecretEnvName)
		if !ok {
			return "", false
		}
		switch v, set := r.lookupEnv(host); {
		case !set:
			r.errorf(p.line, path, "the host variable %s is not set: set it in the environment airlock starts in", host)
			return "", false
		case v == "":
			r.errorf(p.line, path, "the host variable %s is empty: set it to the secret", host)
			return "", false
		case len(v) < MinRedactedSecret:
			// Redaction ignores values this short (they would match
			// ordinary text): say so rather than let the operator believe
			// the value is kept out of what Airlock shows and stores.
			r.notices = append(r.notices, fmt.Sprintf("%s:%d: %s: the value of %s is shorter than %d characters, too short to be redacted: it shows wherever a server repeats it (in results, the audit trail and traces)",
				r.file, p.line, path, host, MinRedactedSecret))
		}
		return host, true
	})
}

// toolList reads an allowed_tools list. An empty list is allowed and means
// no tools.
func (r *yamlReader) toolList(n *yaml.Node, path string) []string {
	items, ok := r.list(n, path, "")
	if !ok {
		return nil
	}
	out, _ := r.distinct(items, checked(checkTool))
	r.starAlone(n, path, out, "allows", "tool")
	return out
}

// allowList reads an allowed_resources or allowed_prompts list, each entry
// checked by check; what is "resource" or "prompt". An empty list is
// allowed and means none.
func (r *yamlReader) allowList(n *yaml.Node, path string, check func(string) string, what string) []string {
	items, ok := r.list(n, path, "")
	if !ok {
		return nil
	}
	out, _ := r.distinct(items, checked(check))
	if len(out) == 0 {
		return nil
	}
	r.starAlone(n, path, out, "allows", what)
	return out
}

func (r *yamlReader) protocolVersions(n *yaml.Node, path string) []string {
	items, ok := r.list(n, path, fmt.Sprintf("must list at least one version, such as [%q]; leave the key out for the default", SupportedProtocolVersions[0]))
	if !ok {
		return nil
	}
	out, _ := r.distinct(items, checked(checkProtocolVersion))
	return out
}

func (r *yamlReader) limits(n *yaml.Node, l *Limits) {
	f, ok := r.fields(n, "limits", limitKeys)
	if !ok {
		return
	}
	set := func(key string, dst *int, lo, hi int64, unit string) {
		if p, ok := f[key]; ok {
			if v, ok := r.integer(p.val, "limits."+key, lo, hi, unit); ok {
				*dst = v
			}
		}
	}
	set("max_pages", &l.MaxPages, 1, 10000, "pages")
	set("max_tools", &l.MaxTools, 1, 100000, "tools")
	set("max_description", &l.MaxDescription, 1, 100000, "characters")
	set("max_message_bytes", &l.MaxMessageBytes, 1024, 1<<30, "bytes")
	set("max_calls_per_turn", &l.MaxCallsPerTurn, 1, 100000, "calls")
	set("max_concurrent_per_tenant", &l.MaxConcurrentPerTenant, 1, 100000, "calls")
	set("max_input_rounds", &l.MaxInputRounds, 1, 64, "rounds")
	set("max_resource_bytes", &l.MaxResourceBytes, 1024, 1<<30, "bytes")
}

// healthCheck reads health_check: {interval, timeout}. It reports whether
// the mapping could be read.
func (r *yamlReader) healthCheck(n *yaml.Node, path string, h *HealthCheck) bool {
	f, ok := r.fields(n, path, healthKeys)
	if !ok {
		return false
	}
	h.Interval, h.Timeout = 30*time.Second, 5*time.Second
	r.timeoutKey(f, path, "interval", &h.Interval)
	r.timeoutKey(f, path, "timeout", &h.Timeout)
	return true
}
