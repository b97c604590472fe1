package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/auth/egress"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/console"
)

const consoleUsage = "airlock console [--http ADDR] [--all-principals] [--config FILE] [--state DIR]"

// defaultConsoleAddr is where airlock console listens without --http.
const defaultConsoleAddr = "127.0.0.1:7410"

// consoleOptions makes the console's options for cfg and its store: it
// acts for tenancy: (every principal with --all-principals) in the name
// of the person running it.
func consoleOptions(o *options, cfg *config.Config, logger *slog.Logger) console.Options {
	state := stateDir(&o.common, cfg)
	return console.Options{Config: cfg, StateDir: state, Logger: logger,
		Actor:   airlock.Actor{Principal: airlock.ConfigPrincipal(cfg), By: whoami(), AllPrincipals: o.allPrincipals},
		RunLive: func(id string) bool { return runLive(state, id) }}
}

// console serves the operator console on loopback until interrupted. The
// pages are up at once; the servers page fills in once the host has
// started the servers, which the console starts as airlock serve does.
func (e *env) console(o *options, _ []string) error {
	addr := o.httpAddr
	if addr == "" {
		addr = defaultConsoleAddr
	}
	host, err := serveHost(addr)
	if err != nil {
		return err
	}
	if host == "" || !egress.IsLoopbackHost(host) {
		return consoleNotLoopback(addr)
	}
	cfg, err := e.loadConfig(&o.common)
	if err != nil {
		return err
	}
	st, err := e.openStoreOf(&o.common, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	opts := consoleOptions(o, cfg, slog.New(slog.DiscardHandler))
	opts.Store = st
	c, err := console.New(opts)
	if err != nil {
		return usageError("%v", err)
	}
	ln, bound, err := listen(addr)
	if err != nil {
		return err
	}
	if !egress.IsLoopbackHost(bound) {
		ln.Close()
		return consoleNotLoopback(addr)
	}
	mux := http.NewServeMux()
	mux.Handle(console.Prefix, c)
	mux.Handle("GET /{$}", http.RedirectHandler(console.Prefix, http.StatusSeeOther))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(e.stderr, "airlock: console at http://%s%s, acting for %s (Ctrl-C to stop)\n", ln.Addr(), console.Prefix, actingFor(opts.Actor))

	// The servers start meanwhile; a failure to start them leaves the
	// rest of the console up and says why.
	started := make(chan *session, 1)
	go func() {
		s, err := e.sessionOf(&o.common, cfg)
		if err != nil {
			fmt.Fprintf(e.stderr, "airlock: the servers page stays empty: %v\n", err)
			started <- nil
			return
		}
		c.SetHost(s.h)
		started <- s
	}()

	select {
	case err = <-errc:
	case <-e.ctx.Done():
	}
	srv.Close()
	if s := <-started; s != nil {
		e.closeSession(s)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// actingFor names whom a console acts for, for a person.
func actingFor(as airlock.Actor) string {
	if as.AllPrincipals {
		return "every tenant and user (operator)"
	}
	return as.Principal.Tenant + "/" + as.Principal.User
}

func consoleNotLoopback(addr string) error {
	return usageError("--http %s: the console listens on a loopback address only: use --http 127.0.0.1:PORT, [::1]:PORT or localhost:PORT", addr)
}
