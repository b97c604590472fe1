package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
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

// checkConsoleSignIn checks, before anything starts, that serve --console
// can sign people in when serve.auth is set: serve.console names the
// console's client, and operators are named there, not by a flag.
func checkConsoleSignIn(o *options, cfg *config.Config) error {
	if cfg.Serve.Auth == nil {
		return nil
	}
	if cfg.Serve.Console == nil {
		return usageError("serve --console with serve.auth needs serve.console: the console's client at %s (client_id, registered with the redirect URI https://HOST/console/callback), so that people sign in there; see docs/console.md", cfg.Serve.Auth.Issuer)
	}
	if o.allPrincipals {
		return usageError("serve --console --all-principals with serve.auth would make everyone who signs in an operator: name the operators in serve.console.operators instead")
	}
	_, err := consoleSignIn(cfg, os.LookupEnv)
	return err
}

// consoleSignIn is the console's sign-in of serve.console, at serve.auth's
// issuer, with the client secret read from the host variable it names;
// nil without serve.auth.
func consoleSignIn(cfg *config.Config, lookup func(string) (string, bool)) (*console.SignIn, error) {
	a, c := cfg.Serve.Auth, cfg.Serve.Console
	if a == nil || c == nil {
		return nil, nil
	}
	tenant := airlock.ConfigPrincipal(cfg).Tenant
	si := &console.SignIn{Issuer: a.Issuer, ClientID: c.ClientID, Scopes: c.Scopes, TenantClaim: a.TenantClaim,
		UserClaim: a.UserClaim, DefaultTenant: tenant, Resource: a.Resource}
	if c.ClientSecretEnv != "" {
		v, ok := lookup(c.ClientSecretEnv)
		if !ok || v == "" {
			return nil, usageError("serve.console.client_secret_env names %s, which is not set: set it to the console's client secret, or remove client_secret_env for a public client", c.ClientSecretEnv)
		}
		si.ClientSecret = v
	}
	for _, op := range c.Operators {
		p := airlock.Principal{Tenant: op.Tenant, User: op.User}
		if p.Tenant == "" {
			p.Tenant = tenant
		}
		si.Operators = append(si.Operators, p)
	}
	return si, nil
}

// console serves the operator console on loopback until interrupted. The
// pages are up at once; the servers page fills in once the host has
// started the servers, which the console starts, as airlock serve does,
// when the page is first shown.
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
	cfg, st, err := e.configAndStore(&o.common, e.openStoreOf)
	if err != nil {
		return err
	}
	defer st.Close()
	opts := consoleOptions(o, cfg, slog.New(slog.DiscardHandler))
	opts.Store = st
	// The servers start when the servers page is first shown: a console
	// used for approvals, questions and records (beside an airlock serve
	// or run that has the servers already) starts none of its own. A
	// failure to start them leaves the rest of the console up and says
	// why.
	var (
		c        *console.Console
		starting sync.WaitGroup
		started  *session // set before starting is done
		mu       sync.Mutex
		stopped  bool // no start may begin once the console stops
	)
	opts.StartHost = func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		starting.Go(func() {
			s, err := e.sessionOf(&o.common, cfg)
			if err != nil {
				fmt.Fprintf(e.stderr, "airlock: the servers page stays empty: %v\n", err)
				return
			}
			started = s
			c.SetHost(s.h)
		})
	}
	c, err = console.New(opts)
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

	select {
	case err = <-errc:
	case <-e.ctx.Done():
	}
	srv.Close()
	// A page request still running may ask for a start: none begins now.
	mu.Lock()
	stopped = true
	mu.Unlock()
	starting.Wait()
	if started != nil {
		e.closeSession(started)
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
