package agent_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/agent"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
)

// The loop's benchmarks run against an in-process server of benchTools
// tools over the SDK's in-memory transports, with a provider that answers
// at once, so that what is measured is the loop: choosing the tools of a
// request, the checkpoint saved in the host's SQLite store, the events,
// the calls' goroutines. bench/callbench reports the loop's cost per step
// against bare Host.BeginTurn and Host.Call round trips measured in the
// same run (docs/benchmarks.md).

const (
	benchTools = 64
	benchSteps = 20 // of a run: a call each but the last
)

// instant is a provider that answers every step at once: each step but
// the last asks for one call of the next of tools, the last answers with
// text. Its Name, Unsupported and MaxTools are OpenAI's, which the loop
// asks about every tool of a new snapshot.
type instant struct {
	agent.Provider
	steps int
	tools []string
}

var _ agent.Provider = (*instant)(nil)

func (p *instant) Step(_ context.Context, req *agent.Request, _ func(string)) (*agent.Response, error) {
	n := 0
	for _, m := range req.Messages {
		if m.Role == agent.RoleAssistant {
			n++
		}
	}
	usage := agent.Usage{Input: 10, Output: 5}
	if n+1 >= p.steps {
		return &agent.Response{Text: "Done.", Stop: "stop", Usage: usage}, nil
	}
	return &agent.Response{Stop: "tool_calls", Usage: usage, Calls: []agent.ToolCall{
		{ID: fmt.Sprintf("call_%d", n), Name: p.tools[n%len(p.tools)], Arguments: `{"text":"hello, benchmark"}`}}}, nil
}

// benchServer is an in-process server of n typed tools.
func benchServer(n int) *mcp.Server {
	type in struct {
		Text  string `json:"text" jsonschema:"the text to echo"`
		Times int    `json:"times,omitempty" jsonschema:"how many times to repeat it"`
		Sep   string `json:"sep,omitempty" jsonschema:"what goes between the repetitions"`
	}
	type out struct {
		Text string `json:"text"`
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	for i := range n {
		mcp.AddTool(s, &mcp.Tool{Name: fmt.Sprintf("tool_%02d", i), Description: fmt.Sprintf("Echo the text given, tool number %d of the benchmark's server.", i)},
			func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, out, error) {
				return nil, out{Text: a.Text}, nil
			})
	}
	return s
}

// benchHost opens a host, with the SQLite store in a temporary state
// directory, on an in-process server of n tools, each a read.
func benchHost(b *testing.B, n int) (*airlock.Host, []string) {
	var yaml strings.Builder
	yaml.WriteString("servers:\n  - id: bench\n    command: in-process\n    allowed_tools: [\"*\"]\npolicy:\n  tools:\n")
	var names []string
	for i := range n {
		fmt.Fprintf(&yaml, "    - {server: bench, tool: tool_%02d, effect: read}\n", i)
		names = append(names, fmt.Sprintf("bench__tool_%02d", i))
	}
	cfg, err := config.Parse([]byte(yaml.String()), "airlock.yaml", b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	s := benchServer(n)
	h, err := airlock.Open(context.Background(), cfg, &airlock.Options{StateDir: b.TempDir(),
		Dial: func(config.Server) mcp.Transport {
			st, ct := mcp.NewInMemoryTransports()
			if _, err := s.Connect(context.Background(), st, nil); err != nil {
				b.Error(err)
			}
			return ct
		}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	if got := len(h.Snapshot().Tools()); got != n {
		b.Fatalf("the host has %d tools, want %d", got, n)
	}
	return h, names
}

// BenchmarkLoopStep measures the steps of runs of benchSteps through the
// loop, and what of them the checkpoint's saves take; BenchmarkBareStep is
// the same steps' Host.BeginTurn and Host.Call without it.
func BenchmarkLoopStep(b *testing.B) {
	const steps = benchSteps
	h, names := benchHost(b, benchTools)
	openai, err := agent.NewProvider(agent.ProviderOptions{Name: config.ProviderOpenAI, BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		b.Fatal(err)
	}
	a, err := agent.New(agent.Options{Host: h, Provider: &instant{Provider: openai, steps: steps, tools: names}, Events: func(agent.Event) {}})
	if err != nil {
		b.Fatal(err)
	}
	took := agent.TimeSaves(a)
	b.ReportAllocs()
	for b.Loop() {
		if out := a.Start(b.Context(), "echo"); out.Status != store.RunDone || out.Steps != steps {
			b.Fatalf("outcome = %+v, want done in %d steps", out, steps)
		}
	}
	saves, d := took()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*steps), "ns/step")
	b.ReportMetric(float64(d.Nanoseconds())/float64(b.N*steps), "save-ns/step")
	b.ReportMetric(float64(saves)/float64(b.N*steps), "saves/step")
}

func BenchmarkBareStep(b *testing.B) {
	const steps = benchSteps
	h, names := benchHost(b, benchTools)
	b.ReportAllocs()
	for b.Loop() {
		for i := range steps {
			snap := h.BeginTurn(b.Context())
			if i == steps-1 {
				break
			}
			c := airlock.Call{ID: fmt.Sprintf("tc_%d", i), Name: names[i%len(names)], Arguments: []byte(`{"text":"hello, benchmark"}`)}
			if r := h.Call(b.Context(), snap, c); r.Status != airlock.OK {
				b.Fatal(r.Err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*steps), "ns/step")
}

// indexTools are n tools of made-up servers, each named for what it does
// and described in a sentence or two, from a small vocabulary, as a large
// catalog's are.
func indexTools(n int) []airlock.Tool {
	verbs := []string{"get", "list", "create", "update", "delete", "search", "read", "write", "send", "archive", "merge", "close", "open", "copy", "move", "export"}
	nouns := []string{"issue", "file", "message", "channel", "user", "repository", "branch", "pull_request", "comment", "label", "event", "calendar",
		"invoice", "customer", "order", "ticket", "page", "document", "folder", "table", "row", "query", "dashboard", "alert", "deployment", "secret",
		"build", "release", "project", "task", "note", "contact", "meeting", "report", "metric", "log", "bucket", "object", "image", "video"}
	filler := strings.Fields("the a of to in for with from by on and or its any all one each new given current selected matching " +
		"returns result results list id name title body text status owner date time range limit page cursor filter sort order field value " +
		"optional required default account workspace team organization permission access token request response error")
	rng := rand.New(rand.NewPCG(1, 2))
	tools := make([]airlock.Tool, n)
	for i := range tools {
		verb, noun := verbs[i%len(verbs)], nouns[(i/len(verbs))%len(nouns)]
		server := fmt.Sprintf("srv%03d", i/(len(verbs)*len(nouns))%1000)
		var desc strings.Builder
		fmt.Fprintf(&desc, "%s a %s of the %s service.", strings.ToUpper(verb[:1])+verb[1:], strings.ReplaceAll(noun, "_", " "), server)
		for range 12 + rng.IntN(20) {
			desc.WriteString(" " + filler[rng.IntN(len(filler))])
		}
		tools[i] = airlock.Tool{Name: fmt.Sprintf("%s__%s_%s", server, verb, noun), Server: server, Description: desc.String() + "."}
	}
	return tools
}

// findQueries are what a model asks find_tools, stop words included.
var findQueries = []string{"read a file", "create an issue in the repository", "list pull requests", "send a message to the channel",
	"search documents", "delete the deployment", "get the current user's calendar events", "export the report of metrics"}

func BenchmarkToolIndex(b *testing.B) {
	tools := indexTools(10_000)
	b.Run("build", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			agent.NewToolIndex(tools)
		}
	})
	b.Run("find", func(b *testing.B) {
		ix := agent.NewToolIndex(tools)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if len(ix.Find(findQueries[i%len(findQueries)], 8)) == 0 {
				b.Fatalf("nothing matches %q", findQueries[i%len(findQueries)])
			}
			i++
		}
	})
}
