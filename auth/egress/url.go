package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// URLOptions configures [ValidateURL].
type URLOptions struct {
	// AllowedHosts lists the host names (or IP literals) the URL may name.
	// Required: an empty list accepts nothing. Names compare without
	// regard to case.
	AllowedHosts []string

	// Development allows plain http to a loopback host ("localhost" or a
	// loopback IP literal) with an explicit port.
	Development bool
}

// ValidateURL checks a URL from the configuration (an MCP endpoint, a
// resource, a redirect URI) before the host uses it: an absolute https URL
// (plain http only to a loopback host with an explicit port in development
// mode), with no user information, query or fragment, whose host is in
// AllowedHosts. It checks the text only: where the name leads is the
// [Guard]'s business when the connection is made. Messages never quote user
// information.
func ValidateURL(raw string, opts *URLOptions) error {
	var o URLOptions
	if opts != nil {
		o = *opts
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("the URL cannot be parsed")
	}
	shown := withoutUser(u)
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("URL %q must use https", shown)
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("URL %q must be absolute, with a host", shown)
	case u.User != nil:
		return fmt.Errorf("URL %q must not contain user information; use the server's credentials settings", shown)
	case u.RawQuery != "" || u.ForceQuery:
		return fmt.Errorf("URL %q must not contain a query", shown)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return fmt.Errorf("URL %q must not contain a fragment", shown)
	}
	port := u.Port()
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("URL %q has an invalid port", shown)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return fmt.Errorf("URL %q has an empty port", shown)
	}
	host := u.Hostname()
	if len(o.AllowedHosts) == 0 {
		return fmt.Errorf("URL %q cannot be checked: allowed_hosts is empty", shown)
	}
	allowed := false
	for _, h := range o.AllowedHosts {
		if strings.EqualFold(strings.Trim(h, "[]"), host) {
			allowed = true
			break
		}
	}
	if !allowed {
		return fmt.Errorf("URL %q names host %q, which is not in allowed_hosts", shown, host)
	}
	if u.Scheme == "http" {
		if !o.Development || port == "" || !IsLoopbackHost(host) {
			return fmt.Errorf("URL %q must use https (plain http is allowed only to a loopback address with an explicit port, in development mode)", shown)
		}
	}
	return nil
}

// IsLoopbackHost reports whether host (a name or an IP literal, without a
// port; brackets around IPv6 are allowed) is "localhost" or a loopback
// address. It looks at the text only: where a name leads is the [Guard]'s
// business when the connection is made.
func IsLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// withoutUser returns u as text without its user information.
func withoutUser(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}
