package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Defaults of serve: that the gateway applies when a field of [Serve] is
// zero.
const (
	DefaultMaxSessions        = 1000
	DefaultMaxSessionsPerUser = 100
	DefaultSessionIdleTimeout = 30 * time.Minute
)

var serveKeys = keySet{
	known: []string{"auth", "console", "allowed_origins", "max_sessions", "max_sessions_per_user", "session_idle_timeout", "metrics_token_env"},
	elsewhere: map[string]string{
		"servers": "at the top level", "limits": "at the top level", "tenancy": "at the top level",
	},
}

var serveAuthKeys = keySet{known: []string{"issuer", "resource", "scopes", "tenant_claim", "user_claim"}}

var serveConsoleKeys = keySet{known: []string{"client_id", "client_secret_env", "scopes", "operators"}}

// Serve is serve:, the settings of the gateway (airlock serve). Its zero
// value is the defaults.
type Serve struct {
	// Auth, when set, makes the gateway's HTTP endpoint an OAuth resource
	// server: every request carries an access token, and the token's
	// claims say whom its calls are made for. Nil means no inbound
	// authentication (loopback only, acting for tenancy:).
	Auth *ServeAuth
	// Console is the operator console's sign-in (airlock serve --console
	// with Auth): people sign in at Auth.Issuer. Nil without serve.console.
	Console *ServeConsole
	// AllowedOrigins are the browser origins (scheme://host[:port], lower
	// case) whose requests the HTTP endpoint accepts, with CORS answered
	// for exactly them. Empty allows none: only requests without an Origin
	// header (every client that is not a web page).
	AllowedOrigins []string
	// MaxSessions bounds the sessions (2025-11-25) and subscription
	// streams (2026-07-28) open at once; 0 means [DefaultMaxSessions].
	MaxSessions int
	// MaxSessionsPerUser bounds, with Auth, the sessions and subscription
	// streams one principal (tenant and user) holds at once, so that no
	// one fills MaxSessions for everyone; 0 means
	// [DefaultMaxSessionsPerUser]. Without Auth every client is the same
	// principal, and only MaxSessions applies.
	MaxSessionsPerUser int
	// SessionIdleTimeout ends a session that has made no request for this
	// long; 0 means [DefaultSessionIdleTimeout].
	SessionIdleTimeout time.Duration
	// MetricsTokenEnv names the host variable that holds the bearer token
	// a scraper must send for /metrics (airlock serve --http). With it,
	// /metrics is reachable by any host name (a scraper addresses the
	// gateway by its IP); without it, /metrics answers only under the
	// names every request is checked against, and not at all when Auth is
	// set. Empty means none.
	MetricsTokenEnv string
}

// ServeAuth is serve.auth: the authorization server whose RFC 9068
// access tokens the gateway accepts, for which resource, and which claims
// name the tenant and the user.
type ServeAuth struct {
	// Issuer is the authorization server (a token's "iss"); its keys are
	// found through its RFC 8414 or OpenID Connect metadata.
	Issuer string
	// Resource is the gateway's own resource identifier, the URL its
	// clients reach it by: a token's "aud" must name it.
	Resource string
	// Scopes are the scopes every request's token must hold. Empty
	// requires none.
	Scopes []string
	// TenantClaim names the claim that holds the caller's tenant; a token
	// without it is refused. Empty means every caller is of tenancy's
	// tenant.
	TenantClaim string
	// UserClaim names the claim that holds the caller's user name: "sub"
	// unless the configuration says otherwise.
	UserClaim string
}

// ServeConsole is serve.console: how the operator console of a gateway
// with serve.auth signs people in. It is an OpenID Connect relying party
// of serve.auth.issuer (authorization code with PKCE); the ID token's
// claims (or, for a claim it lacks, the userinfo answer) name the tenant
// and user by serve.auth's tenant_claim and user_claim, as an access
// token's do for the gateway.
type ServeConsole struct {
	// ClientID is the console's client, registered at the issuer with the
	// redirect URI https://HOST/console/callback (HOST: serve.auth.resource's,
	// or the loopback address an operator reaches the gateway by).
	ClientID string
	// ClientSecretEnv names the host variable holding the client's secret;
	// empty: a public client (PKCE only).
	ClientSecretEnv string
	// Scopes are asked for besides openid.
	Scopes []string
	// Operators may act for every tenant and user, as airlock console
	// --all-principals does: each is tenant/user, or a user of tenancy's
	// tenant.
	Operators []ConsoleOperator
}

// A ConsoleOperator names a person who signs in to the console as an
// operator. Tenant "" is tenancy's tenant.
type ConsoleOperator struct{ Tenant, User string }

// serve reads serve:.
func (r *yamlReader) serve(p pair, s *Serve) {
	f, ok := r.fields(p.val, "serve", serveKeys)
	if !ok {
		return
	}
	if kp, ok := f["auth"]; ok {
		s.Auth = r.serveAuth(kp)
	}
	if kp, ok := f["console"]; ok {
		s.Console = r.serveConsole(kp)
		if _, auth := f["auth"]; !auth {
			r.errorf(kp.line, "serve.console", "is the console's sign-in at serve.auth.issuer: set serve.auth too, or remove serve.console (without serve.auth the console is for loopback, as whoever runs airlock)")
		}
	}
	if kp, ok := f["allowed_origins"]; ok {
		if items, ok := r.list(kp.val, "serve.allowed_origins", ""); ok {
			s.AllowedOrigins, _ = r.distinct(items, checkOrigin)
		}
	}
	if kp, ok := f["max_sessions"]; ok {
		if v, ok := r.integer(kp.val, "serve.max_sessions", 1, 1000000, "sessions"); ok {
			s.MaxSessions = v
		}
	}
	if kp, ok := f["max_sessions_per_user"]; ok {
		if v, ok := r.integer(kp.val, "serve.max_sessions_per_user", 1, 1000000, "sessions"); ok {
			s.MaxSessionsPerUser = v
		}
	}
	r.timeoutKey(f, "serve", "session_idle_timeout", &s.SessionIdleTimeout)
	if kp, ok := f["metrics_token_env"]; ok {
		s.MetricsTokenEnv = r.secretEnvName(kp, "serve.metrics_token_env")
	}
}

// serveAuth reads serve.auth. The issuer and the resource are URLs of the
// rules every configured URL keeps (https; plain http only to loopback,
// in development mode); their checks wait for the development flag.
func (r *yamlReader) serveAuth(p pair) *ServeAuth {
	const path = "serve.auth"
	f, ok := r.fields(p.val, path, serveAuthKeys)
	if !ok {
		return nil
	}
	a := &ServeAuth{UserClaim: "sub"}
	urlKey := func(key, what, example string) string {
		kp, ok := f[key]
		if !ok {
			r.errorf(p.line, path+"."+key, "is required: %s, such as %s", what, example)
			return ""
		}
		v, ok := r.text(kp.val, path+"."+key)
		if !ok {
			return ""
		}
		line := resolve(kp.val).Line
		u, err := url.Parse(v)
		if err != nil || u.Hostname() == "" {
			r.errorf(line, path+"."+key, "must be an absolute https URL: %s, such as %s", what, example)
			return ""
		}
		r.urls = append(r.urls, urlCheck{order: line, at: Error{File: r.file, Line: line, Path: path + "." + key}, url: v, hosts: []string{u.Hostname()}})
		return v
	}
	a.Issuer = urlKey("issuer", "the authorization server whose access tokens the gateway accepts", "https://id.example.com")
	a.Resource = urlKey("resource", "the gateway's own URL, as its clients reach it and as tokens name it in aud", "https://airlock.example.com/mcp")
	if kp, ok := f["scopes"]; ok {
		a.Scopes = r.scopes(kp.val, path+".scopes")
	}
	claim := func(key string, dst *string) {
		kp, ok := f[key]
		if !ok {
			return
		}
		if v, ok := r.text(kp.val, path+"."+key); ok {
			if msg := checkClaim(v); msg != "" {
				r.errorf(resolve(kp.val).Line, path+"."+key, "%s", msg)
			} else {
				*dst = v
			}
		}
	}
	claim("tenant_claim", &a.TenantClaim)
	claim("user_claim", &a.UserClaim)
	return a
}

// serveConsole reads serve.console.
func (r *yamlReader) serveConsole(p pair) *ServeConsole {
	const path = "serve.console"
	f, ok := r.fields(p.val, path, serveConsoleKeys)
	if !ok {
		return nil
	}
	c := &ServeConsole{}
	const required = "is required: the console's client id, registered at serve.auth.issuer with the redirect URI https://HOST/console/callback"
	if kp, ok := f["client_id"]; !ok {
		r.errorf(p.line, path+".client_id", required)
	} else if v, ok := r.text(kp.val, path+".client_id"); ok {
		msg := checkClientID(v)
		if v == "" {
			msg = required
		}
		if msg != "" {
			r.errorf(resolve(kp.val).Line, path+".client_id", "%s", msg)
		} else {
			c.ClientID = v
		}
	}
	if kp, ok := f["client_secret_env"]; ok {
		c.ClientSecretEnv = r.secretEnvName(kp, path+".client_secret_env")
	}
	if kp, ok := f["scopes"]; ok {
		c.Scopes = r.scopes(kp.val, path+".scopes")
	}
	if kp, ok := f["operators"]; ok {
		if items, ok := r.list(kp.val, path+".operators", ""); ok {
			for it, v := range r.texts(items) {
				op, msg := parseOperator(v)
				if msg != "" {
					r.errorf(it.line, it.path, "%s", msg)
					continue
				}
				c.Operators = append(c.Operators, op)
			}
		}
	}
	return c
}

// secretEnvName reads the name of a host variable that holds a secret
// the gateway reads when it needs it (not when the file is loaded).
func (r *yamlReader) secretEnvName(p pair, path string) string {
	v, ok := r.text(p.val, path)
	if !ok {
		return ""
	}
	if msg := checkSecretEnvName(v); msg != "" {
		r.errorf(resolve(p.val).Line, path, "%s", msg)
		return ""
	}
	return v
}

// parseOperator reads an operator as tenant/user or user.
func parseOperator(v string) (ConsoleOperator, string) {
	tenant, user, both := strings.Cut(v, "/")
	if !both {
		tenant, user = "", v
	}
	if both && CheckPrincipal("tenant", tenant) != nil || CheckPrincipal("user", user) != nil {
		return ConsoleOperator{}, fmt.Sprintf("%s is not an operator: give tenant/user or user, each 1 to 128 letters, digits, ., _, @, + or -", show(v))
	}
	return ConsoleOperator{Tenant: tenant, User: user}, ""
}

// checkClaim checks the name of a token claim: any JSON member name a
// token may use (such as tenant, or https://example.com/tenant), but not
// empty, not padded and without control characters.
func checkClaim(name string) string {
	switch {
	case name == "":
		return "must not be empty: name the token claim, such as tenant"
	case len(name) > 256:
		return "is longer than 256 characters"
	case strings.TrimSpace(name) != name:
		return fmt.Sprintf("%s has leading or trailing spaces", show(name))
	case strings.ContainsFunc(name, unicode.IsControl):
		return fmt.Sprintf("%s contains control characters", show(name))
	}
	return ""
}

// checkOrigin checks a browser origin as a browser sends it in the Origin
// header, and returns it in lower case.
func checkOrigin(raw string) (string, string) {
	const example = "such as https://app.example.com or http://localhost:3000"
	if raw == "*" {
		return "", `"*" would let every web page call the gateway: list each origin, ` + example
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Opaque != "":
		return "", fmt.Sprintf("%s is not an origin: give one %s", show(raw), example)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Sprintf("%s must start with http:// or https://, %s", show(raw), example)
	case u.Host == "" || u.Hostname() == "":
		return "", fmt.Sprintf("%s names no host: give one %s", show(raw), example)
	case u.User != nil:
		return "", fmt.Sprintf("%s must not contain user information: an origin is scheme://host[:port]", show(raw))
	case u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#"):
		return "", fmt.Sprintf("%s must not have a path, query or fragment: an origin is scheme://host[:port], %s", show(raw), example)
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", fmt.Sprintf("%s has an invalid port: use 1 to 65535", show(raw))
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return "", fmt.Sprintf("%s has an empty port: give one, or leave out the colon", show(raw))
	}
	return strings.ToLower(raw), ""
}
