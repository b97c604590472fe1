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
// which without inbound authentication listens on loopback only. SIGTERM
// or an interrupt drains calls in flight, then ends.
func (e *env) serve(o *options, _ []string) error {
	switch {
	case o.stdio && o.httpAddr != "":
		return usageError("serve takes --stdio or --http ADDR, not both")
	case !o.stdio && o.httpAddr == "":
		return usageError("serve needs --stdio (one client on stdin and stdout) or --http ADDR (Streamable HTTP at /mcp, such as --http 127.0.0.1:8080)")
	}
	if o.httpAddr != "" {
		if err := checkServeAddr(o.httpAddr); err != nil {
			return err
		}
	}

	var g *gateway.Gateway
	e.hostOptions = func(cfg *config.Config, opts *airlock.Options) {
		g = gateway.New(&gateway.Options{Logger: opts.Logger, Version: version(), Serve: cfg.Serve,
			MaxBodyBytes: int64(cfg.Limits.MaxMessageBytes)})
		opts.Approver, opts.CatalogChanged = g, g.CatalogChanged
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
	if !egress.IsLoopbackHost(host) {
		// The name resolved to an address that is not loopback.
		ln.Close()
		return usageError("--http %s: %s is not a loopback address; %s", o.httpAddr, host, loopbackOnly)
	}
	fmt.Fprintf(e.stderr, "airlock: serving MCP at http://%s%s (Ctrl-C or SIGTERM to stop)\n", ln.Addr(), gateway.Endpoint)
	return g.Serve(e.ctx, ln)
}

const loopbackOnly = "without inbound authentication (serve.auth, not in this version) the gateway listens on a loopback address only: use --http 127.0.0.1:PORT, [::1]:PORT or localhost:PORT"

// checkServeAddr refuses an --http address that is not HOST:PORT with a
// loopback host.
func checkServeAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	switch {
	case err != nil:
		return usageError("--http %q must be HOST:PORT, such as 127.0.0.1:8080", addr)
	case host == "":
		return usageError("--http %s would listen on every address; %s", addr, loopbackOnly)
	case !egress.IsLoopbackHost(host):
		return usageError("--http %s: %s is not a loopback address; %s", addr, host, loopbackOnly)
	}
	return nil
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
