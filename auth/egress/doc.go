// Package egress keeps the host's outbound connections on the public
// internet: every connection to a remote MCP server, to OAuth metadata, to an
// authorization server or to a token endpoint is dialled through a [Guard]
// that checks the address actually dialled, at connect time.
//
// A name is resolved once, each resolved address is checked, and only a
// checked address is dialled, so DNS rebinding between a check and the
// connect cannot happen: there is no second resolution. Loopback, private
// (RFC 1918, RFC 6598, ULA fc00::/7), link-local, cloud metadata
// (169.254.169.254, fd00:ec2::254 and friends), unspecified, multicast and
// every other special-purpose address (the IANA registries) are refused.
// [Options.AllowLoopback] (development mode) lets loopback through and
// [Options.AllowPrivate] (a server's allow_private_networks) private ranges;
// cloud metadata addresses are refused whatever the options say.
//
// [NewClient] builds the HTTP client every remote call uses: separate
// connect, TLS handshake, response header and idle timeouts, no redirects
// followed (a 307 must never re-send a request body or a bearer token
// somewhere else), no header that would let net/http replay a POST, and an
// optional egress proxy, whose own address is then what the guard checks.
//
// [ValidateURL] is the configuration-time check of a registered URL (https
// only, except plain http to loopback with an explicit port in development
// mode; no user information, query or fragment; host in allowed_hosts).
// [IsLoopbackHost] is its notion of loopback, which auth/bearer shares.
//
// Any Airlock package that opens outbound connections may import it.
package egress
