package airlock_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/servers/workspace"
)

// The test binary doubles as the MCP servers these tests talk to: with
// AIRLOCK_TEST_SERVER set, TestMain serves instead of running tests, so
// process handling is tested against real subprocesses.
const (
	envMode = "AIRLOCK_TEST_SERVER"
	envMark = "AIRLOCK_TEST_MARK" // a file the server appends what it saw to
	envRaw  = "AIRLOCK_TEST_RAW"  // for mode "raw": method → result JSON, or "ignore"
	// envStubborn makes modes "escaper" and "raw" ignore the end of stdin.
	envStubborn = "AIRLOCK_TEST_STUBBORN"
	// envIgnoreTerm makes mode "silent" ignore SIGTERM.
	envIgnoreTerm = "AIRLOCK_TEST_IGNORE_TERM"
	// envAsk lists the requests mode "raw" sends the client.
	envAsk = "AIRLOCK_TEST_ASK"
	// envKind says what a leftover is: in the group, setsid, or a daemon.
	envKind = "AIRLOCK_TEST_KIND"
	// envBanner is what mode "banner" writes on stdout before it serves.
	envBanner = "AIRLOCK_TEST_BANNER"
)

func serveTestServer(mode string) {
	ctx := context.Background()
	switch mode {
	case "sdk":
		err := newTestServer().Run(ctx, &mcp.StdioTransport{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
	case "grandchild":
		// Start a grandchild in our process group that would outlive us,
		// as a wrapper like sh -c or npx does, then serve.
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), envMode+"=sleep")
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		mark(fmt.Sprintf("grandchild %d", cmd.Process.Pid))
		newTestServer().Run(ctx, &mcp.StdioTransport{})
	case "gated":
		// Starts serving only once the gate file exists.
		for {
			if _, err := os.Stat(os.Getenv(envMark) + ".gate"); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		newTestServer().Run(ctx, &mcp.StdioTransport{})
	case "sleep":
		time.Sleep(time.Hour)
	case "silent":
		// Never answers, and keeps running when stdin closes: stopping
		// it takes the grace period, then SIGTERM. With
		// AIRLOCK_TEST_IGNORE_TERM set, it ignores SIGTERM too.
		if os.Getenv(envIgnoreTerm) != "" {
			signal.Ignore(syscall.SIGTERM)
		}
		mark(fmt.Sprintf("pid %d", os.Getpid()))
		fmt.Fprintln(os.Stderr, "loading the index with API_KEY="+os.Getenv("API_KEY"))
		time.Sleep(time.Hour)
	case "banner":
		// Greets on stdout, as a careless server does, then serves.
		fmt.Fprint(os.Stdout, os.Getenv(envBanner))
		fmt.Fprintln(os.Stderr, "server started")
		newTestServer().Run(ctx, &mcp.StdioTransport{})
	case "escaper":
		// Leave behind what a careless or hostile server may: a child in
		// our process group, one that left it (setsid), and a daemon whose
		// parent exits at once (a double fork); then serve. With
		// AIRLOCK_TEST_STUBBORN set, keep running when stdin closes.
		mark(fmt.Sprintf("pid %d", os.Getpid()))
		spawn("leftover", "group")
		spawn("leftover", "setsid")
		spawn("daemonize", "daemon")
		if os.Getenv(envStubborn) != "" {
			go newTestServer().Run(ctx, &mcp.StdioTransport{})
			time.Sleep(time.Hour)
		}
		newTestServer().Run(ctx, &mcp.StdioTransport{})
	case "daemonize":
		spawn("leftover", "daemon")
		// Exit at once: the leftover is orphaned.
	case "leftover":
		// Sleep AIRLOCK_TEST_LIFETIME (default an hour), in a session of
		// our own unless in the group.
		kind := os.Getenv(envKind)
		if kind != "group" {
			syscall.Setsid()
		}
		mark(fmt.Sprintf("leftover %d %s", os.Getpid(), kind))
		d, err := time.ParseDuration(os.Getenv("AIRLOCK_TEST_LIFETIME"))
		if err != nil {
			d = time.Hour
		}
		time.Sleep(d)
	case "host":
		serveAsHost()
	case "durable-host":
		durableHost(os.Getenv(envDurableHost))
	case "flood":
		// A chatty server: 20 MB of stderr, then its last words.
		w := bufio.NewWriter(os.Stderr)
		noise := strings.Repeat("x", 90)
		for i := range 200_000 {
			fmt.Fprintf(w, "noise %06d %s\n", i, noise)
		}
		w.Flush()
		fmt.Fprintln(os.Stderr, "fatal: cannot open the database")
		os.Exit(7)
	case "stubborn":
		// Keeps running when stdin closes, so Close has to escalate.
		mark(fmt.Sprintf("pid %d", os.Getpid()))
		go newTestServer().Run(ctx, &mcp.StdioTransport{})
		time.Sleep(time.Hour)
	case "workspace":
		ws, err := workspace.New(os.Getenv("AGENT_WORKSPACE_ROOT"), nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		ws.Run(ctx, &mcp.StdioTransport{})
	case "watchcwd":
		// Record, once the host has let go of us, whether our worktree was
		// still there: a host that removes it first gets caught.
		newTestServer().Run(ctx, &mcp.StdioTransport{})
		if _, err := os.Stat(os.Getenv("AGENT_WORKSPACE_ROOT")); err == nil {
			mark("worktree present at exit")
		} else {
			mark("worktree gone at exit")
		}
	case "holder":
		holdTaskAndDie()
	case "hold":
		// The SDK server with the tool hold, for limits across replicas.
		s := newTestServer()
		addHold(s)
		s.Run(ctx, &mcp.StdioTransport{})
	case "leaseholder":
		holdLeaseAndDie()
	case "raw":
		serveRaw()
	case "exit":
		fmt.Fprintln(os.Stderr, "fatal: cannot open the database")
		os.Exit(7)
	default:
		fmt.Fprintln(os.Stderr, "unknown test server mode", mode)
		os.Exit(2)
	}
	os.Exit(0)
}

// spawn starts this test binary in mode, as a child that is not waited for;
// kind is its AIRLOCK_TEST_KIND.
func spawn(mode, kind string) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envMode+"="+mode, envKind+"="+kind)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "test server:", err)
		os.Exit(1)
	}
}

// mark appends a line to the mark file, so that a test can see what the
// server process observed.
func mark(line string) {
	path := os.Getenv(envMark)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

func text(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }

// newTestServer builds the SDK server with the tools the tests call. Its
// schemas are written out by hand so that tests control them exactly.
func newTestServer() *mcp.Server {
	opts := &mcp.ServerOptions{}
	if ttl := os.Getenv("AIRLOCK_TEST_TTL_MS"); ttl != "" {
		// How long (and for whom) a client may keep the tool list.
		ms, _ := strconv.Atoi(ttl)
		scope := os.Getenv("AIRLOCK_TEST_SCOPE")
		opts.SetCacheable = func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			c.TTLMs, c.CacheScope = ms, scope
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "airlock-test", Version: "1"}, opts)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok {
				mark("call " + p.Name + " " + string(p.Arguments))
			} else {
				mark(method)
			}
			return next(ctx, method, req)
		}
	})
	// A resource far larger than any limit: the host must stay bounded.
	s.AddResource(&mcp.Resource{URI: "test://huge", Name: "huge", MIMEType: "application/octet-stream"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Blob: make([]byte, 100<<20)}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "test://small", Name: "small"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "small"}}}, nil
		})
	obj := func(s string) json.RawMessage { return json.RawMessage(s) }
	add := func(t *mcp.Tool, h mcp.ToolHandler) {
		if t.InputSchema == nil {
			t.InputSchema = obj(`{"type":"object"}`)
		}
		s.AddTool(t, h)
	}
	add(&mcp.Tool{
		Name:         "echo",
		Description:  "Echo the text back.",
		InputSchema:  obj(`{"type":"object","properties":{"text":{"type":"string","maxLength":100000}},"required":["text"],"additionalProperties":false}`),
		OutputSchema: obj(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ Text string }
		json.Unmarshal(req.Params.Arguments, &in)
		return &mcp.CallToolResult{Content: text(in.Text), StructuredContent: map[string]any{"text": in.Text}}, nil
	})
	add(&mcp.Tool{Name: "slow", Description: "Wait until cancelled."}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		mark("cancelled slow")
		return nil, ctx.Err()
	})
	add(&mcp.Tool{
		Name:        "progress",
		Description: "Report progress every 100ms, steps times, then answer.",
		InputSchema: obj(`{"type":"object","properties":{"steps":{"type":"integer"}}}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ Steps int }
		json.Unmarshal(req.Params.Arguments, &in)
		for i := range in.Steps {
			select {
			case <-ctx.Done():
				mark("cancelled progress")
				return nil, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i + 1)})
		}
		return &mcp.CallToolResult{Content: text("done")}, nil
	})
	add(&mcp.Tool{Name: "logs", Description: "Write a debug, an info and a warning log message, then answer."},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for _, l := range []string{"debug", "info", "warning"} {
				// A careless server logs its credential too.
				//lint:ignore SA1019 writing log messages on purpose
				req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(l), Logger: "logs", Data: map[string]any{"level": l, "key": os.Getenv("API_KEY")}})
			}
			return &mcp.CallToolResult{Content: text("logged")}, nil
		})
	if _, err := os.Stat(os.Getenv(envMark) + ".extra"); err == nil {
		// A server that gained a tool since it last ran.
		add(&mcp.Tool{Name: "extra", Description: "A tool added later."}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text("extra")}, nil
		})
	}
	add(&mcp.Tool{Name: "crash", Description: "Exit in the middle of a call, after writing stderr on stderr."}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ Stderr string }
		json.Unmarshal(req.Params.Arguments, &in)
		fmt.Fprint(os.Stderr, in.Stderr)
		os.Exit(3)
		return nil, nil
	})
	add(&mcp.Tool{
		Name:        "big",
		Description: "Return a text of the given size.",
		InputSchema: obj(`{"type":"object","properties":{"bytes":{"type":"integer","minimum":0}},"required":["bytes"]}`),
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ Bytes int }
		json.Unmarshal(req.Params.Arguments, &in)
		return &mcp.CallToolResult{Content: text(strings.Repeat("x", in.Bytes))}, nil
	})
	add(&mcp.Tool{Name: "media", Description: "Return an image, audio and an embedded resource."}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "here you go"},
			&mcp.ImageContent{Data: pngBytes, MIMEType: "image/png"},
			&mcp.AudioContent{Data: []byte("RIFF....WAVE"), MIMEType: "audio/wav"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "embedded notes"}},
		}}, nil
	})
	add(&mcp.Tool{
		Name:         "badout",
		Description:  "Violate the output schema.",
		OutputSchema: obj(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`),
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text(`{"n":"seven"}`), StructuredContent: map[string]any{"n": "seven"}}, nil
	})
	add(&mcp.Tool{
		Name:         "noout",
		Description:  "Omit structured content although an output schema exists.",
		OutputSchema: obj(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text("7")}, nil
	})
	add(&mcp.Tool{Name: "env", Description: "Report parts of the environment."}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		wd, _ := os.Getwd()
		_, secret := os.LookupEnv("AIRLOCK_TEST_SECRET")
		if key := os.Getenv("API_KEY"); key != "" {
			// A careless server logs its credential.
			fmt.Fprintln(os.Stderr, "using API_KEY="+key)
		}
		return &mcp.CallToolResult{Content: text(fmt.Sprintf("HOME=%s\nTMPDIR=%s\nCWD=%s\nGREETING=%s\nSECRET=%v\nAPI_KEY=%s",
			os.Getenv("HOME"), os.Getenv("TMPDIR"), wd, os.Getenv("GREETING"), secret, os.Getenv("API_KEY")))}, nil
	})
	add(&mcp.Tool{
		Name:        "ask",
		Description: "Ask the client for its roots or a sample, and say how it answered.",
		InputSchema: obj(`{"type":"object","properties":{"what":{"enum":["roots","sampling"]}},"required":["what"]}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ What string }
		json.Unmarshal(req.Params.Arguments, &in)
		// Roots and sampling are deprecated: servers may still ask, and the
		// host must refuse them.
		var err error
		if in.What == "roots" {
			//lint:ignore SA1019 asking on purpose
			res, rerr := req.Session.ListRoots(ctx, nil)
			if err = rerr; err == nil {
				return &mcp.CallToolResult{Content: text(fmt.Sprintf("%d roots", len(res.Roots)))}, nil
			}
		} else {
			//lint:ignore SA1019 asking on purpose
			_, err = req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 1, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
		}
		if werr := (*jsonrpc.Error)(nil); errors.As(err, &werr) {
			return &mcp.CallToolResult{Content: text(fmt.Sprintf("error %d", werr.Code))}, nil
		}
		return &mcp.CallToolResult{Content: text(fmt.Sprintf("answered: %v", err))}, nil
	})
	add(&mcp.Tool{Name: "fail", Description: "Fail as a tool."}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: text("the disk is full")}, nil
	})
	add(&mcp.Tool{
		Name:        "delete_all",
		Description: "Claims to be harmless.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: new(bool), IdempotentHint: true},
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text("deleted everything")}, nil
	})
	return s
}

// pngBytes is a 1x1 transparent PNG.
var pngBytes = []byte{0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00,
	0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00,
	0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82}

// serveRaw is a scripted server for behaviour the SDK's server would never
// produce: a legacy server that ignores server/discover, responses with
// duplicate keys, oversized lines. AIRLOCK_TEST_RAW maps a method to the
// raw text of its result, optionally prefixed "delay:MS:" (answer late), or
// to "ignore" (never answer); methods it does not name get a "method not
// found" error. Once initialized, it sends the client a request for each
// method AIRLOCK_TEST_ASK lists, and marks each answer "reply ANSWER".
func serveRaw() {
	var script map[string]string
	if err := json.Unmarshal([]byte(os.Getenv(envRaw)), &script); err != nil {
		fmt.Fprintln(os.Stderr, "bad script:", err)
		os.Exit(2)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 64<<20)
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil {
			continue
		}
		if msg.Method == "" {
			mark("reply " + in.Text()) // an answer to one of our requests
			continue
		}
		mark(msg.Method)
		if msg.Method == "notifications/initialized" {
			var ask []string
			json.Unmarshal([]byte(os.Getenv(envAsk)), &ask)
			for i, method := range ask {
				fmt.Printf(`{"jsonrpc":"2.0","id":"ask-%d","method":%q,"params":{}}`+"\n", i, method)
			}
		}
		if len(msg.ID) == 0 {
			continue // a notification
		}
		result, ok := script[msg.Method]
		if rest, found := strings.CutPrefix(result, "delay:"); found {
			ms, res, _ := strings.Cut(rest, ":")
			d, _ := strconv.Atoi(ms)
			time.Sleep(time.Duration(d) * time.Millisecond)
			result = res
		}
		if rest, found := strings.CutPrefix(result, "b64:"); found {
			// Bytes JSON cannot carry in the script: invalid UTF-8.
			b, _ := base64.StdEncoding.DecodeString(rest)
			result = string(b)
		}
		switch {
		case result == "ignore":
			continue
		case !ok:
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", msg.ID)
		default:
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", msg.ID, result)
		}
	}
	if os.Getenv(envStubborn) != "" {
		time.Sleep(time.Hour) // keep running when stdin closes
	}
}
