package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/agent"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
)

// The agent loop's benchmarks. The loop's own cost per step: runs of an
// agent whose provider answers at once, against a host of in-process
// servers over the SDK's in-memory transports, alternating in rounds with
// the same steps' Host.BeginTurn and Host.Call made bare, and with the
// run's checkpoint saves made alone in the same SQLite store. And
// find_tools over a catalog of 10,000 tools: building its index, a query,
// and a step of the loop that asks it.

// agentOptions size the agent benchmarks.
type agentOptions struct {
	runs, steps int // runs per side; model steps per run
	tools       int // tools of the loop's catalog
	findTools   int // tools of the catalog find_tools searches
	builds      int // builds of its index
	queries     int // queries of it
}

// loopResult is what one loop benchmark measured: per step, each run's
// time over its steps.
type loopResult struct {
	tools, steps, runs    int
	bare, withSaves, loop []time.Duration
	savesPerRun           int
	checkpoint            int // bytes of a run's final checkpoint
	store                 string
}

// findResult is what the find_tools benchmark measured.
type findResult struct {
	tools, catalogs int
	build, query    []time.Duration
	loop            *loopResult
}

// agentResult is what the agent benchmarks measured: steps that read,
// steps that write (journaled), and find_tools.
type agentResult struct {
	opts        agentOptions
	call, write *loopResult
	find        *findResult
}

// instant is a provider that answers every step at once: a step asks for
// call(step), nil for the final answer. Its Name, Unsupported and
// MaxTools are OpenAI's: the loop asks it about every tool of a catalog.
type instant struct {
	agent.Provider
	call func(step int) *agent.ToolCall
}

var _ agent.Provider = (*instant)(nil)

func (p *instant) Step(_ context.Context, req *agent.Request, _ func(string)) (*agent.Response, error) {
	step := 0
	for _, m := range req.Messages {
		if m.Role == agent.RoleAssistant {
			step++
		}
	}
	usage := agent.Usage{Input: 10, Output: 5}
	c := p.call(step)
	if c == nil {
		return &agent.Response{Text: "Done.", Stop: "stop", Usage: usage}, nil
	}
	return &agent.Response{Stop: "tool_calls", Usage: usage, Calls: []agent.ToolCall{*c}}, nil
}

func newInstant(call func(int) *agent.ToolCall) (*instant, error) {
	// The endpoint is never asked: Step answers.
	p, err := agent.NewProvider(agent.ProviderOptions{Name: config.ProviderOpenAI, BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		return nil, err
	}
	return &instant{Provider: p, call: call}, nil
}

// A catalogServer is one in-process server of the benchmark's host: its
// id and its tools' names and descriptions.
type catalogServer struct {
	id           string
	names, descs []string
}

// echoInput is the input of every tool of the benchmark's servers.
type echoInput struct {
	Text  string `json:"text" jsonschema:"the text to echo"`
	Times int    `json:"times,omitempty" jsonschema:"how many times to repeat it"`
	Sep   string `json:"sep,omitempty" jsonschema:"what goes between the repetitions"`
}

// agentHost opens a host in state on servers, in process, over the SDK's
// in-memory transports: every tool echoes its text, with effect (read, or
// write: journaled) under local policy, allowed. The host keeps its runs
// in its own store, SQLite in state.
func agentHost(ctx context.Context, state, effect string, servers []catalogServer) (*airlock.Host, error) {
	var yaml strings.Builder
	yaml.WriteString("limits: {max_tools: 10000}\nservers:\n")
	for _, s := range servers {
		fmt.Fprintf(&yaml, "  - id: %s\n    command: in-process\n    allowed_tools: [\"*\"]\n", s.id)
	}
	yaml.WriteString("policy:\n  tools:\n")
	mcps := map[string]*mcp.Server{}
	want := 0
	for _, s := range servers {
		m := mcp.NewServer(&mcp.Implementation{Name: s.id, Version: "1"}, nil)
		for i, name := range s.names {
			mcp.AddTool(m, &mcp.Tool{Name: name, Description: s.descs[i]},
				func(_ context.Context, _ *mcp.CallToolRequest, in echoInput) (*mcp.CallToolResult, struct {
					Text string `json:"text"`
				}, error) {
					return nil, struct {
						Text string `json:"text"`
					}{in.Text}, nil
				})
			fmt.Fprintf(&yaml, "    - {server: %s, tool: %s, effect: %s}\n", s.id, name, effect)
		}
		mcps[s.id] = m
		want += len(s.names)
	}
	if effect != "read" {
		yaml.WriteString("  rules:\n")
		for _, s := range servers {
			fmt.Fprintf(&yaml, "    - {server: %s, tool: \"*\", decision: allow}\n", s.id)
		}
	}
	cfg, err := config.Parse([]byte(yaml.String()), "airlock.yaml", state)
	if err != nil {
		return nil, err
	}
	h, err := airlock.Open(ctx, cfg, &airlock.Options{StateDir: state, Dial: func(srv config.Server) mcp.Transport {
		st, ct := mcp.NewInMemoryTransports()
		if _, err := mcps[srv.ID].Connect(context.Background(), st, nil); err != nil {
			panic(err) // an in-memory transport does not fail
		}
		return ct
	}})
	if err != nil {
		return nil, err
	}
	for _, st := range h.Servers() {
		if st.Err != nil {
			h.Close()
			return nil, st.Err
		}
	}
	if got := len(h.Snapshot().Tools()); got != want {
		h.Close()
		return nil, fmt.Errorf("the host has %d tools, want %d", got, want)
	}
	return h, nil
}

// agentBench runs the agent benchmarks, with hosts of their own in state.
func agentBench(ctx context.Context, o agentOptions, rounds int, state string) (*agentResult, error) {
	res := &agentResult{opts: o}

	// The loop's cost per step: every step but the last calls a tool of a
	// catalog the requests carry whole.
	echo := catalogServer{id: "bench"}
	for i := range o.tools {
		echo.names = append(echo.names, fmt.Sprintf("tool_%02d", i))
		echo.descs = append(echo.descs, fmt.Sprintf("Echo the text given, tool number %d of the benchmark's server.", i))
	}
	names := make([]string, len(echo.names))
	for i, n := range echo.names {
		names[i] = "bench__" + n
	}
	args := `{"text":"hello, benchmark"}`
	call := func(step int) *agent.ToolCall {
		if step+1 >= o.steps {
			return nil
		}
		return &agent.ToolCall{ID: fmt.Sprintf("call_%d", step), Name: names[step%len(names)], Arguments: args}
	}
	for _, side := range []struct {
		effect string
		res    **loopResult
	}{{"read", &res.call}, {"write", &res.write}} {
		h, err := agentHost(ctx, filepath.Join(state, "agent-"+side.effect), side.effect, []catalogServer{echo})
		if err != nil {
			return nil, fmt.Errorf("the loop's host: %v", err)
		}
		defer h.Close()
		bare := func(ctx context.Context, snap *airlock.Snapshot, step int) error {
			c := call(step)
			if c == nil {
				return nil
			}
			r := h.Call(ctx, snap, airlock.Call{ID: fmt.Sprintf("tc_%d", step), Name: c.Name, Arguments: []byte(c.Arguments)})
			if r.Status != airlock.OK {
				return fmt.Errorf("%s: %s", c.Name, r.Status)
			}
			return nil
		}
		if *side.res, err = measureLoop(ctx, h, call, bare, o, rounds); err != nil {
			return nil, fmt.Errorf("the loop (%ss): %v", side.effect, err)
		}
		(*side.res).tools = o.tools
	}

	// find_tools over a large catalog: ten servers, each of a tenth of the
	// tools.
	servers := largeCatalog(o.findTools)
	hf, err := agentHost(ctx, filepath.Join(state, "find"), "read", servers)
	if err != nil {
		return nil, fmt.Errorf("the large catalog's host: %v", err)
	}
	defer hf.Close()
	res.find = &findResult{tools: o.findTools, catalogs: len(servers)}
	findCall := func(step int) *agent.ToolCall {
		if step+1 >= o.steps {
			return nil
		}
		return &agent.ToolCall{ID: fmt.Sprintf("call_%d", step), Name: agent.FindTools,
			Arguments: fmt.Sprintf(`{"query":%q}`, findQueries[step%len(findQueries)])}
	}
	if res.find.loop, err = measureLoop(ctx, hf, findCall, func(context.Context, *airlock.Snapshot, int) error { return nil }, o, rounds); err != nil {
		return nil, fmt.Errorf("the loop over the large catalog: %v", err)
	}
	// The index alone, once the garbage of what came before is collected.
	tools := hf.Snapshot().Tools()
	runtime.GC()
	for range o.builds {
		start := time.Now()
		agent.NewToolIndex(tools)
		res.find.build = append(res.find.build, time.Since(start))
	}
	ix := agent.NewToolIndex(tools)
	runtime.GC()
	for i := range o.queries {
		q := findQueries[i%len(findQueries)]
		start := time.Now()
		found := ix.Find(q, 8)
		res.find.query = append(res.find.query, time.Since(start))
		if len(found) == 0 {
			return nil, fmt.Errorf("find_tools found nothing for %q", q)
		}
	}
	res.find.loop.tools = o.findTools
	return res, nil
}

// measureLoop times runs of o.steps steps on h, three sides alternating
// in rounds after a warm-up: the loop, with a provider that asks for
// call(step); bare, the same steps' Host.BeginTurn and bare(step) without
// the loop; and the bare steps with as many saves of a run's record as
// the loop makes, where it makes them.
func measureLoop(ctx context.Context, h *airlock.Host, call func(int) *agent.ToolCall, bare func(context.Context, *airlock.Snapshot, int) error, o agentOptions, rounds int) (*loopResult, error) {
	p, err := newInstant(call)
	if err != nil {
		return nil, err
	}
	var failed []string
	a, err := agent.New(agent.Options{Host: h, Provider: p, Model: "instant", Events: func(e agent.Event) {
		if e.Event == agent.EventToolCall && e.Status != "started" && e.Status != string(airlock.OK) {
			failed = append(failed, e.Name+" "+e.Status)
		}
	}})
	if err != nil {
		return nil, err
	}
	runs, ok := h.Store().(store.Runs)
	if !ok {
		return nil, fmt.Errorf("the host's store keeps no runs")
	}
	res := &loopResult{steps: o.steps, store: fmt.Sprintf("%T", h.Store())}
	calls := 0
	for i := range o.steps {
		if call(i) != nil {
			calls++
		}
	}
	var last string
	loop := func() error {
		out := a.Start(ctx, "echo")
		if out.Status != store.RunDone || out.Steps != o.steps || out.ToolCalls != calls || len(failed) > 0 {
			return fmt.Errorf("a run ended %s after %d steps and %d calls (%v), want done after %d and %d", out.Status, out.Steps, out.ToolCalls, failed, o.steps, calls)
		}
		last = out.RunID
		return nil
	}
	bareRun := func() error {
		for i := range o.steps {
			if err := bare(ctx, h.BeginTurn(ctx), i); err != nil {
				return err
			}
		}
		return nil
	}
	// A run saves its checkpoint when it starts, then the calls of each
	// step before any is sent, and each result as it comes, then the
	// final answer.
	res.savesPerRun = 1 + 2*calls + 1
	if err := loop(); err != nil {
		return nil, err
	}
	rec, err := runs.RunRecord(ctx, last)
	if err != nil {
		return nil, err
	}
	// The bare steps with the run's saves where the loop makes them: a
	// run's record, its checkpoint growing from nothing to the size of
	// the run's last.
	res.checkpoint = len(rec.Checkpoint)
	checkpoints := make([][]byte, res.savesPerRun)
	for i := range checkpoints {
		checkpoints[i] = fmt.Appendf(nil, `{"p":%q}`, strings.Repeat("x", max(0, res.checkpoint*(i+1)/res.savesPerRun-8)))
	}
	withSaves := func() error {
		r := rec
		r.ID, r.CreatedAt = store.NewID("run_"), time.Time{}
		saved := 0
		save := func() error {
			r.Checkpoint = checkpoints[saved]
			saved++
			if saved == len(checkpoints) { // the final answer's, which the loop syncs
				return runs.SaveRun(ctx, r)
			}
			return runs.SaveRunRelaxed(ctx, r)
		}
		if err := save(); err != nil {
			return err
		}
		for i := range o.steps {
			snap := h.BeginTurn(ctx)
			// The step's calls, or its final answer.
			if err := save(); err != nil {
				return err
			}
			if call(i) == nil {
				continue
			}
			if err := bare(ctx, snap, i); err != nil {
				return err
			}
			// The call's result.
			if err := save(); err != nil {
				return err
			}
		}
		return nil
	}

	per := max(1, o.runs/rounds)
	sides := []struct {
		f   func() error
		lat *[]time.Duration
	}{{bareRun, &res.bare}, {withSaves, &res.withSaves}, {loop, &res.loop}}
	for _, side := range sides {
		for range max(1, per/4) {
			if err := side.f(); err != nil {
				return nil, err
			}
		}
	}
	for range rounds {
		for _, side := range sides {
			for range per {
				start := time.Now()
				if err := side.f(); err != nil {
					return nil, err
				}
				*side.lat = append(*side.lat, time.Since(start)/time.Duration(o.steps))
			}
		}
	}
	res.runs = per * rounds
	return res, nil
}

// largeCatalog is n tools on ten servers, each named for what it does and
// described in a sentence or two, from a small vocabulary, as a large
// catalog's are.
func largeCatalog(n int) []catalogServer {
	ids := []string{"github", "jira", "slack", "drive", "calendar", "crm", "billing", "wiki", "cloud", "monitoring"}
	verbs := []string{"get", "list", "create", "update", "delete", "search", "read", "write", "send", "archive", "merge", "close", "open", "copy", "move", "export"}
	nouns := []string{"issue", "file", "message", "channel", "user", "repository", "branch", "pull_request", "comment", "label", "event", "calendar",
		"invoice", "customer", "order", "ticket", "page", "document", "folder", "table", "row", "query", "dashboard", "alert", "deployment", "secret",
		"build", "release", "project", "task", "note", "contact", "meeting", "report", "metric", "log", "bucket", "object", "image", "video"}
	filler := strings.Fields("the a of to in for with from by on and or its any all one each new given current selected matching " +
		"returns result results list id name title body text status owner date time range limit page cursor filter sort order field value " +
		"optional required default account workspace team organization permission access token request response error")
	rng := rand.New(rand.NewPCG(1, 2))
	servers := make([]catalogServer, len(ids))
	for i := range servers {
		servers[i].id = ids[i]
	}
	for i := range n {
		s := &servers[i%len(servers)]
		j := i / len(servers)
		verb, noun := verbs[j%len(verbs)], nouns[(j/len(verbs))%len(nouns)]
		name := verb + "_" + noun
		if k := j / (len(verbs) * len(nouns)); k > 0 {
			name += fmt.Sprintf("_%d", k)
		}
		var desc strings.Builder
		fmt.Fprintf(&desc, "%s a %s in %s.", strings.ToUpper(verb[:1])+verb[1:], strings.ReplaceAll(noun, "_", " "), s.id)
		for range 12 + rng.IntN(20) {
			desc.WriteString(" " + filler[rng.IntN(len(filler))])
		}
		s.names = append(s.names, name)
		s.descs = append(s.descs, desc.String()+".")
	}
	return servers
}

// findQueries are what a model asks find_tools, stop words included.
var findQueries = []string{"read a file", "create an issue in the repository", "list pull requests", "send a message to the channel",
	"search documents", "delete the deployment", "get the current user's calendar events", "export the report of metrics"}

// renderAgent writes the agent loop's sections of the report.
func renderAgent(w func(string, ...any), table tableFunc, us, ms func(time.Duration) string, rounds int, r *agentResult) {
	c := r.call
	w("## Agent loop: overhead per step with %d tools (%d runs of %d steps each)\n\n", c.tools, c.runs, c.steps)
	w("`agent.Agent` runs against a host of one in-process server of %d typed echo tools (the SDK's in-memory\n", c.tools)
	w("transports), each a read under local policy, the host's store SQLite (`%s`) in its state directory.\n", c.store)
	w("The provider is in the benchmark: it answers at once, each step but the last with one tool call, the last\n")
	w("with text; its `Unsupported` and `MaxTools` are OpenAI's, which the loop asks about every tool of a new\n")
	w("snapshot. What a step costs besides the provider and the server is the loop's: choosing the tools a request\n")
	w("carries, the calls' goroutines and events, and the run's checkpoint, encoded and saved (synced) in the store\n")
	w("before the step's calls are sent and again as each result comes.\n\n")
	w("The baseline, in the same run, alternating in %d rounds after a warm-up: the same steps' `Host.BeginTurn` and\n", rounds)
	w("`Host.Call` (the same tool, the same arguments) without the loop. A run's time over its steps is one sample.\n\n")
	renderLoop(w, table, us, c, true)
	over, saves := quantile(c.loop, .5)-quantile(c.bare, .5), quantile(c.withSaves, .5)-quantile(c.bare, .5)
	w("Target: the loop's overhead under 1 ms a step with %d tools, %s (the checkpoint's saves: %s a step).\n\n",
		c.tools, verdict(over < time.Millisecond), us(saves))

	c = r.write
	w("## Agent loop with journaled writes: overhead per step (%d runs of %d steps each)\n\n", c.runs, c.steps)
	w("The same, with every tool a write under local policy (allowed by a rule): each call's intent is synced in the\n")
	w("journal before it is sent and its outcome after, on both sides. The checkpoint saved before the call reaches\n")
	w("the disk with the intent's sync.\n\n")
	renderLoop(w, table, us, c, true)
	over = quantile(c.loop, .5) - quantile(c.bare, .5)
	w("Target: the loop's overhead under 1 ms a step with %d tools, %s.\n\n", c.tools, verdict(over < time.Millisecond))

	f := r.find
	w("## find_tools over %d tools\n\n", f.tools)
	w("A catalog of %d tools on %d in-process servers (names such as `github__create_issue`, a description of\n", f.tools, f.catalogs)
	w("one or two sentences from a small vocabulary), past what a request may carry: the model gets `find_tools`,\n")
	w("which ranks the snapshot's tools against its words (`agent.ToolIndex`: BM25 over names and descriptions).\n")
	w("The loop builds the index once per snapshot, the first time it is asked; a query reads it. The queries are\n")
	w("%d sentences a model might write, stop words included (\"create an issue in the repository\"), for 8 tools each.\n\n", len(findQueries))
	w("| | p50 | p99 | max |\n|---|---|---|---|\n")
	w("| building the index (%d builds) | %s | %s | %s |\n", len(f.build), ms(quantile(f.build, .5)), ms(quantile(f.build, .99)), ms(quantile(f.build, 1)))
	w("| a query (%d queries) | %s | %s | %s |\n\n", len(f.query), us(quantile(f.query, .5)), us(quantile(f.query, .99)), us(quantile(f.query, 1)))
	w("Target: a query under 5 ms over %d tools (p99), %s.\n\n", f.tools, verdict(quantile(f.query, .99) < 5*time.Millisecond))
	l := f.loop
	w("In the loop (%d runs of %d steps each, alternating in %d rounds with the baseline): each step but the last asks\n", l.runs, l.steps, rounds)
	w("`find_tools`, which reaches no server; the baseline is the same steps' `Host.BeginTurn` alone. The rest of the\n")
	w("loop has the query in it, and its answer (8 tools described), which the checkpoint keeps: it grows faster.\n\n")
	renderLoop(w, table, us, l, false)
}

// renderLoop writes a loop benchmark's tables: the steps' times, bare and
// through the loop (with ratios when ratio is set: the bare steps do what
// the loop's do), then what the loop adds, and what of it the run's saves
// take.
func renderLoop(w func(string, ...any), table tableFunc, us func(time.Duration) string, l *loopResult, ratio bool) {
	if ratio {
		table("bare", "agent loop", l.bare, l.loop, us, "p50", "p99")
		w("\n")
	}
	bare, saves, loop := quantile(l.bare, .5), quantile(l.withSaves, .5), quantile(l.loop, .5)
	w("| a step, p50 | |\n|---|---|\n")
	w("| bare | %s |\n", us(bare))
	w("| bare, with the run's saves where the loop makes them | %s |\n", us(saves))
	w("| agent loop | %s |\n", us(loop))
	if ratio {
		w("| **the loop's overhead** (agent loop − bare) | **%s**, %.2f× bare |\n", us(loop-bare), float64(loop-bare)/float64(bare))
	} else {
		w("| **the loop's overhead** (agent loop − bare) | **%s** |\n", us(loop-bare))
	}
	w("| of it, the checkpoint's saves (with the saves − bare) | %s |\n", us(saves-bare))
	w("| of it, the rest of the loop (agent loop − with the saves) | %s |\n\n", us(loop-saves))
	w("A run saves its checkpoint %d times, %.1f a step: when it starts, then for each step with a call the call before it\n", l.savesPerRun, float64(l.savesPerRun)/float64(l.steps))
	w("is sent and its result as it comes (the step's last result closes the step in the same save), and the final\n")
	w("answer. The bare steps with the saves save a run's record as often, in the same places, its checkpoint growing\n")
	w("to the size of a run's last (%.1f KB). Each save of a running run is a SQLite transaction that does not wait\n", float64(l.checkpoint)/1000)
	w("for the disk (`synchronous=NORMAL` for its commit: the next synced write, such as a write's journal intent, syncs\n")
	w("it too); the final answer's is synced (`synchronous=FULL`).\n\n")
}

// verdict says whether a target is met.
func verdict(met bool) string {
	if met {
		return "met"
	}
	return "missed"
}
