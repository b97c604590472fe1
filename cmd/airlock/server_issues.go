package main

import (
	"flag"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/airlockhq/airlock/auth/bearer"
	"github.com/airlockhq/airlock/auth/egress"
	"github.com/airlockhq/airlock/servers/issues"
)

// The environment variables that hold the introspection client's
// credentials. They are never taken from flags, which other users of the
// machine can read in the process list.
const (
	envIntrospectionClientID     = "AIRLOCK_ISSUES_INTROSPECTION_CLIENT_ID"
	envIntrospectionClientSecret = "AIRLOCK_ISSUES_INTROSPECTION_CLIENT_SECRET"
)

const serveIssuesUsage = `airlock server issues --issuer URL --resource URL [--addr HOST:PORT]
    [--tenant-claim CLAIM] [--data FILE|:memory:] [--allowed-origins ORIGIN,…] [--stateful]
    [--jwks-url URL] [--introspection-url URL] [--algorithms ALG,…] [--clock-skew DURATION]
    [--max-body-bytes N] [--allow-insecure-http]`

// issuesFlags are the flags of `airlock server issues`.
type issuesFlags struct {
	addr, issuer, resource, tenantClaim, data string
	jwksURL, introspectionURL                 string
	origins, algorithms                       listFlag
	stateful, insecure                        bool
	skew                                      time.Duration
	maxBody                                   int64
}

func (f *issuesFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8080", "address to listen on (port 0 picks a free port)")
	fs.StringVar(&f.issuer, "issuer", "", "the authorization server that issues access tokens (required)")
	fs.StringVar(&f.resource, "resource", "", "this server's resource identifier; tokens' aud must name it (required)")
	fs.StringVar(&f.tenantClaim, "tenant-claim", "tenant", "the token claim that holds the caller's tenant")
	fs.StringVar(&f.data, "data", issues.MemoryData, "SQLite database file, or :memory:")
	fs.Var(&f.origins, "allowed-origins", "browser origins allowed to call the endpoint (comma-separated, repeatable)")
	fs.BoolVar(&f.stateful, "stateful", false, "keep MCP sessions for clients that need server-to-client messages")
	fs.StringVar(&f.jwksURL, "jwks-url", "", "the issuer's JWK Set (default: discovered from the issuer's metadata)")
	fs.StringVar(&f.introspectionURL, "introspection-url", "", "check every token with this RFC 7662 endpoint; credentials from $"+envIntrospectionClientID+" and $"+envIntrospectionClientSecret)
	fs.Var(&f.algorithms, "algorithms", "accepted signature algorithms (default: every asymmetric one)")
	fs.DurationVar(&f.skew, "clock-skew", bearer.DefaultClockSkew, "tolerance for exp, nbf and iat (at most 5m)")
	fs.Int64Var(&f.maxBody, "max-body-bytes", issues.DefaultMaxBodyBytes, "largest request body accepted")
	fs.BoolVar(&f.insecure, "allow-insecure-http", false, "allow plain-http issuer, JWKS, introspection and resource URLs on hosts that are not loopback (tokens and keys then travel unprotected; never in production)")
}

// serveIssues serves the remote issue service over Streamable HTTP until
// interrupted. Its structured log, including the bound address, goes to
// stderr.
func (e *env) serveIssues(o *options, _ []string) error {
	f := &o.issues
	switch {
	case f.issuer == "":
		return usageError("server issues needs --issuer URL (the authorization server)")
	case f.resource == "":
		return usageError("server issues needs --resource URL (this server's resource identifier)")
	case f.tenantClaim == "":
		return usageError("--tenant-claim must not be empty: every issue belongs to a tenant")
	case f.maxBody <= 0:
		return usageError("--max-body-bytes must be positive")
	case f.skew <= 0:
		return usageError("--clock-skew must be positive")
	}
	if _, _, err := net.SplitHostPort(f.addr); err != nil {
		return usageError("--addr %q must be HOST:PORT", f.addr)
	}

	logger := slog.New(slog.NewJSONHandler(e.stderr, nil))
	vopts := &bearer.Options{
		JWKSURL:           f.jwksURL,
		Algorithms:        f.algorithms,
		ClockSkew:         f.skew,
		TenantClaim:       f.tenantClaim,
		AllowInsecureHTTP: f.insecure,
		Logger:            logger,
	}
	if f.introspectionURL != "" {
		vopts.Introspection = &bearer.Introspection{
			URL:          f.introspectionURL,
			ClientID:     os.Getenv(envIntrospectionClientID),
			ClientSecret: os.Getenv(envIntrospectionClientSecret),
		}
	} else if os.Getenv(envIntrospectionClientSecret) != "" {
		return usageError("$%s is set but --introspection-url is not", envIntrospectionClientSecret)
	}
	verifier, err := bearer.NewVerifier(f.issuer, f.resource, vopts)
	if err != nil {
		return usageError("%v", err)
	}
	if f.insecure {
		logger.Warn("plain http to hosts that are not loopback is allowed (--allow-insecure-http)")
	}

	srv, err := issues.New(e.ctx, verifier, &issues.Options{
		Data:           f.data,
		AllowedOrigins: f.origins,
		Stateful:       f.stateful,
		MaxBodyBytes:   f.maxBody,
		Logger:         logger,
		Version:        version(),
	})
	if err != nil {
		return usageError("%v", err)
	}
	defer srv.Close()

	ln, host, err := listen(f.addr)
	if err != nil {
		return err
	}
	if !egress.IsLoopbackHost(host) {
		logger.Warn("serving plain HTTP on an address that is not loopback; terminate TLS in front of this server")
	}
	return srv.Serve(e.ctx, ln)
}
