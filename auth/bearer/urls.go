package bearer

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/airlockhq/airlock/auth/egress"
)

// SameResource reports whether a and b name the same protected resource:
// they are equal once one trailing slash, if present, is removed from each.
// Nothing else is normalised (scheme and host case, default ports, paths and
// queries must match byte for byte), so a token for one resource can never be
// taken for another one that merely looks alike. Empty strings never match.
//
// Resource servers compare a token's "aud" values with their own resource
// this way, and clients compare a server's advertised resource with the one
// they were configured with the same way.
func SameResource(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

// MetadataURL returns the URL of the RFC 9728 protected resource metadata for
// resource: the well-known path inserted between the host and the resource's
// path ("https://mcp.example.com/v1" gives
// "https://mcp.example.com/.well-known/oauth-protected-resource/v1"). A
// trailing slash on the resource is ignored, matching [SameResource].
func MetadataURL(resource string) (string, error) {
	u, err := url.Parse(resource)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("resource %q is not an absolute URL", resource)
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	return u.Scheme + "://" + u.Host + WellKnownPath + path, nil
}

// WellKnownPath is the RFC 9728 well-known path of protected resource
// metadata.
const WellKnownPath = "/.well-known/oauth-protected-resource"

// checkURL enforces the transport policy for a URL the verifier talks to or
// names: an absolute https URL, or plain http to a loopback host (local
// development), or plain http anywhere when insecure is set. User info and
// fragments are refused everywhere; identifiers (issuer, resource) refuse a
// query too.
func checkURL(what, raw string, insecure, identifier bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%s %q is not a URL", what, raw)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return fmt.Errorf("%s %q must be an https URL", what, raw)
	}
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("%s %q has no host", what, raw)
	}
	if u.User != nil {
		return fmt.Errorf("%s %q must not contain user information", what, raw)
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return fmt.Errorf("%s %q must not contain a fragment", what, raw)
	}
	if identifier && (u.RawQuery != "" || u.ForceQuery) {
		return fmt.Errorf("%s %q must not contain a query", what, raw)
	}
	if u.Scheme == "http" && !insecure && !egress.IsLoopbackHost(u.Hostname()) {
		return fmt.Errorf("%s %q uses plain http to a host that is not loopback; use https (plain http is only for local development, or must be allowed explicitly)", what, raw)
	}
	return nil
}

// IsLoopbackHostPort is [egress.IsLoopbackHost] for a "host[:port]" value
// such as an HTTP Host header.
func IsLoopbackHostPort(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return egress.IsLoopbackHost(host)
}
