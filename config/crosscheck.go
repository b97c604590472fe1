package config

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"
)

// The checks that compare one value of airlock.yaml with another, or an
// entry with other entries, run here, once the whole file is read: server
// ids against each other, timeouts against the timeouts they bound,
// ${workspace} against the scope, the keys of oauth: against each other and
// resource and scopes against oauth, imported servers against the servers
// already configured, policy entries against the servers.
//
// Reading still decides what it reads: a server's transport and scope say
// which keys the entry may have (the others are refused where they are met),
// and a key that another key rules out (resource and scopes without oauth,
// args on a deny rule) is left unread, so that only the check here reports
// it. A check reports at the mark that reading took where it met the value,
// so problems come out in the same order as if reading had found them.

// noted reports whether reading noted key's value in e.
func (e *entry) noted(key string) bool {
	_, ok := e.at[key]
	return ok
}

// keyError reports a problem with the value of key in e.
func (r *yamlReader) keyError(e *entry, key, format string, args ...any) {
	r.errorAt(e.at[key], e.keys[key].line, e.path+"."+key, format, args...)
}

// spot is a value a check may report.
type spot struct {
	line int
	path string
	at   int // the mark
}

// crossCheck runs the checks between the parts of a file that was read.
func (r *yamlReader) crossCheck(f *yamlFile, cfg *Config) {
	var ids registry
	for _, se := range f.servers {
		r.checkServer(se, &ids)
	}
	importFailed := r.checkImports(f.imports, &ids, cfg) || f.importFailed
	r.checkPolicy(f.policy, &ids)
	r.checkURLs(cfg.Development)
	if len(cfg.Servers) == 0 && !importFailed {
		r.checkServerCount(f)
	}
}

// checkServer checks a servers: entry against itself and against the
// servers before it.
func (r *yamlReader) checkServer(se *serverEntry, ids *registry) {
	e, s := se.entry, &se.s
	if e.noted("id") {
		if msg := ids.add(s.ID, fmt.Sprintf("%s (line %d)", e.path, e.keys["id"].line)); msg != "" {
			r.keyError(e, "id", "%s", msg)
		}
	}
	if e.noted("scope") && s.Scope == "task" && s.Remote() {
		r.keyError(e, "scope", "a transport: http server is shared by every task: remove scope: task")
	}
	if s.Scope == "host" {
		// ${workspace} only means something for task servers; anywhere
		// else it would reach the process literally.
		for _, w := range se.workspace {
			r.errorAt(w.at, w.line, w.path, "${workspace} is only available to scope: task servers")
		}
	}
	if e.noted("max_call_duration") && s.MaxCallDuration < s.RequestTimeout {
		r.keyError(e, "max_call_duration", "%s is shorter than request_timeout (%s): it is how far progress may stretch a call past that", fmtDuration(s.MaxCallDuration), fmtDuration(s.RequestTimeout))
	}
	if h := s.HealthCheck; e.noted("health_check") && h.Timeout > h.Interval {
		r.errorAt(e.at["health_check"], e.keys["health_check"].line, e.path+".health_check.timeout", "%s is longer than the interval (%s): checks would overlap", fmtDuration(h.Timeout), fmtDuration(h.Interval))
	}
	// The probe is part of connecting to a stdio server; for a remote
	// server it is one request of the handshake.
	probeKey, probeBound := "connect_timeout", s.ConnectTimeout
	if s.Remote() {
		probeKey, probeBound = "request_timeout", s.RequestTimeout
	}
	if e.noted("probe_timeout") && probeBound > 0 && s.ProbeTimeout > probeBound {
		r.keyError(e, "probe_timeout", "%s is longer than %s (%s): the probe is part of connecting", fmtDuration(s.ProbeTimeout), probeKey, fmtDuration(probeBound))
	}
	if s.Remote() {
		r.checkRemote(se)
	}
}

// oauthOnly are the keys of a remote server that only OAuth uses, each
// with the message for when oauth: is there without it ("" when it may be
// left out).
var oauthOnly = []struct{ key, required string }{
	{"resource", "is required with oauth: give the OAuth resource of the server, such as https://mcp.example.com; it is never guessed from url, which may differ"},
	// Left out, the server's own 401 challenge or resource metadata says
	// which scopes to request (the MCP specification's scope selection).
	{"scopes", ""},
}

// checkRemote checks the keys of a transport: http server against each
// other. OAuth is on exactly when oauth: is there; resource and scopes
// only mean something with it.
func (r *yamlReader) checkRemote(se *serverEntry) {
	e, s := se.entry, &se.s
	if e.noted("stream_read_timeout") && s.StreamReadTimeout < s.RequestTimeout {
		r.keyError(e, "stream_read_timeout", "%s is shorter than request_timeout (%s): a stream may go quiet at least as long as a request may take", fmtDuration(s.StreamReadTimeout), fmtDuration(s.RequestTimeout))
	}
	op, hasOAuth := e.keys["oauth"]
	for _, k := range oauthOnly {
		switch _, has := e.keys[k.key]; {
		case has && !hasOAuth:
			r.keyError(e, k.key, "is only used with OAuth: set oauth: to use %s, or remove it", k.key)
		case !has && hasOAuth && k.required != "":
			r.errorAt(e.at[k.key], op.line, e.path+"."+k.key, "%s", k.required)
		}
	}
	if !e.noted("oauth") {
		return
	}
	// An empty string counts as not set, and a value that was refused is
	// not also reported as missing.
	o, path, at := s.OAuth, e.path+".oauth", e.at["oauth"]
	if o.ClientCredentials() {
		r.checkClientCredentials(o, op, path, at)
		return
	}
	if o.PrivateKeyFile != "" {
		r.errorAt(at, op.line, path+".private_key_file", "is only used with grant: %s: a person logging in needs no key", GrantClientCredentials)
	}
	if o.ClientSecretEnv != "" && o.ClientID == "" && !r.failedUnder(path) {
		r.errorAt(at, op.line, path+".client_secret_env", "is only used with client_id: a client secret belongs to a client registered in advance")
	}
	if o.ClientID == "" && o.ClientMetadataURL == "" && !o.DynamicRegistration && !r.failedUnder(path) {
		r.errorAt(at, op.line, path, "says nothing about how airlock identifies itself to the authorization server: set client_id, client_metadata_url or dynamic_registration: true")
	}
}

// checkClientCredentials checks oauth: with grant: client_credentials:
// the client registered in advance and exactly one way to prove it is
// that client; the keys of a person's login mean nothing here.
func (r *yamlReader) checkClientCredentials(o *OAuth, op pair, path string, at int) {
	failed := r.failedUnder(path)
	if o.ClientMetadataURL != "" {
		r.errorAt(at, op.line, path+".client_metadata_url", "is not used with grant: %s: give the client_id registered for airlock", GrantClientCredentials)
	}
	if o.DynamicRegistration {
		r.errorAt(at, op.line, path+".dynamic_registration", "is not used with grant: %s: give the client_id registered for airlock", GrantClientCredentials)
	}
	if o.RedirectURI != defaultRedirectURI {
		r.errorAt(at, op.line, path+".redirect_uri", "is not used with grant: %s: nobody logs in, so nothing is redirected", GrantClientCredentials)
	}
	switch {
	case failed:
	case o.ClientID == "":
		r.errorAt(at, op.line, path+".client_id", "is required with grant: %s: give the client id the authorization server registered for airlock", GrantClientCredentials)
	case o.ClientSecretEnv == "" && o.PrivateKeyFile == "":
		r.errorAt(at, op.line, path, "needs client_secret_env (the host variable that holds the client secret: client_secret_basic) or private_key_file (a PEM private key that signs the client's assertions: private_key_jwt) with grant: %s", GrantClientCredentials)
	case o.ClientSecretEnv != "" && o.PrivateKeyFile != "":
		r.errorAt(at, op.line, path, "has both client_secret_env and private_key_file: give one way for the client to prove who it is")
	}
}

// checkImports checks the servers of every imported file against the
// servers configured so far, applies the entry's allowed tools and adds
// them to cfg. It reports whether it found a problem.
func (r *yamlReader) checkImports(list []imported, ids *registry, cfg *Config) (failed bool) {
	for _, im := range list {
		e, bad := im.entry, false
		for _, t := range e.tools {
			if !im.file.has(t.key) && !im.file.disabled[t.key] {
				r.errorAt(im.at, t.line, joinPath(e.path+".allowed_tools", t.key), "there is no server %q in %s (it has: %s)", t.key, im.file.name, im.file.names())
				bad = true
			}
		}
		var out []Server
		for _, s := range im.file.servers {
			if msg := ids.add(s.ID, s.Source); msg != "" {
				r.errorAt(im.at, e.line, e.path, "%s: %s", s.Source, msg)
				bad = true
				continue
			}
			s.AllowedTools = slices.Clone(e.lists[s.ID])
			if len(s.AllowedTools) == 0 {
				cfg.notices = append(cfg.notices, noToolsNotice(s.ID,
					fmt.Sprintf("list its tools under %s.allowed_tools.%s in %s:%d", e.path, s.ID, r.file, e.line)))
			}
			out = append(out, s)
		}
		if !bad {
			cfg.Servers = append(cfg.Servers, out...)
		}
		failed = failed || bad
	}
	return failed
}

// checkPolicy checks that policy entries name configured servers: an entry
// naming none would silently never apply. A tool is classified once.
func (r *yamlReader) checkPolicy(p policyEntries, ids *registry) {
	seen := make(seenAt[[2]string])
	for _, ce := range p.classes {
		e, c := ce.entry, &ce.val
		known := true
		if e.noted("server") && !ids.has(c.Server) {
			r.keyError(e, "server", "there is no server %q (servers: %s)", c.Server, ids.list())
			known = false
		}
		if !e.ok || !known {
			continue
		}
		if first, dup := seen.again([2]string{c.Server, c.Tool}, e.line); dup {
			r.errorAt(e.end, e.line, e.path, "tool %q of server %q is already classified at line %d", c.Tool, c.Server, first)
		}
	}
	for _, re := range p.rules {
		e, rule := re.entry, &re.val
		if e.noted("server") && !ids.matches(rule.Server) {
			r.keyError(e, "server", "%s matches no server (servers: %s)", show(rule.Server), ids.list())
		}
		if e.noted("args") && rule.Decision == "deny" {
			r.keyError(e, "args", "a deny rule denies whatever the arguments: remove args, or make the rule allow or ask")
		}
	}
}

// checkServerCount reports a file that configures no server at all.
func (r *yamlReader) checkServerCount(f *yamlFile) {
	switch p, ok := f.top["servers"]; {
	case !ok && f.top["import"].val == nil:
		r.errorf(f.root.Line, "servers", "is required: list at least one server (see the documentation for an example)")
	case ok:
		if n := resolve(p.val); n.Kind == yaml.SequenceNode && len(n.Content) == 0 {
			r.errorf(p.line, "servers", "is empty: list at least one server, or import an mcpServers file")
		}
	default:
		r.errorf(f.top["import"].line, "import", "imports no servers: list at least one server under servers:")
	}
}
