package main

import (
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"runtime/pprof"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/auth/egress"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/console"
	"github.com/airlockhq/airlock/gateway"
	"github.com/airlockhq/airlock/metrics"
	"github.com/airlockhq/airlock/store"
)

const serveUsage = "airlock serve --stdio | --http ADDR [--console [--all-principals]] [--config FILE] [--state DIR]"

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
	case o.console && o.httpAddr == "":
		return usageError("serve --console needs --http ADDR: the console's pages are served beside /mcp, under %s", console.Prefix)
	case o.allPrincipals && !o.console:
		return usageError("serve --all-principals is for the console's viewers: add --console")
	}
	// What the configuration must allow is checked before anything
	// starts: listening beyond this machine (only with inbound
	// authentication), and the console's sign-in.
	var cfg *config.Config
	checked := func() (*config.Config, error) {
		var err error
		if cfg == nil {
			cfg, err = e.loadConfig(&o.common)
		}
		return cfg, err
	}
	tuneGC(os.Getenv)
	if o.httpAddr != "" {
		host, err := serveHost(o.httpAddr)
		if err != nil {
			return err
		}
		cfg, err := checked()
		if err != nil {
			return err
		}
		if cfg.Serve.Auth == nil && (host == "" || !egress.IsLoopbackHost(host)) {
			return notLoopback(o.httpAddr, host)
		}
		if _, err := metricsToken(cfg.Serve.MetricsTokenEnv, os.LookupEnv); err != nil {
			return err
		}
	}
	if o.console {
		cfg, err := checked()
		if err != nil {
			return err
		}
		if err := checkConsoleSignIn(o, cfg); err != nil {
			return err
		}
	}
	if path := os.Getenv(cpuProfileEnv); path != "" {
		stop, err := cpuProfile(path)
		if err != nil {
			return err
		}
		defer stop()
	}

	var g *gateway.Gateway
	var pages *console.Console // with --console
	var auth *config.ServeAuth // inbound authentication, over HTTP
	var consoleKey []byte      // the console's key, shared by the replicas
	e.hostOptions = func(cfg *config.Config, opts *airlock.Options) error {
		gopts := &gateway.Options{Logger: opts.Logger, Version: version(), Serve: cfg.Serve,
			MaxBodyBytes: int64(cfg.Limits.MaxMessageBytes)}
		if o.httpAddr != "" {
			// Tasks are requests of the HTTP endpoint's (gateway/taskwire.go).
			gopts.Tasks = serverTasks(cfg)
		}
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
		if o.httpAddr != "" {
			key, err := stateKey(cfg, opts.StateDir)
			if err != nil {
				return err
			}
			gopts.StateKey = key
			if consoleKey, err = hkdf.Key(sha256.New, key, nil, "airlock console", 32); err != nil {
				return err
			}
			token, err := metricsToken(cfg.Serve.MetricsTokenEnv, os.LookupEnv)
			if err != nil {
				return err
			}
			m := metrics.New()
			opts.Metrics, gopts.Metrics, gopts.Measures, gopts.MetricsToken = m, m.Handler(), m, token
		}
		if o.console {
			// The console is made on the host's store once it is open,
			// before anything is served.
			gopts.PagesPrefix = console.Prefix
			gopts.Pages = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { pages.ServeHTTP(w, r) })
		}
		g = gateway.New(gopts)
		opts.Approver, opts.CatalogChanged, opts.CatalogHeard, opts.ResourceUpdated = g, g.CatalogChanged, g.CatalogHeard, g.ResourceUpdated
		// Servers may ask during calls; each call puts their questions
		// to its own client (Call.Elicit, Call.Roots), or declines them.
		opts.Elicit, opts.Roots = g.Elicit, g.Roots
		return nil
	}
	// Over HTTP the address is taken first, so that a port in use is said
	// at once, and probes are answered while the servers start (/healthz
	// 200, everything else 503).
	var early *handoff
	stopStarting := func() {}
	if o.httpAddr != "" {
		cfg, err := checked()
		if err != nil {
			return err
		}
		ln, host, err := listen(o.httpAddr)
		if err != nil {
			return err
		}
		if cfg.Serve.Auth == nil && !egress.IsLoopbackHost(host) {
			// The name resolved to an address that is not loopback.
			ln.Close()
			return notLoopback(o.httpAddr, host)
		}
		early = newHandoff(ln)
		defer early.close()
		stopStarting = serveStarting(early.phase(false))
		fmt.Fprintf(e.stderr, "airlock: listening on http://%s; starting the servers (/healthz answers 200, /readyz 503 until they are up)\n", ln.Addr())
		defer func() { stopStarting() }()
	}
	var s *session
	var err error
	if cfg != nil {
		s, err = e.sessionOf(&o.common, cfg) // loaded for the checks above: once is enough
	} else {
		s, err = e.openSession(&o.common)
	}
	if err != nil {
		return err
	}
	defer e.closeSession(s)
	if err := g.Start(e.ctx, s.h); err != nil {
		return err
	}
	if o.console {
		co := consoleOptions(o, s.cfg, s.h.Logger())
		co.Store, co.Host, co.Key = s.h.Store(), s.h, consoleKey
		if co.SignIn, err = consoleSignIn(s.cfg, os.LookupEnv); err != nil {
			return err
		}
		if co.SignIn != nil {
			co.SignIn.SessionIdle = s.cfg.Serve.SessionIdleTimeout
		}
		if pages, err = console.New(co); err != nil {
			return usageError("%v", err)
		}
	}
	defer g.Close()

	if o.stdio {
		in, ok := e.stdin.(io.ReadCloser)
		if !ok {
			in = io.NopCloser(e.stdin)
		}
		return g.ServeStdio(e.ctx, in, nopWriteCloser{e.stdout})
	}
	stopStarting()
	stopStarting = func() {}
	ln := early.phase(true)
	fmt.Fprintf(e.stderr, "airlock: serving MCP at http://%s%s (Ctrl-C or SIGTERM to stop)\n", ln.Addr(), gateway.Endpoint)
	if pages != nil {
		fmt.Fprintf(e.stderr, "airlock: console at http://%s%s\n", ln.Addr(), console.Prefix)
		if auth != nil {
			fmt.Fprintf(e.stderr, "airlock: people sign in to the console at %s as client %s\n", auth.Issuer, s.cfg.Serve.Console.ClientID)
		}
	}
	if auth != nil {
		fmt.Fprintf(e.stderr, "airlock: each call is made for the caller its access token names (tokens of %s for %s)\n", auth.Issuer, auth.Resource)
	}
	return g.Serve(e.ctx, ln)
}

// stateKey is the key that signs the gateway's request states, derived
// from the audit trail's key (made now if there is none yet): replicas on
// one PostgreSQL database share that key file already, and so take each
// other's input_required rounds; one gateway keeps its rounds across a
// restart.
func stateKey(cfg *config.Config, stateDir string) ([]byte, error) {
	if stateDir == "" {
		stateDir = cfg.StateDir()
	}
	if err := airlock.MakeStateDir(stateDir); err != nil {
		return nil, err
	}
	chain, err := store.LoadChainKey(airlock.AuditKeyFile(cfg, stateDir), true)
	if err != nil {
		return nil, err
	}
	return hkdf.Key(sha256.New, chain, nil, "airlock gateway request state", 32)
}

// minMetricsToken is the shortest bearer token /metrics accepts.
const minMetricsToken = 16

// metricsToken reads the bearer token scrapers of /metrics must send from
// the host variable serve.metrics_token_env names, if it names one.
func metricsToken(name string, lookup func(string) (string, bool)) (string, error) {
	if name == "" {
		return "", nil
	}
	v, ok := lookup(name)
	switch {
	case !ok || v == "":
		return "", usageError("serve.metrics_token_env: the host variable %s is not set or empty: set it to the token scrapers of /metrics send (such as the output of openssl rand -hex 32)", name)
	case len(v) < minMetricsToken:
		return "", usageError("serve.metrics_token_env: the token in %s is shorter than %d characters: use a long random one (such as the output of openssl rand -hex 32)", name, minMetricsToken)
	}
	return v, nil
}

// The garbage collector of a long-lived session: the gateway, the shell
// and the agent loop. The go-sdk allocates a 32 KiB buffer for every JSON
// message it decodes, several for each call, while what the process keeps
// live is a few megabytes: at Go's default (GOGC=100) the collector would
// run dozens of times a second under load, for about a third of the
// process's CPU time. It runs at gcPercent instead, the heap growing to
// about nine times what is live between collections, and collects more
// often as the heap nears gcMemoryLimit (a soft limit). GOGC in the
// environment replaces both, GOMEMLIMIT the limit
// (docs/gateway.md#performance).
const (
	gcPercent     = 800
	gcMemoryLimit = 1 << 30
)

// tuneGC sets the collector's defaults for a long-lived session, unless
// getenv (the environment) sets GOGC, and the memory limit unless it sets
// GOMEMLIMIT: the runtime has applied those already.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(gcPercent)
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(gcMemoryLimit)
	}
}

// cpuProfileEnv names a file to which airlock serve writes a CPU profile of
// its own process, from its start until it ends (after the drain): for
// measuring the gateway under load (docs/gateway.md#performance). Unset,
// nothing is profiled.
const cpuProfileEnv = "AIRLOCK_SERVE_CPUPROFILE"

// cpuProfile starts profiling the process's CPU into path, and returns
// what stops it and writes the profile out.
func cpuProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", cpuProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %v", cpuProfileEnv, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
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

// serverTasks are the servers' tasks: mappings, by server id, or nil when
// none has one.
func serverTasks(cfg *config.Config) map[string]*config.Tasks {
	var out map[string]*config.Tasks
	for _, s := range cfg.Servers {
		if s.Tasks != nil {
			if out == nil {
				out = map[string]*config.Tasks{}
			}
			out[s.ID] = s.Tasks
		}
	}
	return out
}
