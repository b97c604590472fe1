package config

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults of serve: that the gateway applies when a field of [Serve] is
// zero.
const (
	DefaultMaxSessions        = 1000
	DefaultSessionIdleTimeout = 30 * time.Minute
)

var serveKeys = keySet{
	known: []string{"allowed_origins", "max_sessions", "session_idle_timeout"},
	elsewhere: map[string]string{
		"servers": "at the top level", "limits": "at the top level", "tenancy": "at the top level",
	},
}

// Serve is serve:, the settings of the gateway (airlock serve). Its zero
// value is the defaults.
type Serve struct {
	// AllowedOrigins are the browser origins (scheme://host[:port], lower
	// case) whose requests the HTTP endpoint accepts, with CORS answered
	// for exactly them. Empty allows none: only requests without an Origin
	// header (every client that is not a web page).
	AllowedOrigins []string
	// MaxSessions bounds the sessions (2025-11-25) and subscription
	// streams (2026-07-28) open at once; 0 means [DefaultMaxSessions].
	MaxSessions int
	// SessionIdleTimeout ends a session that has made no request for this
	// long; 0 means [DefaultSessionIdleTimeout].
	SessionIdleTimeout time.Duration
}

// serve reads serve:. auth, inbound authentication, is refused: this
// version serves only loopback clients, and says so.
func (r *yamlReader) serve(p pair, s *Serve) {
	ps, ok := r.pairs(p.val, "serve")
	if !ok {
		return
	}
	f := make(map[string]pair, len(ps))
	for _, kp := range ps {
		switch {
		case kp.key == "auth":
			r.errorf(kp.line, "serve.auth", "inbound authentication is not supported by this version of Airlock: remove serve.auth, and serve HTTP on a loopback address only (airlock serve --http 127.0.0.1:PORT)")
		case !slices.Contains(serveKeys.known, kp.key):
			r.errorf(kp.line, joinPath("serve", kp.key), "%s", serveKeys.unknownKey(kp.key))
		default:
			f[kp.key] = kp
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
	r.timeoutKey(f, "serve", "session_idle_timeout", &s.SessionIdleTimeout)
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
