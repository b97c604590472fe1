package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The gateway benchmark: calls per second with many calls in flight, and
// their latency, through three Streamable HTTP endpoints that serve the same
// echo tool, each a process of its own:
//
//	bare       this binary, re-executed, serving the tool itself with the
//	           go-sdk's stateless Streamable HTTP handler
//	airlock    airlock serve --http, in front of the stdio echo server
//	mcp-proxy  mcp-proxy (npm), in front of the same stdio echo server
//
// One go-sdk client in this process drives each of them the same way: one
// 2026-07-28 session (stateless: every call is a POST of its own), shared by
// as many goroutines as there are calls in flight.

// gatewayEra is the protocol version the client speaks to every endpoint.
const gatewayEra = "2026-07-28"

// gatewayOptions say what to run the gateway benchmark with.
type gatewayOptions struct {
	calls, rounds, inflight int
	airlock                 string // the airlock binary; empty: build it
	node, mcpProxy          string // Node.js and mcp-proxy's bin script
}

// endpoint is one side of the gateway benchmark: a process serving MCP
// over Streamable HTTP on loopback.
type endpoint struct {
	name    string // as the report names it
	tool    string // the echo tool's name there
	cmd     *exec.Cmd
	out     *tail         // what the process printed, stdout and stderr
	exited  chan struct{} // closed when the process has ended
	url     string
	session *mcp.ClientSession
	era     string // the protocol version the session negotiated
}

// start starts the endpoint's process, its output going to e.out. With
// announce, it waits until the process prints its URL, the first group of
// announce's match.
func (e *endpoint) start(cmd *exec.Cmd, announce *regexp.Regexp) error {
	e.cmd, e.out, e.exited = cmd, &tail{}, make(chan struct{})
	cmd.Stdout, cmd.Stderr = e.out, e.out
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		cmd.Wait()
		close(e.exited)
	}()
	if announce == nil {
		return nil
	}
	url, err := e.waitFor(announce)
	if err != nil {
		e.close()
		return err
	}
	e.url = url
	return nil
}

// waitFor waits until the process prints a line that re matches, and
// returns the first group of the match.
func (e *endpoint) waitFor(re *regexp.Regexp) (string, error) {
	deadline := time.After(30 * time.Second)
	for {
		if m := re.FindStringSubmatch(e.out.String()); m != nil {
			return m[1], nil
		}
		select {
		case <-e.exited:
			return "", fmt.Errorf("it ended without printing %s:\n%s", re, e.out)
		case <-deadline:
			return "", fmt.Errorf("it did not print %s within 30s:\n%s", re, e.out)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// gatewaySide is what one endpoint measured.
type gatewaySide struct {
	name, era string
	lat       []time.Duration // every call's latency
	wall      time.Duration   // the time all the calls took, rounds added up
	// The CPU time the calls took in the client (this process), in the
	// endpoint's process, and in the echo server behind it (the processes
	// the endpoint started).
	clientCPU, endpointCPU, upstreamCPU time.Duration
	skipped                             string // why the side was not measured, if it was not
}

// callsPerSecond is the side's throughput.
func (s *gatewaySide) callsPerSecond() float64 {
	return float64(len(s.lat)) / s.wall.Seconds()
}

// gatewayCalls starts the three endpoints and measures them, alternating in
// rounds. A missing mcp-proxy is reported as skipped, not as a failure.
func gatewayCalls(ctx context.Context, o gatewayOptions) ([]*gatewaySide, error) {
	dir, err := os.MkdirTemp("", "callbench-gateway")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if o.airlock == "" {
		if o.airlock, err = buildAirlock(dir); err != nil {
			return nil, err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}

	var eps []*endpoint
	defer func() {
		for _, e := range eps {
			e.close()
		}
	}()
	bare, err := startBare(exe)
	if err != nil {
		return nil, fmt.Errorf("bare go-sdk server: %v", err)
	}
	eps = append(eps, bare)
	for _, a := range []struct{ name, gogc string }{{"Airlock", ""}, {"Airlock, GOGC=100", "100"}} {
		gw, err := startAirlock(a.name, o.airlock, exe, filepath.Join(dir, fmt.Sprint(len(eps))), a.gogc)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", a.name, err)
		}
		eps = append(eps, gw)
	}
	proxySkipped := ""
	switch missing, err := installed(o.node, o.mcpProxy); {
	case err != nil:
		return nil, err
	case missing != "":
		proxySkipped = fmt.Sprintf("not run: %s is not installed (scripts/setup-mcp-proxy.sh installs it; make bench runs that)", missing)
		fmt.Fprintf(os.Stderr, "callbench: mcp-proxy %s\n", proxySkipped)
	default:
		px, err := startMCPProxy(o.node, o.mcpProxy, exe)
		if err != nil {
			return nil, fmt.Errorf("mcp-proxy: %v", err)
		}
		eps = append(eps, px)
	}

	// Every side gets its own client, with room for a keep-alive connection
	// per call in flight: Go's default of two idle connections per host
	// would have most calls open a new connection.
	for _, e := range eps {
		hc := &http.Client{Transport: &http.Transport{MaxIdleConns: o.inflight, MaxIdleConnsPerHost: o.inflight}}
		if err := e.connect(ctx, hc); err != nil {
			return nil, fmt.Errorf("%s: %v", e.name, err)
		}
	}

	sides := make([]*gatewaySide, len(eps))
	for i, e := range eps {
		sides[i] = &gatewaySide{name: e.name, era: e.era}
	}
	// Warm up, then alternate.
	for _, e := range eps {
		if _, _, err := e.load(ctx, o.calls/o.rounds, o.inflight); err != nil {
			return nil, fmt.Errorf("%s: %v", e.name, err)
		}
	}
	per := o.calls / o.rounds
	for range o.rounds {
		for i, e := range eps {
			pid := e.cmd.Process.Pid
			client, endpoint, upstream := selfCPU(), procCPU(pid), childrenCPU(pid)
			lat, wall, err := e.load(ctx, per, o.inflight)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", e.name, err)
			}
			sides[i].lat = append(sides[i].lat, lat...)
			sides[i].wall += wall
			sides[i].clientCPU += selfCPU() - client
			sides[i].endpointCPU += procCPU(pid) - endpoint
			sides[i].upstreamCPU += childrenCPU(pid) - upstream
		}
	}
	if proxySkipped != "" {
		sides = append(sides, &gatewaySide{name: "mcp-proxy", skipped: proxySkipped})
	}
	return sides, nil
}

// load makes n calls, inflight at a time, and returns each one's latency
// and how long they took together.
func (e *endpoint) load(ctx context.Context, n, inflight int) ([]time.Duration, time.Duration, error) {
	params := &mcp.CallToolParams{Name: e.tool, Arguments: map[string]any{"text": "hello, benchmark"}}
	lat, wall, err := concurrently(ctx, n, inflight, func(ctx context.Context) error {
		res, err := e.session.CallTool(ctx, params)
		if err == nil && res.IsError {
			err = fmt.Errorf("tool error: %v", res.Content)
		}
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("%v\n%s", err, e.out)
	}
	return lat, wall, nil
}

// startBare starts this binary as a go-sdk Streamable HTTP server of the
// echo tool (serveHTTP), which prints its URL when it listens.
func startBare(exe string) (*endpoint, error) {
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envServer+"=http")
	e := &endpoint{name: "bare go-sdk", tool: "echo"}
	if err := e.start(cmd, listening); err != nil {
		return nil, err
	}
	return e, nil
}

var listening = regexp.MustCompile(`listening at (http://\S+/mcp)`)

// serveHTTP serves the echo tool over Streamable HTTP on a free loopback
// port, as a server built on the go-sdk alone would (stateless, which a
// 2026-07-28 client needs), and prints the endpoint's URL.
func serveHTTP(s *mcp.Server) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening at http://%s/mcp\n", ln.Addr())
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	if err := http.Serve(ln, h); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

var servingAt = regexp.MustCompile(`serving MCP at (http://\S+/mcp)`)

// buildAirlock builds the airlock binary into dir and returns its path.
func buildAirlock(dir string) (string, error) {
	bin := filepath.Join(dir, "airlock")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/airlockhq/airlock/cmd/airlock").CombinedOutput(); err != nil {
		return "", fmt.Errorf("building airlock: %v\n%s", err, out)
	}
	return bin, nil
}

// startAirlock starts airlock serve --http in front of the stdio echo
// server (exe, re-executed), configured as callbench's own host is: the
// echo tool is a read, allowed without asking. The configuration and the
// state live in dir. A gogc other than "" is the gateway's GOGC.
func startAirlock(name, airlock, exe, dir, gogc string) (*endpoint, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "airlock.yaml")
	yaml := fmt.Sprintf(`servers:
  - id: bench
    command: %q
    env: {%s: echo}
    allowed_tools: [echo]
policy:
  tools:
    - {server: bench, tool: echo, effect: read}
`, exe, envServer)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(airlock, "serve", "--http", "127.0.0.1:0", "--config", cfg)
	cmd.Dir = dir
	// Only the gateway: the echo server it starts inherits no GOGC.
	cmd.Env = append(os.Environ(), "GOGC="+gogc)
	e := &endpoint{name: name, tool: "bench__echo"}
	if err := e.start(cmd, servingAt); err != nil {
		return nil, err
	}
	return e, nil
}

// startMCPProxy starts mcp-proxy on the pinned Node.js in front of the
// stdio echo server, as its README runs it, on a free loopback port.
func startMCPProxy(node, script, exe string) (*endpoint, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(node, script, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--", exe)
	cmd.Env = append(os.Environ(), envServer+"=echo")
	e := &endpoint{name: "mcp-proxy", tool: "echo", url: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)}
	if err := e.start(cmd, nil); err != nil {
		return nil, err
	}
	return e, nil
}

// installed returns the first of paths that does not exist, or "".
func installed(paths ...string) (string, error) {
	for _, p := range paths {
		_, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			return p, nil
		}
		if err != nil {
			return "", err
		}
	}
	return "", nil
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// connect opens the endpoint's session, trying for a while: a process that
// has just started may not listen yet.
func (e *endpoint) connect(ctx context.Context, hc *http.Client) error {
	c := mcp.NewClient(&mcp.Implementation{Name: "callbench", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	deadline := time.Now().Add(30 * time.Second)
	for {
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url, HTTPClient: hc, DisableStandaloneSSE: true},
			&mcp.ClientSessionOptions{ProtocolVersion: gatewayEra})
		if err == nil {
			e.session, e.era = cs, cs.InitializeResult().ProtocolVersion
			return nil
		}
		select {
		case <-e.exited:
			return fmt.Errorf("connect to %s: %v; the process ended:\n%s", e.url, err, e.out)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("connect to %s: %v\n%s", e.url, err, e.out)
		}
	}
}

// close ends the session and the process: SIGTERM, then a kill if it has
// not ended within 10s.
func (e *endpoint) close() {
	if e.session != nil {
		e.session.Close()
	}
	e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.exited:
	case <-time.After(10 * time.Second):
		e.cmd.Process.Kill()
		<-e.exited
	}
}

// selfCPU is the CPU time this process has used, user and system.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is the CPU time, user and system, that the process pid has
// used, from /proc (Linux; 0 elsewhere).
func procCPU(pid int) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command, which is in parentheses and may hold
	// anything: state is field 3, utime and stime are 14 and 15.
	_, rest, ok := strings.Cut(string(stat), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(utime+stime) * tick
}

// childrenCPU is the CPU time that the descendants of the process pid have
// used.
func childrenCPU(pid int) time.Duration {
	var d time.Duration
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		children, _ := os.ReadFile(t)
		for _, c := range strings.Fields(string(children)) {
			if n, err := strconv.Atoi(c); err == nil {
				d += procCPU(n) + childrenCPU(n)
			}
		}
	}
	return d
}

// tail keeps the last 8 KiB written to it: a process's output, shown when
// it fails.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - 8<<10; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// renderGateways writes the gateway section of the report.
func renderGateways(w func(string, ...any), o gatewayOptions, sides []*gatewaySide) {
	w("## Throughput through a gateway: %d calls in flight (%d calls each)\n\n", o.inflight, o.calls)
	w("Streamable HTTP endpoints on loopback, each a process of its own, serve the same echo tool:\n\n")
	w("- **bare go-sdk**: the benchmark binary serving the tool itself with the go-sdk's stateless Streamable HTTP\n")
	w("  handler: no gateway, no second process;\n")
	w("- **Airlock**: `airlock serve --http 127.0.0.1:0` in front of the stdio echo server above, the tool a read that\n")
	w("  policy allows, the configuration's defaults otherwise (`max_concurrency` 16: the other calls wait for a slot\n")
	w("  in the gateway); every call runs the whole pipeline, audit trail included;\n")
	w("  `airlock serve --http` runs Go's garbage collector at GOGC=800 with a 1 GiB soft memory limit unless GOGC is\n")
	w("  set (docs/gateway.md#performance);\n")
	w("- **Airlock, GOGC=100**: the same with the gateway run at Go's default collector setting, for comparison;\n")
	w("- **mcp-proxy** (npm, on the pinned Node.js 22): `mcp-proxy --host 127.0.0.1 --port PORT -- ECHO-SERVER`, its\n")
	w("  defaults otherwise, in front of the same stdio echo server.\n\n")
	w("One go-sdk client in the benchmark process drives each side the same way: one session, shared by %d\n", o.inflight)
	w("goroutines that each make calls back to back, over keep-alive connections; the sides alternate in %d rounds\n", o.rounds)
	w("after a warm-up. The client offers %s to every side; the era row says what each negotiated (2026-07-28\n", gatewayEra)
	w("is stateless: every call is a POST of its own, with no session). Toward the echo server Airlock speaks\n")
	w("2026-07-28 and mcp-proxy 2025-11-25 (its default, `--upstreamProtocol legacy`). calls/s is the calls of all\n")
	w("rounds over the time they took; the latencies are of single calls, with %d in flight. The CPU rows are the CPU\n", o.inflight)
	w("time each process used in the measured rounds (from /proc), per call: every side keeps the machine's CPUs\n")
	w("busy, so calls/s follows the CPU per call of all three processes. docs/gateway.md#performance says where\n")
	w("the gateway's time goes.\n\n")

	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
	row := func(label string, cell func(*gatewaySide) string) {
		w("| %s |", label)
		for _, s := range sides {
			if s.skipped != "" {
				w(" – |")
				continue
			}
			w(" %s |", cell(s))
		}
		w("\n")
	}
	w("|")
	for _, s := range sides {
		w(" | %s", s.name)
	}
	w(" |\n|---|")
	for range sides {
		w("---|")
	}
	w("\n")
	row("era", func(s *gatewaySide) string { return s.era })
	row("calls/s", func(s *gatewaySide) string { return fmt.Sprintf("%.0f", s.callsPerSecond()) })
	row("p50", func(s *gatewaySide) string { return ms(quantile(s.lat, .5)) })
	row("p99", func(s *gatewaySide) string { return ms(quantile(s.lat, .99)) })
	perCall := func(d time.Duration, s *gatewaySide) string {
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)/float64(len(s.lat)))
	}
	row("CPU per call: client", func(s *gatewaySide) string { return perCall(s.clientCPU, s) })
	row("CPU per call: endpoint", func(s *gatewaySide) string { return perCall(s.endpointCPU, s) })
	row("CPU per call: echo server behind it", func(s *gatewaySide) string {
		if s.upstreamCPU == 0 {
			return "–"
		}
		return perCall(s.upstreamCPU, s)
	})
	row("CPU per call: all three", func(s *gatewaySide) string { return perCall(s.clientCPU+s.endpointCPU+s.upstreamCPU, s) })
	w("\n")

	by := map[string]*gatewaySide{}
	for _, s := range sides {
		by[s.name] = s
	}
	w("| calls/s | ratio | goal |\n|---|---|---|\n")
	for _, a := range sides {
		if !strings.HasPrefix(a.name, "Airlock") {
			continue
		}
		for _, c := range []struct {
			other string
			goal  float64
		}{{"bare go-sdk", 0.85}, {"mcp-proxy", 2}} {
			s := by[c.other]
			if s.skipped != "" {
				w("| %s / %s | %s | ≥ %.2f |\n", a.name, c.other, s.skipped, c.goal)
				continue
			}
			ratio := a.callsPerSecond() / s.callsPerSecond()
			met := "met"
			if ratio < c.goal {
				met = "missed"
			}
			w("| %s / %s | %.2f | ≥ %.2f, %s |\n", a.name, c.other, ratio, c.goal, met)
		}
	}
	w("\n")
}
