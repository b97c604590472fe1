package config

import (
	"fmt"
	"net/url"
	"os"
	"os/user"
	"slices"
	"strings"
)

// The mcpServers format, shared by Claude Desktop, Claude Code and Cursor:
//
//	{"mcpServers": {"NAME": {"command": "...", "args": [...], "env": {...}},
//	                "REMOTE": {"type": "http", "url": "https://..."}}}
//
// Such a file lists servers but says nothing about which of their tools may
// be used, so its servers expose no tools until an allow list names them.
// Nor does it list the hosts a remote server may reach, so a remote
// server's own URL is its allowlist.

var (
	mcpTopKeys = keySet{
		known: []string{"mcpServers"},
	}
	mcpServerKeys = keySet{
		known: []string{"command", "args", "env", "cwd", "type", "disabled", "url", "headers"},
	}
)

// httpTypes are the "type" values other hosts use for Streamable HTTP
// servers.
var httpTypes = []string{"http", "streamable-http", "streamableHttp", "streamable_http"}

const (
	sseRefused     = "the legacy HTTP+SSE transport is not supported: use the server's Streamable HTTP endpoint"
	headersRefused = "static headers (often credentials) are not accepted: configure the server in an airlock.yaml, with oauth: for its credentials"
	// devImportHint tells how a plain-http development server of an
	// mcpServers file given on its own can be used.
	devImportHint = "; an mcpServers file is in development mode only when an airlock.yaml with development: true imports it " +
		"(development: true, import: [FILE])"
)

// ParseMCPServers reads an mcpServers JSON file. name is used in messages;
// dir is the directory relative paths resolve against. ${VAR} and
// ${VAR:-default} in command, args, env values, cwd and url are expanded
// from the process environment. allow holds "SERVER:TOOL" entries (several
// may be given in one entry, separated by commas; "SERVER:*" allows every
// tool); a server that no entry names is kept but exposes no tools, and
// [Config.Notices] says so. An entry with a url is a remote server whose
// allowed hosts are its URL's host; such a file is never in development
// mode.
func ParseMCPServers(data []byte, name, dir string, allow []string) (*Config, error) {
	return parseMCPServers(data, name, dir, allow, os.LookupEnv)
}

func parseMCPServers(data []byte, name, dir string, allow []string, env func(string) (string, bool)) (*Config, error) {
	absDir, err := checkInput(data, name, dir)
	if err != nil {
		return nil, err
	}
	f, probs := readMCPServers(data, name, absDir, env)
	for _, c := range f.urls {
		// Such a file has no development flag.
		if e := c.check(false); e != nil {
			if c.check(true) == nil {
				e.Msg += devImportHint
			}
			probs.add(c.order, e)
		}
	}
	cfg := newConfig(absDir)
	u, msg := defaultUser(env, user.Current)
	if msg != "" {
		probs.add(0, &Error{File: name, Msg: msg})
	}
	cfg.Tenancy.User = u
	if err := probs.join(); err != nil {
		return nil, err
	}
	if len(f.servers) == 0 {
		msg := "has no servers: add one under mcpServers"
		if len(f.disabled) > 0 {
			msg = `has no enabled servers: every server is "disabled": true`
		}
		return nil, &Error{File: name, Line: f.line, Path: "mcpServers", Msg: msg}
	}
	tools, err := parseAllow(allow, f)
	if err != nil {
		return nil, err
	}
	for _, s := range f.servers {
		s.AllowedTools = tools[s.ID]
		if len(s.AllowedTools) == 0 {
			cfg.notices = append(cfg.notices, noToolsNotice(s.ID,
				fmt.Sprintf("pass --allow %s:TOOL,... or import it from an airlock.yaml with allowed_tools", s.ID)))
		}
		cfg.Servers = append(cfg.Servers, s)
	}
	return cfg, nil
}

// mcpFile is an mcpServers file after validation, before any allow list.
type mcpFile struct {
	name     string
	line     int             // line of the mcpServers key
	servers  []Server        // enabled servers in file order, AllowedTools unset
	disabled map[string]bool // servers marked "disabled": true
	urls     []urlCheck      // checks of remote servers' URLs, which the caller runs
}

func (f *mcpFile) has(id string) bool {
	return slices.ContainsFunc(f.servers, func(s Server) bool { return s.ID == id })
}

// names lists the servers for "no server X" messages.
func (f *mcpFile) names() string {
	ids := make([]string, len(f.servers))
	for i, s := range f.servers {
		ids[i] = s.ID
	}
	return strings.Join(ids, ", ")
}

type mcpReader struct {
	file  string
	dir   string
	data  []byte
	env   func(string) (string, bool)
	probs problems
	urls  []urlCheck
	// named holds the servers with valid names, for checkNames.
	named []namedServer
}

// namedServer is where a server of the file was named.
type namedServer struct {
	id, path string
	off      int
	at       int // the mark
	source   string
}

func (m *mcpReader) errorf(off int, path, format string, args ...any) {
	line := lineAt(m.data, off)
	m.probs.add(line, &Error{File: m.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// errorAt reports a problem found once the file was read, at the mark
// where reading met what it checked.
func (m *mcpReader) errorAt(mark, off int, path, format string, args ...any) {
	line := lineAt(m.data, off)
	m.probs.addAt(mark, line, &Error{File: m.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// checkNames checks the names of the servers against each other, once the
// file is read: they must differ in more than letter case.
func (m *mcpReader) checkNames() {
	var ids registry
	for _, n := range m.named {
		if msg := ids.add(n.id, n.source); msg != "" {
			m.errorAt(n.at, n.off, n.path, "%s", msg)
		}
	}
}

// readMCPServers validates an mcpServers file. Problems come back in line
// order.
func readMCPServers(data []byte, name, dir string, env func(string) (string, bool)) (*mcpFile, *problems) {
	m := &mcpReader{file: name, dir: dir, data: data, env: env}
	f := &mcpFile{name: name, disabled: make(map[string]bool)}
	root, perr := decodeJSON(data, name)
	if perr != nil {
		m.probs.add(perr.Line, perr)
		return f, &m.probs
	}
	if root.kind != jsonObject {
		m.errorf(root.off, "", `must be a JSON object such as {"mcpServers": {...}}, not %s`, root.kindName())
		return f, &m.probs
	}
	top := m.fields(root, "", mcpTopKeys)
	servers, ok := top["mcpServers"]
	if !ok {
		m.errorf(root.off, "mcpServers", `is required: {"mcpServers": {"NAME": {"command": "...", "args": [...]}}}`)
		return f, &m.probs
	}
	f.line = lineAt(data, servers.off)
	if servers.val.kind != jsonObject {
		m.errorf(servers.val.off, "mcpServers", `must be an object of "NAME": {"command": ...}, not %s`, servers.val.kindName())
		return f, &m.probs
	}
	for name, mem := range m.members(servers.val, "mcpServers") {
		s, enabled, ok := m.server(name, mem)
		switch {
		case !enabled:
			f.disabled[name] = true
		case ok:
			f.servers = append(f.servers, s)
		}
	}
	m.checkNames()
	f.urls = m.urls
	return f, &m.probs
}

// members yields the members of an object, reporting duplicate keys.
func (m *mcpReader) members(v *jsonValue, path string) func(yield func(string, jsonMember) bool) {
	return func(yield func(string, jsonMember) bool) {
		seen := make(seenAt[string])
		for _, mem := range v.members {
			if first, dup := seen.again(mem.key, mem.off); dup {
				m.errorf(mem.off, joinPath(path, mem.key), "duplicate key (first at line %d)", lineAt(m.data, first))
				continue
			}
			if !yield(mem.key, mem) {
				return
			}
		}
	}
}

// fields returns the known keys of an object and reports all others.
func (m *mcpReader) fields(v *jsonValue, path string, ks keySet) map[string]jsonMember {
	out := make(map[string]jsonMember)
	for key, mem := range m.members(v, path) {
		if !slices.Contains(ks.known, key) {
			m.errorf(mem.off, joinPath(path, key), "%s", ks.unknownKey(key))
			continue
		}
		out[key] = mem
	}
	return out
}

// server reads one entry of mcpServers. enabled is false for a server
// marked "disabled": true, which is skipped without further checks.
func (m *mcpReader) server(name string, mem jsonMember) (s Server, enabled, ok bool) {
	path := joinPath("mcpServers", name)
	v := mem.val
	if v.kind != jsonObject {
		m.errorf(v.off, path, `must be an object such as {"command": "...", "args": [...]}, not %s`, v.kindName())
		return Server{}, true, false
	}
	before := len(m.probs.list)
	f := m.fields(v, path, mcpServerKeys)
	if d, ok := f["disabled"]; ok {
		if d.val.kind != jsonBool {
			m.errorf(d.val.off, path+".disabled", "must be true or false")
		} else if d.val.b {
			return Server{}, false, false
		}
	}
	s = newServer(m.dir, source(m.file, lineAt(m.data, mem.off)))
	s.ID = name
	if msg := checkID(name); msg != "" {
		m.errorf(mem.off, path, "%s; rename it, for example to %q", msg, suggestID(name))
	} else {
		m.named = append(m.named, namedServer{id: name, path: path, off: mem.off, at: m.probs.mark(), source: s.Source})
	}

	remote := false
	if t, ok := f["type"]; ok {
		switch {
		case t.val.kind != jsonString:
			m.errorf(t.val.off, path+".type", `must be "stdio" or "http", not %s`, t.val.kindName())
		case t.val.text == "stdio":
			if u, ok := f["url"]; ok {
				m.errorf(u.off, path+".url", `is only for remote servers: remove it, or "type": "stdio"`)
				delete(f, "url")
			}
		case t.val.text == "sse":
			m.errorf(t.val.off, path+".type", sseRefused)
			return Server{}, true, false
		case slices.Contains(httpTypes, t.val.text):
			remote = true
		default:
			m.errorf(t.val.off, path+".type", `must be "stdio" or "http", not %s`, show(t.val.text))
		}
	}
	_, hasURL := f["url"]
	remote = remote || hasURL
	if h, ok := f["headers"]; ok {
		m.errorf(h.off, path+".headers", headersRefused)
	}
	if remote {
		m.remoteServer(f, path, mem.off, &s)
	} else {
		m.localServer(f, path, mem.off, &s)
	}
	return s, true, len(m.probs.list) == before
}

// remoteServer reads the keys of a server with a url.
func (m *mcpReader) remoteServer(f map[string]jsonMember, path string, off int, s *Server) {
	s.makeRemote()
	for _, key := range []string{"command", "args", "env", "cwd"} {
		if k, ok := f[key]; ok {
			m.errorf(k.off, path+"."+key, "is only for local (stdio) servers: a remote server is reached at its url; remove it")
		}
	}
	if u, ok := f["url"]; ok {
		s.URL, s.AllowedHosts = m.url(u.val, path+".url")
	} else {
		m.errorf(off, path+".url", "is required for a remote server: give its Streamable HTTP endpoint, such as https://mcp.example.com/mcp")
	}
}

// localServer reads the keys of a server that runs as a local process.
func (m *mcpReader) localServer(f map[string]jsonMember, path string, off int, s *Server) {
	if c, ok := f["command"]; ok {
		if cmd, ok := m.str(c.val, path+".command"); ok {
			if strings.TrimSpace(cmd) == "" {
				m.errorf(c.val.off, path+".command", "must not be empty: give the program to run")
			}
			s.Command = cmd
		}
	} else {
		m.errorf(off, path+".command", "is required: give the program that starts the server")
	}
	if a, ok := f["args"]; ok {
		if a.val.kind != jsonArray {
			m.errorf(a.val.off, path+".args", "must be an array of strings, not %s", a.val.kindName())
		} else {
			s.Args = make([]string, 0, len(a.val.items))
			for ip, item := range indexed(path+".args", a.val.items) {
				if arg, ok := m.str(item, ip); ok {
					s.Args = append(s.Args, arg)
				}
			}
		}
	}
	if e, ok := f["env"]; ok {
		s.Env, s.SecretEnv = m.envMap(e.val, path+".env")
	}
	if c, ok := f["cwd"]; ok {
		if dir, ok := m.str(c.val, path+".cwd"); ok {
			if abs, msg := resolveCwd(m.dir, dir, c.val.text); msg != "" {
				m.errorf(c.val.off, path+".cwd", "%s", msg)
			} else {
				s.Cwd = abs
			}
		}
	}
}

// url reads a remote server's url. The file has no allowlist, so the URL's
// own host is its allowlist; the rest of the check waits in m.urls for the
// caller, which knows whether development mode is on.
func (m *mcpReader) url(v *jsonValue, path string) (string, []string) {
	raw, ok := m.str(v, path)
	if !ok {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		m.errorf(v.off, path, "must be an absolute https URL, such as https://mcp.example.com/mcp")
		return "", nil
	}
	hosts := []string{strings.ToLower(u.Hostname())}
	line := lineAt(m.data, v.off)
	c := urlCheck{order: line, at: Error{File: m.file, Line: line, Path: path}, url: raw, hosts: hosts}
	if raw != v.text {
		c.written = v.text
	}
	m.urls = append(m.urls, c)
	return raw, hosts
}

// envMap reads a server's env. A value that is one variable reference and
// nothing else ("TOKEN": "${GITHUB_TOKEN}"), of a variable that is set and
// not empty, is how these files pass credentials: it becomes secret_env
// (TOKEN: GITHUB_TOKEN), so that its value is redacted wherever Airlock
// writes, and read from the environment when the server starts.
func (m *mcpReader) envMap(v *jsonValue, path string) (env, secretEnv map[string]string) {
	if v.kind != jsonObject {
		m.errorf(v.off, path, `must be an object of "NAME": "value", not %s`, v.kindName())
		return nil, nil
	}
	env = make(map[string]string, len(v.members))
	for name, mem := range m.members(v, path) {
		kp := joinPath(path, name)
		if msg := checkEnvName(name); msg != "" {
			m.errorf(mem.off, kp, "%s", msg)
			continue
		}
		val, ok := m.str(mem.val, kp)
		if !ok {
			continue
		}
		if ref, isRef := strings.CutPrefix(mem.val.text, "${"); isRef && val != "" {
			if hostVar, isRef := strings.CutSuffix(ref, "}"); isRef && envNamePattern.MatchString(hostVar) {
				if secretEnv == nil {
					secretEnv = map[string]string{}
				}
				secretEnv[name] = hostVar
				continue
			}
		}
		env[name] = val
	}
	return env, secretEnv
}

// str returns a string value with variables expanded. Messages never
// include the expanded value, which may be a secret.
func (m *mcpReader) str(v *jsonValue, path string) (string, bool) {
	if v.kind != jsonString {
		m.errorf(v.off, path, "must be a string, not %s", v.kindName())
		return "", false
	}
	s, msg := expand(v.text, m.env)
	if msg == "" {
		msg = checkString(s)
	}
	if msg != "" {
		m.errorf(v.off, path, "%s", msg)
		return "", false
	}
	return s, true
}

// expand replaces ${VAR} and ${VAR:-default} the way Claude Code does for
// its .mcp.json files: a variable that is set wins, even when empty; the
// default is used only when it is unset. A "${" without a closing brace is
// kept as written.
func expand(s string, lookup func(string) (string, bool)) (string, string) {
	if !strings.Contains(s, "${") {
		return s, ""
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i+2:], '}')
		if j < 0 {
			break
		}
		inner := s[i+2 : i+2+j]
		name, def, hasDef := strings.Cut(inner, ":-")
		if !envNamePattern.MatchString(name) {
			return "", fmt.Sprintf("%s is not a variable reference: write ${NAME} or ${NAME:-default}", show("${"+inner+"}"))
		}
		val, ok := lookup(name)
		switch {
		case ok:
		case hasDef:
			val = def
		default:
			return "", fmt.Sprintf("${%s} is not set in the environment and has no default: set %s, or write ${%s:-default}", name, name, name)
		}
		b.WriteString(s[:i])
		b.WriteString(val)
		s = s[i+2+j+1:]
	}
	b.WriteString(s)
	return b.String(), ""
}

// parseAllow turns "SERVER:TOOL" entries into allowed tool lists. Entries
// naming a disabled server are accepted and have no effect.
func parseAllow(allow []string, f *mcpFile) (map[string][]string, error) {
	var probs problems
	bad := func(entry, format string, args ...any) {
		probs.add(0, &Error{Msg: fmt.Sprintf("--allow %s: ", show(entry)) + fmt.Sprintf(format, args...)})
	}
	tools := make(map[string][]string)
	for _, raw := range allow {
		for entry := range strings.SplitSeq(raw, ",") {
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			server, tool, ok := strings.Cut(entry, ":")
			if !ok || server == "" || tool == "" {
				bad(entry, "write SERVER:TOOL, such as github:search_issues, or SERVER:* for every tool")
				continue
			}
			if msg := checkTool(tool); msg != "" {
				bad(entry, "%s", msg)
				continue
			}
			switch {
			case f.has(server):
			case f.disabled[server]:
				bad(entry, `server %q is disabled in %s ("disabled": true), so it is not started: enable it there, or leave it out of --allow`, server, f.name)
				continue
			default:
				bad(entry, "there is no server %q in %s (it has: %s)", server, f.name, f.names())
				continue
			}
			if !slices.Contains(tools[server], tool) {
				tools[server] = append(tools[server], tool)
			}
		}
	}
	for server, list := range tools {
		if slices.Contains(list, "*") {
			tools[server] = []string{"*"}
		}
	}
	if err := probs.join(); err != nil {
		return nil, err
	}
	return tools, nil
}
