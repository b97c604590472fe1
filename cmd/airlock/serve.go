package main

import (
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/auth/egress"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/gateway"
)

const serveUsage = "airlock serve --stdio | --http ADDR [--config FILE] [--state DIR]"

// serve puts the governed catalog in front of MCP clients: one on
// stdin/stdout (--stdio), or many over Streamable HTTP at /mcp (--http),
// which listens on loopback only unless serve.auth makes it an OAuth
// resource server. SIGTERM or an interrupt drains calls in flight, then
// ends.
func (e *env) serve(o *options, _ []string) error {
	switch {
	case o.stdio && o.httpAddr != "":
		return usageError("serve takes --stdio or --http ADDR, not both")
	case !o.stdio && o.httpAddr == "":
		return usageError("serve needs --stdio (one client on stdin and stdout) or --http ADDR (Streamable HTTP at /mcp, such as --http 127.0.0.1:8080)")
	}
	if o.httpAddr != "" {
		host, err := serveHost(o.httpAddr)
		if err != nil {
			return err
		}
		if host == "" || !egress.IsLoopbackHost(host) {
			// Only inbound authentication lets the gateway listen
			// beyond this machine; it is checked before anything starts.
			cfg, err := e.loadConfig(&o.common)
			if err != nil {
				return err
			}
			if cfg.Serve.Auth == nil {
				return notLoopback(o.httpAddr, host)
			}
		}
	}

	var g *gateway.Gateway
	var auth *config.ServeAuth // inbound authentication, over HTTP
	e.hostOptions = func(cfg *config.Config, opts *airlock.Options) error {
		gopts := &gateway.Options{Logger: opts.Logger, Version: version(), Serve: cfg.Serve,
			MaxBodyBytes: int64(cfg.Limits.MaxMessageBytes)}
		if a := cfg.Serve.Auth; a != nil && o.httpAddr != "" {
			v, err := gateway.NewVerifier(a, opts.Logger)
			if err != nil {
				return usageError("serve.auth: %v", err)
			}
			gopts.Verifier, auth = v, a
		} else {
			// On stdio the one client is whoever started the process:
			// it acts for tenancy:, as the command line does.
			gopts.Serve.Auth = nil
		}
		g = gateway.New(gopts)
		opts.Approver, opts.CatalogChanged, opts.ResourceUpdated = g, g.CatalogChanged, g.ResourceUpdated
		// Servers may ask during calls; each call puts their questions
		// to its own client (Call.Elicit, Call.Roots), or declines them.
		opts.Elicit, opts.Roots = g.Elicit, g.Roots
		return nil
	}
	s, err := e.openSession(&o.common)
	if err != nil {
		return err
	}
	defer e.closeSession(s)
	if err := g.Start(e.ctx, s.h); err != nil {
		return err
	}
	defer g.Close()

	if o.stdio {
		in, ok := e.stdin.(io.ReadCloser)
		if !ok {
			in = io.NopCloser(e.stdin)
		}
		return g.ServeStdio(e.ctx, in, nopWriteCloser{e.stdout})
	}
	ln, host, err := listen(o.httpAddr)
	if err != nil {
		return err
	}
	if auth == nil && !egress.IsLoopbackHost(host) {
		// The name resolved to an address that is not loopback.
		ln.Close()
		return notLoopback(o.httpAddr, host)
	}
	fmt.Fprintf(e.stderr, "airlock: serving MCP at http://%s%s (Ctrl-C or SIGTERM to stop)\n", ln.Addr(), gateway.Endpoint)
	if auth != nil {
		fmt.Fprintf(e.stderr, "airlock: each call is made for the caller its access token names (tokens of %s for %s)\n", auth.Issuer, auth.Resource)
	}
	return g.Serve(e.ctx, ln)
}

const loopbackOnly = "without inbound authentication (serve.auth in the configuration) the gateway listens on a loopback address only: use --http 127.0.0.1:PORT, [::1]:PORT or localhost:PORT, or configure serve.auth (docs/gateway.md)"

// serveHost returns the host of an --http address, which must be
// HOST:PORT ("" for every address).
func serveHost(addr string) (string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", usageError("--http %q must be HOST:PORT, such as 127.0.0.1:8080", addr)
	}
	return host, nil
}

// notLoopback is the refusal of an address beyond loopback without
// inbound authentication.
func notLoopback(addr, host string) error {
	if host == "" {
		return usageError("--http %s would listen on every address; %s", addr, loopbackOnly)
	}
	return usageError("--http %s: %s is not a loopback address; %s", addr, host, loopbackOnly)
}

// listen listens on addr (HOST:PORT) and returns the listener and the host
// it bound; a failure is a usage error.
func listen(addr string) (net.Listener, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) {
			err = oe.Err
		}
		return nil, "", usageError("cannot listen on %s: %v", addr, err)
	}
	host, _, _ := net.SplitHostPort(ln.Addr().String())
	return ln, host, nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
