package config

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/airlockhq/airlock/auth/egress"
)

// Keys of a server entry that belong to one transport only.
var (
	stdioOnlyKeys = []string{"command", "args", "cwd", "env", "secret_env"}
	httpOnlyKeys  = []string{"url", "resource", "allowed_hosts", "allow_private_networks", "scopes",
		"oauth", "stream_read_timeout", "terminate_on_close", "ca_file"}

	oauthKeys = keySet{known: []string{"client_id", "client_secret_env", "client_metadata_url", "dynamic_registration", "redirect_uri",
		"grant", "private_key_file"}}
)

// remote reads the keys of a transport: http server entry. The checks of
// url and resource that depend on the development flag wait in r.urls,
// because development: may come after servers: in the file; those that
// compare its keys are checkRemote's.
func (r *yamlReader) remote(se *serverEntry) {
	e, s := se.entry, &se.s
	hostsOK := false
	if p, ok := r.require(e, "allowed_hosts", "is required for transport: http: list the hosts url and resource may name, such as [mcp.example.com]"); ok {
		s.AllowedHosts, hostsOK = r.hostList(p.val, e.path+".allowed_hosts")
	}
	// urlKey reads url or resource, which must name an allowed host.
	urlKey := func(p pair, key string) string {
		kp := e.path + "." + key
		v, ok := r.text(p.val, kp)
		if !ok {
			return ""
		}
		line := resolve(p.val).Line
		if v == "" {
			r.errorf(line, kp, "must not be empty: give an https URL, such as https://mcp.example.com/mcp")
			return ""
		}
		if hostsOK {
			r.urls = append(r.urls, urlCheck{order: line, at: Error{File: r.file, Line: line, Path: kp}, url: v, hosts: s.AllowedHosts})
		}
		return v
	}
	if p, ok := r.require(e, "url", "is required for transport: http: give the server's MCP endpoint, such as https://mcp.example.com/mcp"); ok {
		s.URL = urlKey(p, "url")
	}
	if p, ok := e.keys["allow_private_networks"]; ok {
		s.AllowPrivateNetworks, _ = r.boolean(p.val, e.path+".allow_private_networks")
	}
	if p, ok := e.keys["ca_file"]; ok {
		if v, ok := r.text(p.val, e.path+".ca_file"); ok {
			if abs, msg := checkCAFile(r.dir, v); msg != "" {
				r.errorf(resolve(p.val).Line, e.path+".ca_file", "%s", msg)
			} else {
				s.CAFile = abs
			}
		}
	}
	if p, ok := e.keys["terminate_on_close"]; ok {
		if b, ok := r.boolean(p.val, e.path+".terminate_on_close"); ok {
			s.TerminateOnClose = b
		}
	}
	if !r.optionalTimeout(e, "stream_read_timeout", &s.StreamReadTimeout) {
		// A long request_timeout lengthens the default with it.
		s.StreamReadTimeout = max(s.StreamReadTimeout, s.RequestTimeout)
	}
	// Without oauth:, resource and scopes are left unread: checkRemote
	// refuses them.
	op, hasOAuth := e.keys["oauth"]
	r.note(e, "resource")
	if p, ok := e.keys["resource"]; ok && hasOAuth {
		s.Resource = urlKey(p, "resource")
	}
	r.note(e, "scopes")
	if p, ok := e.keys["scopes"]; ok && hasOAuth {
		s.Scopes = r.scopes(p.val, e.path+".scopes")
	}
	if hasOAuth {
		s.OAuth = r.oauth(e, op)
	}
}

// hostList reads allowed_hosts. ok is false when any entry was refused, so
// that URLs are not checked against a partial list.
func (r *yamlReader) hostList(n *yaml.Node, path string) ([]string, bool) {
	before := len(r.probs.list)
	items, ok := r.list(n, path, "must list at least one host, such as [mcp.example.com]: an empty list allows nothing")
	if !ok {
		return nil, false
	}
	out, _ := r.distinct(items, checkHost)
	return out, len(r.probs.list) == before
}

var hostLabel = regexp.MustCompile(`^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$`)

// checkHost checks one allowed_hosts entry: a host name or an IP literal,
// nothing more. It returns the entry in lower case, without brackets.
func checkHost(h string) (string, string) {
	const alone = "give the host name alone, such as mcp.example.com"
	host := strings.ToLower(h)
	switch {
	case host == "":
		return "", "must not be empty: " + alone
	case strings.Contains(host, "://"):
		return "", fmt.Sprintf("%s is a URL: %s", show(h), alone)
	case strings.Contains(host, "*"):
		return "", fmt.Sprintf("%s: patterns are not supported: list each host", show(h))
	case strings.ContainsAny(host, "/?#@"):
		return "", fmt.Sprintf("%s is not a host name: %s", show(h), alone)
	}
	if ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")); err == nil {
		if ip.Zone() != "" {
			return "", fmt.Sprintf("%s has an IPv6 zone, which a URL cannot name: remove it", show(h))
		}
		return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), ""
	}
	if strings.Contains(host, ":") {
		return "", fmt.Sprintf("%s has a port: %s (the port is part of url)", show(h), alone)
	}
	if strings.HasSuffix(host, ".") {
		return "", fmt.Sprintf("%s ends in a dot: write it without, as in the URL", show(h))
	}
	if len(host) > 253 {
		return "", fmt.Sprintf("%s is longer than a host name may be (253 characters)", show(h))
	}
	labels := strings.Split(host, ".")
	for _, label := range labels {
		if !hostLabel.MatchString(label) {
			return "", fmt.Sprintf("%s is not a valid host name: use letters, digits, - and . (the ASCII form of an international name)", show(h))
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return "", fmt.Sprintf("%s is neither an IP address nor a host name", show(h))
	}
	return host, ""
}

// scopes reads scopes: at least one RFC 6749 scope token, none twice.
func (r *yamlReader) scopes(n *yaml.Node, path string) []string {
	items, ok := r.list(n, path, "must list at least one scope, such as [mcp:issues.read]")
	if !ok {
		return nil
	}
	out, _ := r.distinct(items, func(sc string) (string, string) {
		if !validScope(sc) {
			return "", fmt.Sprintf("%s is not an OAuth scope: use printable ASCII without spaces, \" or \\", show(sc))
		}
		return sc, ""
	})
	return out
}

// validScope reports whether s is an RFC 6749 scope token (%x21 / %x23-5B /
// %x5D-7E).
func validScope(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if c := s[i]; c < 0x21 || c == 0x22 || c == 0x5c || c > 0x7e {
			return false
		}
	}
	return true
}

// oauth reads oauth: {client_id, client_secret_env, client_metadata_url,
// dynamic_registration, redirect_uri, grant, private_key_file} of the
// server entry e. An empty string counts as not set.
func (r *yamlReader) oauth(e *entry, p pair) *OAuth {
	path := e.path + ".oauth"
	o := &OAuth{RedirectURI: defaultRedirectURI}
	f, ok := r.fields(p.val, path, oauthKeys)
	if !ok {
		return o
	}
	str := func(key string, check func(string) string) string {
		kp, ok := f[key]
		if !ok {
			return ""
		}
		v, ok := r.text(kp.val, path+"."+key)
		if !ok || v == "" {
			return ""
		}
		if msg := check(v); msg != "" {
			r.errorf(resolve(kp.val).Line, path+"."+key, "%s", msg)
			return ""
		}
		return v
	}
	o.ClientID = str("client_id", checkClientID)
	if kp, ok := f["client_secret_env"]; ok {
		o.ClientSecretEnv = r.hostSecretEnv(kp, path+".client_secret_env", "the client secret")
	}
	o.ClientMetadataURL = str("client_metadata_url", checkClientMetadataURL)
	if kp, ok := f["dynamic_registration"]; ok {
		o.DynamicRegistration, _ = r.boolean(kp.val, path+".dynamic_registration")
	}
	if kp, ok := f["redirect_uri"]; ok {
		if v, ok := r.text(kp.val, path+".redirect_uri"); ok {
			if msg := checkRedirectURI(v); msg != "" {
				r.errorf(resolve(kp.val).Line, path+".redirect_uri", "%s", msg)
			} else {
				o.RedirectURI = v
			}
		}
	}
	o.Grant = str("grant", checkGrant)
	if kp, ok := f["private_key_file"]; ok {
		if v, ok := r.text(kp.val, path+".private_key_file"); ok && v != "" {
			if abs, msg := checkPrivateKeyFile(r.dir, v); msg != "" {
				r.errorf(resolve(kp.val).Line, path+".private_key_file", "%s", msg)
			} else {
				o.PrivateKeyFile = abs
			}
		}
	}
	r.note(e, "oauth")
	return o
}

// checkGrant allows the two grants airlock can use.
func checkGrant(g string) string {
	switch g {
	case GrantAuthorizationCode, GrantClientCredentials:
		return ""
	}
	return fmt.Sprintf("%s is not a grant airlock uses: give %s (a person logs in, the default) or %s (airlock's own client credentials, for CI jobs and daemons)",
		show(g), GrantAuthorizationCode, GrantClientCredentials)
}

// checkPrivateKeyFile checks private_key_file, relative to the
// configuration's directory: a regular file that only its owner may read
// or write, as for every key file. Its contents are read once, when a
// token is first needed, never here; a message never quotes them. It
// returns the absolute path.
func checkPrivateKeyFile(dir, name string) (string, string) {
	path, info, msg := regularFile(dir, name)
	switch {
	case msg != "":
		return "", msg
	case runtime.GOOS != "windows" && info.Mode().Perm()&0o077 != 0:
		return "", fmt.Sprintf("%s may be read or written by others (mode %04o): make it readable only by its owner (chmod 600)", show(name), info.Mode().Perm())
	}
	return path, ""
}

// hostSecretEnv reads a key that names a host variable holding a secret
// (what, for messages: "the client secret"): the name of a variable that
// is set and not empty, or "".
func (r *yamlReader) hostSecretEnv(p pair, path, what string) string {
	host, ok := r.text(p.val, path)
	if !ok || host == "" {
		return ""
	}
	line := resolve(p.val).Line
	switch v, set := r.lookupEnv(host); {
	case checkSecretEnvName(host) != "":
		r.errorf(line, path, "%s", checkSecretEnvName(host))
	case !set:
		r.errorf(line, path, "the host variable %s is not set: set it to %s in the environment airlock starts in", host, what)
	case v == "":
		r.errorf(line, path, "the host variable %s is empty: set it to %s", host, what)
	default:
		return host
	}
	return ""
}

// failedUnder reports whether a problem was already reported under path,
// so that a refused value is not also reported as missing.
func (r *yamlReader) failedUnder(path string) bool {
	return slices.ContainsFunc(r.probs.list, func(p problem) bool {
		e, ok := p.err.(*Error)
		return ok && strings.HasPrefix(e.Path, path+".")
	})
}

// checkClientID allows what RFC 6749 allows in a client id (VSCHAR).
func checkClientID(id string) string {
	if len(id) > 1024 {
		return "is longer than 1024 characters"
	}
	for i := range len(id) {
		if c := id[i]; c < 0x20 || c > 0x7e {
			return "must be printable ASCII (RFC 6749)"
		}
	}
	if strings.TrimSpace(id) != id {
		return fmt.Sprintf("%s has leading or trailing spaces", show(id))
	}
	return ""
}

// checkClientMetadataURL checks the URL of a client ID metadata document:
// it is the client id itself, so it must be https with a path, on any host
// (it is fetched by the authorization server, not by airlock).
func checkClientMetadataURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "must be an absolute https URL with a path, such as https://airlock.example.com/client.json"
	}
	if u.Scheme == "http" {
		// Development mode does not relax this: the authorization server
		// fetches the document, and the SDK takes https only.
		return "must use https: it is fetched by the authorization server, such as https://airlock.example.com/client.json"
	}
	if err := egress.ValidateURL(raw, &egress.URLOptions{AllowedHosts: []string{u.Hostname()}}); err != nil {
		return err.Error()
	}
	if u.Path == "" || u.Path == "/" {
		return fmt.Sprintf("URL %q must have a path: the root of a site is not accepted as a client id, such as https://airlock.example.com/client.json", raw)
	}
	return ""
}

// checkRedirectURI checks a login's redirect URI (RFC 8252 §7.3): plain
// http to a loopback IP literal, so that the name cannot lead elsewhere,
// with a fixed port, so that it matches what was registered. Messages do
// not quote it, since a refused one may hold user information.
func checkRedirectURI(raw string) string {
	const want = "use http://127.0.0.1:PORT/PATH, on which airlock listens for the login's answer"
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Opaque != "" || u.Host == "":
		return "is not an absolute URL: " + want
	case u.Scheme != "http":
		return "must use plain http (the answer never leaves this machine): " + want
	case u.User != nil:
		return "must not contain user information: " + want
	case u.RawQuery != "" || u.ForceQuery:
		return "must not contain a query: " + want
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "must not contain a fragment: " + want
	}
	ip, err := netip.ParseAddr(u.Hostname())
	switch {
	case err != nil:
		return "must name a loopback IP address, not a host name (a name could lead elsewhere): " + want
	case !ip.IsLoopback() || ip.Zone() != "":
		return "must name a loopback address: " + want
	case u.Port() == "":
		return "needs an explicit port: " + want
	}
	if ap, err := netip.ParseAddrPort(u.Host); err != nil || ap.Port() == 0 {
		return "has an invalid port: " + want
	}
	return ""
}

// urlCheck is a URL whose check waits until the development flag is known.
type urlCheck struct {
	order int   // where a problem sorts
	at    Error // the file, line and key path of the URL
	url   string
	hosts []string
	// written is set when url came from expanding variables: messages
	// then quote it instead, since the expanded value may hold a secret.
	written string
}

// quotedURL matches the URL that egress.ValidateURL quotes at the start of
// its messages.
var quotedURL = regexp.MustCompile(`^URL "(?:[^"\\]|\\.)*"`)

// check runs egress.ValidateURL and returns the problem, or nil.
func (c urlCheck) check(development bool) *Error {
	err := egress.ValidateURL(c.url, &egress.URLOptions{AllowedHosts: c.hosts, Development: development})
	if err == nil {
		return nil
	}
	e := c.at
	e.Msg = err.Error()
	if q := quotedURL.FindString(e.Msg); q != "" && c.written != "" {
		e.Msg = "URL " + show(c.written) + " (with its variables expanded)" + e.Msg[len(q):]
	}
	return &e
}

// checkURLs runs the waiting URL checks.
func (r *yamlReader) checkURLs(development bool) {
	for _, c := range r.urls {
		if e := c.check(development); e != nil {
			r.probs.add(c.order, e)
		}
	}
}

// checkCAFile checks ca_file: a readable PEM file, relative to the
// configuration's directory, that holds at least one certificate. It
// returns the absolute path.
func checkCAFile(dir, name string) (string, string) {
	if name == "" {
		return "", "must not be empty: give a PEM file of CA certificates, or remove the key"
	}
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Sprintf("cannot read %s: %v", show(name), errors.Unwrap(err))
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return "", fmt.Sprintf("%s holds no PEM certificate (-----BEGIN CERTIFICATE-----)", show(name))
	}
	return path, ""
}
