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
			"tenancy", "egress"},
		elsewhere: map[string]string{
			"tools": "under policy:", "rules": "under policy:", "cedar": "under policy:", "hooks": "under policy:",
			"ttl": "under approvals:", "record_values": "under audit:",
			"id": "in a server entry under servers:", "command": "in a server entry under servers:",
			"args": "in a server entry under servers:", "allowed_tools": "in a server entry under servers:",
			"url": "in a server entry under servers:", "allowed_hosts": "in a server entry under servers:",
			"oauth": "in a server entry under servers:", "scopes": "in a server entry under servers:",
			"max_pages": "under limits:", "max_tools": "under limits:",
			"max_description": "under limits:", "max_message_bytes": "under limits:",
			"max_calls_per_turn": "under limits:", "max_concurrent_per_tenant": "under limits:",
			"tenant": "under tenancy:", "user": "under tenancy:", "proxy": "under egress:",
			"mcpServers": "in a JSON file: import it with import: [FILE.json]",
		},
	}
	serverKeys = keySet{
		known: []string{"id", "transport", "scope", "command", "args", "cwd", "env", "allowed_tools",
			"protocol_versions", "request_timeout", "connect_timeout", "probe_timeout", "secret_env", "health_check",
			"max_call_duration", "queue_timeout", "max_concurrency",
			"url", "resource", "allowed_hosts", "allow_private_networks", "scopes", "oauth",
			"stream_read_timeout", "terminate_on_close", "ca_file"},
		elsewhere: map[string]string{
			"servers": "at the top level", "limits": "at the top level",
			"development": "at the top level", "import": "at the top level",
			"tenancy": "at the top level", "egress": "at the top level", "proxy": "under egress: at the top level",
			"max_pages": "under limits: at the top level", "max_tools": "under limits: at the top level",
			"max_description": "under limits: at the top level", "max_message_bytes": "under limits: at the top level",
			"max_calls_per_turn": "under limits: at the top level", "max_concurrent_per_tenant": "under limits: at the top level",
			"client_id": "under oauth:", "client_metadata_url": "under oauth:",
			"dynamic_registration": "under oauth:", "redirect_uri": "under oauth:",
		},
	}
	healthKeys = keySet{known: []string{"interval", "timeout"}}
	limitKeys  = keySet{
		known: []string{"max_pages", "max_tools", "max_description", "max_message_bytes",
			"max_calls_per_turn", "max_concurrent_per_tenant"},
	}
)

// Parse reads an airlock.yaml document. name is used in messages (for
// example "airlock.yaml" or "(built-in default)"); dir is the directory that
// relative paths resolve against. The returned Config has Path "".
func Parse(data []byte, name, dir string) (*Config, error) {
	return parseYAML(data, name, dir, os.LookupEnv)
}

func parseYAML(data []byte, name, dir string, env func(string) (string, bool)) (*Config, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolve configuration directory: %w", err)
	}
	if len(data) > maxFileBytes {
		return nil, &Error{File: name, Msg: "is larger than 4 MiB; a configuration file is a few kilobytes"}
	}
	root, perr := decodeYAML(data, name)
	if perr != nil {
		return nil, perr
	}
	r := &yamlReader{file: name, dir: absDir, lookupEnv: env}
	cfg := newConfig(absDir)
	var ids registry

	top, _ := r.fields(root, "", topKeys)
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
		cfg.Servers = r.servers(p, &ids, cfg)
	}
	if p, ok := top["limits"]; ok {
		r.limits(p.val, &cfg.Limits)
	}
	importFailed := false
	if p, ok := top["import"]; ok {
		before := len(r.probs.list)
		cfg.Servers = append(cfg.Servers, r.imports(p, &ids, cfg)...)
		importFailed = len(r.probs.list) > before
	}
	// Policy entries name servers, so they are read once every server is
	// known.
	if p, ok := top["policy"]; ok {
		r.policy(p.val, &cfg.Policy, &ids)
	}
	if p, ok := top["approvals"]; ok {
		r.approvals(p, &cfg.Approvals)
	}
	if p, ok := top["audit"]; ok {
		r.audit(p, &cfg.Audit)
	}
	r.checkURLs(cfg.Development)
	if len(cfg.Servers) == 0 && !importFailed {
		switch p, ok := top["servers"]; {
		case !ok && top["import"].val == nil:
			r.errorf(root.Line, "servers", "is required: list at least one server (see the documentation for an example)")
		case ok:
			if n := resolve(p.val); n.Kind == yaml.SequenceNode && len(n.Content) == 0 {
				r.errorf(p.line, "servers", "is empty: list at least one server, or import an mcpServers file")
			}
		default:
			r.errorf(top["import"].line, "import", "imports no servers: list at least one server under servers:")
		}
	}
	if err := r.probs.join(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func (r *yamlReader) servers(p pair, ids *registry, cfg *Config) []Server {
	items, ok := r.list(p.val, "servers")
	if !ok {
		return nil
	}
	var out []Server
	for i, item := range items {
		if s, ok := r.server(item, fmt.Sprintf("servers[%d]", i), ids, cfg); ok {
			out = append(out, s)
		}
	}
	return out
}

// server reads one entry of servers:. It reports every problem it finds
// rather than stopping at the first.
func (r *yamlReader) server(n *yaml.Node, path string, ids *registry, cfg *Config) (Server, bool) {
	line := resolve(n).Line
	f, ok := r.fields(n, path, serverKeys)
	if !ok {
		return Server{}, false
	}
	s := newServer(r.dir, source(r.file, line))
	before := len(r.probs.list)

	if p, ok := f["id"]; ok {
		if id, ok := r.text(p.val, path+".id"); ok {
			if msg := checkID(id); msg != "" {
				r.errorf(p.line, path+".id", "%s", msg)
			} else if msg := ids.add(id, fmt.Sprintf("%s (line %d)", path, p.line)); msg != "" {
				r.errorf(p.line, path+".id", "%s", msg)
			}
			s.ID = id
		}
	} else {
		r.errorf(line, path+".id", "is required: name the server with 1 to 32 letters, digits, _ or -")
	}

	if p, ok := f["transport"]; ok {
		if t, ok := r.text(p.val, path+".transport"); ok {
			switch t {
			case "stdio":
			case "http":
				s.makeRemote()
			default:
				r.errorf(p.line, path+".transport", "must be stdio or http, not %s", show(t))
			}
			s.Transport = t
		}
	}
	remote := s.Remote()
	// The keys of the other transport are refused, and then left out, so
	// that nothing below reads them.
	refuse := func(keys []string, msg string) {
		for _, key := range keys {
			if p, ok := f[key]; ok {
				r.errorf(p.line, path+"."+key, "%s", msg)
				delete(f, key)
			}
		}
	}
	switch s.Transport {
	case "http":
		refuse(stdioOnlyKeys, "is only for transport: stdio (a transport: http server is reached at its url): remove it")
	case "stdio":
		refuse(httpOnlyKeys, "is only for transport: http: set transport: http, or remove it")
	}
	if p, ok := f["scope"]; ok {
		if sc, ok := r.text(p.val, path+".scope"); ok {
			switch sc {
			case "host":
			case "task":
				if remote {
					r.errorf(p.line, path+".scope", "a transport: http server is shared by every task: remove scope: task")
				}
			default:
				r.errorf(p.line, path+".scope", "must be host or task, not %s", show(sc))
			}
			s.Scope = sc
		}
	}
	// ${workspace} only means something for task servers; anywhere else it
	// would reach the process literally.
	hostOnly := s.Scope == "host"
	noWorkspace := func(v string, line int, path string) {
		if hostOnly && strings.Contains(v, workspaceVar) {
			r.errorf(line, path, "${workspace} is only available to scope: task servers")
		}
	}

	if p, ok := f["command"]; ok {
		if c, ok := r.text(p.val, path+".command"); ok {
			switch {
			case strings.TrimSpace(c) == "":
				r.errorf(p.line, path+".command", "must not be empty: give the program to run")
			case checkString(c) != "":
				r.errorf(p.line, path+".command", "%s", checkString(c))
			default:
				noWorkspace(c, p.line, path+".command")
			}
			s.Command = c
		}
	} else if !remote {
		r.errorf(line, path+".command", "is required: give the program that starts the server")
	}

	if p, ok := f["args"]; ok {
		if items, ok := r.list(p.val, path+".args"); ok {
			s.Args = make([]string, 0, len(items))
			for i, item := range items {
				ip := fmt.Sprintf("%s.args[%d]", path, i)
				a, ok := r.text(item, ip)
				if !ok {
					continue
				}
				if msg := checkString(a); msg != "" {
					r.errorf(resolve(item).Line, ip, "%s", msg)
				}
				noWorkspace(a, resolve(item).Line, ip)
				s.Args = append(s.Args, a)
			}
		}
	}

	if s.Scope == "task" {
		// A task server runs in its task's worktree, which exists only once
		// the task is opened.
		s.Cwd = ""
	}
	if p, ok := f["cwd"]; ok && s.Scope == "task" {
		r.errorf(p.line, path+".cwd", "a scope: task server runs in its task's worktree; remove cwd (use ${workspace} in args for paths inside it)")
	} else if ok {
		if c, ok := r.text(p.val, path+".cwd"); ok {
			noWorkspace(c, p.line, path+".cwd")
			if abs, msg := resolveCwd(r.dir, c, c); msg != "" {
				r.errorf(p.line, path+".cwd", "%s", msg)
			} else {
				s.Cwd = abs
			}
		}
	}

	if p, ok := f["env"]; ok {
		s.Env = r.envMap(p.val, path+".env", noWorkspace)
	}

	if p, ok := f["secret_env"]; ok {
		s.SecretEnv = r.secretEnv(p.val, path+".secret_env", s.Env)
	}

	if p, ok := f["allowed_tools"]; ok {
		s.AllowedTools = r.toolList(p.val, path+".allowed_tools")
	} else {
		r.errorf(line, path+".allowed_tools", `is required: list the tools to expose, or ["*"] for every tool`)
	}

	if p, ok := f["protocol_versions"]; ok {
		s.ProtocolVersions = r.protocolVersions(p.val, path+".protocol_versions")
	}

	if p, ok := f["request_timeout"]; ok {
		s.RequestTimeout, _ = r.timeout(p.val, path+".request_timeout")
	}
	if p, ok := f["connect_timeout"]; ok {
		s.ConnectTimeout, _ = r.timeout(p.val, path+".connect_timeout")
	}
	if p, ok := f["max_call_duration"]; ok {
		if d, ok := r.timeout(p.val, path+".max_call_duration"); ok {
			s.MaxCallDuration = d
			if d < s.RequestTimeout {
				r.errorf(p.line, path+".max_call_duration", "%s is shorter than request_timeout (%s): it is how far progress may stretch a call past that", fmtDuration(d), fmtDuration(s.RequestTimeout))
			}
		}
	}
	if p, ok := f["health_check"]; ok {
		r.healthCheck(p, path+".health_check", &s.HealthCheck)
	}
	// The probe is part of connecting to a stdio server; for a remote
	// server it is one request of the handshake.
	probeKey, probeBound := "connect_timeout", s.ConnectTimeout
	if remote {
		probeKey, probeBound = "request_timeout", s.RequestTimeout
	}
	if p, ok := f["probe_timeout"]; ok {
		if d, ok := r.timeout(p.val, path+".probe_timeout"); ok {
			s.ProbeTimeout = d
			if probeBound > 0 && d > probeBound {
				r.errorf(p.line, path+".probe_timeout", "%s is longer than %s (%s): the probe is part of connecting", fmtDuration(d), probeKey, fmtDuration(probeBound))
			}
		}
	} else if probeBound > 0 {
		// A short bound shortens the default probe with it.
		s.ProbeTimeout = min(s.ProbeTimeout, probeBound)
	}
	if p, ok := f["queue_timeout"]; ok {
		if d, ok := r.timeout(p.val, path+".queue_timeout"); ok {
			s.QueueTimeout = d
		}
	}
	if p, ok := f["max_concurrency"]; ok {
		if n, ok := r.integer(p.val, path+".max_concurrency", 1, 10000, "calls"); ok {
			s.MaxConcurrency = n
		}
	}
	if remote {
		r.remote(f, path, line, &s)
	}

	if len(r.probs.list) > before {
		return Server{}, false
	}
	if len(s.AllowedTools) == 0 {
		cfg.notices = append(cfg.notices, noToolsNotice(s.ID, fmt.Sprintf("allowed_tools is empty (%s)", s.Source)))
	}
	return s, true
}

// envMap reads an env: mapping of NAME: value.
func (r *yamlReader) envMap(n *yaml.Node, path string, check func(v string, line int, path string)) map[string]string {
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
		v, ok := r.text(p.val, kp)
		if !ok {
			continue
		}
		if msg := checkString(v); msg != "" {
			r.errorf(p.line, kp, "%s", msg)
			continue
		}
		check(v, p.line, kp)
		out[p.key] = v
	}
	return out
}

// secretEnv reads a secret_env: mapping of NAME: HOST_VAR. Each host
// variable must be set and non-empty now, so that a missing secret stops
// the configuration from loading instead of starting a server without it.
// Messages name variables, never their values.
func (r *yamlReader) secretEnv(n *yaml.Node, path string, env map[string]string) map[string]string {
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
		if _, dup := env[p.key]; dup {
			r.errorf(p.line, kp, "%s is also set under env: give it in one place (secret_env for a secret)", p.key)
			continue
		}
		host, ok := r.text(p.val, kp)
		if !ok {
			continue
		}
		if msg := checkEnvName(host); msg != "" {
			r.errorf(p.line, kp, "%s", msg)
			continue
		}
		switch v, set := r.lookupEnv(host); {
		case !set:
			r.errorf(p.line, kp, "the host variable %s is not set: set it in the environment airlock starts in", host)
			continue
		case v == "":
			r.errorf(p.line, kp, "the host variable %s is empty: set it to the secret", host)
			continue
		}
		out[p.key] = host
	}
	return out
}

// toolList reads an allowed_tools list. An empty list is allowed and means
// no tools.
func (r *yamlReader) toolList(n *yaml.Node, path string) []string {
	items, ok := r.list(n, path)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(items))
	seen := make(map[string]int)
	star := false
	for i, item := range items {
		ip := fmt.Sprintf("%s[%d]", path, i)
		t, ok := r.text(item, ip)
		if !ok {
			continue
		}
		line := resolve(item).Line
		if msg := checkTool(t); msg != "" {
			r.errorf(line, ip, "%s", msg)
			continue
		}
		if first, dup := seen[t]; dup {
			r.errorf(line, ip, "%s is listed twice (first at line %d)", show(t), first)
			continue
		}
		seen[t] = line
		star = star || t == "*"
		out = append(out, t)
	}
	if star && len(out) > 1 {
		r.errorf(resolve(n).Line, path, `"*" allows every tool and must be alone: write ["*"] or list the tools`)
	}
	return out
}

func (r *yamlReader) protocolVersions(n *yaml.Node, path string) []string {
	items, ok := r.list(n, path)
	if !ok {
		return nil
	}
	if len(items) == 0 {
		r.errorf(resolve(n).Line, path, "must list at least one version, such as [%q]; leave the key out for the default", SupportedProtocolVersions[0])
		return nil
	}
	out := make([]string, 0, len(items))
	seen := make(map[string]int)
	for i, item := range items {
		ip := fmt.Sprintf("%s[%d]", path, i)
		v, ok := r.text(item, ip)
		if !ok {
			continue
		}
		line := resolve(item).Line
		if msg := checkProtocolVersion(v); msg != "" {
			r.errorf(line, ip, "%s", msg)
			continue
		}
		if first, dup := seen[v]; dup {
			r.errorf(line, ip, "%s is listed twice (first at line %d)", show(v), first)
			continue
		}
		seen[v] = line
		out = append(out, v)
	}
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
}

// healthCheck reads health_check: {interval, timeout}.
func (r *yamlReader) healthCheck(p pair, path string, h *HealthCheck) {
	f, ok := r.fields(p.val, path, healthKeys)
	if !ok {
		return
	}
	h.Interval, h.Timeout = 30*time.Second, 5*time.Second
	if p, ok := f["interval"]; ok {
		if d, ok := r.timeout(p.val, path+".interval"); ok {
			h.Interval = d
		}
	}
	if p, ok := f["timeout"]; ok {
		if d, ok := r.timeout(p.val, path+".timeout"); ok {
			h.Timeout = d
		}
	}
	if h.Timeout > h.Interval {
		r.errorf(p.line, path+".timeout", "%s is longer than the interval (%s): checks would overlap", fmtDuration(h.Timeout), fmtDuration(h.Interval))
	}
}
