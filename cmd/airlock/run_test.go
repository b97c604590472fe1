package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/agent/agenttest"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/testenv"
)

// noKeys keeps the environment's API keys, if any, out of a run: the
// tests' models are on loopback and need none.
var noKeys = []string{"OPENAI_API_KEY=", "ANTHROPIC_API_KEY="}

// runProject makes a project for airlock run: a git repository with
// hello.txt, served by the bundled workspace server (its reads allowed),
// and the test server w, which records its writes in the returned mark;
// rules is more of policy's rules: (YAML list items).
func runProject(t *testing.T, rules string) (dir, mark string) {
	t.Helper()
	dir = workdir(t)
	mark = filepath.Join(t.TempDir(), "mark")
	writeFile(t, filepath.Join(dir, "airlock.yaml"), testServerYAML(t, `[greet, record, slow_write]`, envTestMark, mark)+`  - id: workspace
    command: airlock
    args: [server, workspace, --root, .]
    allowed_tools: [read_file]
policy:
  tools:
    - {server: workspace, tool: read_file, effect: read, idempotent: true}
  rules:
    - {server: w, tool: greet, decision: allow}
`+rules)
	return dir, mark
}

// modelFlags are the flags that point airlock run at the scripted model.
func modelFlags(m *agenttest.Model, api string) []string {
	return []string{"--provider", api, "--model", "test-model", "--base-url", m.URL(api)}
}

// marked returns the lines the test server wrote in mark.
func marked(t *testing.T, mark string) []string {
	t.Helper()
	b, err := os.ReadFile(mark)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func noRefusals(t *testing.T, m *agenttest.Model, api string) {
	t.Helper()
	for _, why := range m.Refused() {
		t.Errorf("the %s API would refuse a request: %s", api, why)
	}
}

// runIDOf returns the id of the only run in dir.
func runIDOf(t *testing.T, dir string) (id, status string) {
	t.Helper()
	r := runCLI(t, dir, "", "runs", "--json").want(t, 0)
	var out struct {
		Runs []struct{ ID, Status string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.Runs) != 1 {
		t.Fatalf("runs --json = %s (%v), want one run", r.stdout, err)
	}
	return out.Runs[0].ID, out.Runs[0].Status
}

// TestRunMultiStep: airlock run with each provider's SDK, streaming, on
// real servers: a step with two calls in parallel (the workspace server's
// read, the test server's greet), a write, then the answer.
func TestRunMultiStep(t *testing.T) {
	for _, api := range []string{config.ProviderOpenAI, config.ProviderAnthropic} {
		t.Run(api, func(t *testing.T) {
			dir, mark := runProject(t, "    - {server: w, tool: record, decision: allow}\n")
			m := agenttest.New(t,
				agenttest.Step{Text: "Reading first.", Calls: []agenttest.Call{
					{Name: "workspace__read_file", Args: `{"path":"hello.txt"}`},
					{Name: "w__greet", Args: `{"name":"ada"}`}}},
				agenttest.Step{Calls: []agenttest.Call{{Name: "w__record", Args: `{"tag":"one"}`}}},
				agenttest.Step{Text: "All done: hello.txt says hello."})
			r := runCLIEnv(t, dir, noKeys, "", append([]string{"run"}, append(modelFlags(m, api), "read hello.txt, greet ada, record one")...)...).want(t, 0)
			if !strings.Contains(r.stdout, "Reading first.") || !strings.Contains(r.stdout, "All done: hello.txt says hello.") {
				t.Errorf("stdout = %q, want the model's text", r.stdout)
			}
			for _, want := range []string{"workspace__read_file", `"path":"hello.txt"`, "w__greet", "w__record", "ok"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			reqs := m.Requests()
			if len(reqs) != 3 {
				t.Fatalf("the model got %d requests, want 3", len(reqs))
			}
			if !reqs[0].Stream {
				t.Error("a run on a terminal or not streams the model's answer; the request asked for none")
			}
			got := reqs[1].ToolResults()
			if len(got) != 2 || !strings.Contains(got[0], `hello\nworld`) || !strings.Contains(got[1], "hello ada") {
				t.Errorf("results of step 1 = %q, want the read's then greet's, in the model's order", got)
			}
			if got := reqs[2].ToolResults(); len(got) != 3 || !strings.Contains(got[2], "recorded one") {
				t.Errorf("results after step 2 = %q", got)
			}
			if got := marked(t, mark); !slices.Equal(got, []string{"record one"}) {
				t.Errorf("the server recorded %q, want one record", got)
			}
			noRefusals(t, m, api)
			if id, status := runIDOf(t, dir); status != "done" || !strings.HasPrefix(id, "run_") {
				t.Errorf("runs: %s %s, want a done run", id, status)
			}
		})
	}
}

// TestRunWithServerEverything: a run's tool calls reach a third-party
// server, @modelcontextprotocol/server-everything on 2025-11-25, and its
// image goes to the model as an image.
func TestRunWithServerEverything(t *testing.T) {
	node, script := testenv.EverythingServer(t)
	dir := workdir(t)
	writeFile(t, filepath.Join(dir, "airlock.yaml"), fmt.Sprintf(`servers:
  - id: everything
    command: %q
    args: [%q, stdio]
    allowed_tools: [get-sum, echo, get-tiny-image]
    connect_timeout: 60s
policy:
  tools:
    - {server: everything, tool: get-sum, effect: read}
    - {server: everything, tool: echo, effect: read}
    - {server: everything, tool: get-tiny-image, effect: read}
`, node, script))
	m := agenttest.New(t,
		agenttest.Step{Calls: []agenttest.Call{
			{Name: "everything__get-sum", Args: `{"a":2,"b":40}`},
			{Name: "everything__echo", Args: `{"message":"from the model"}`},
			{Name: "everything__get-sum", Args: `{"a":"two","b":40}`}}},
		agenttest.Step{Calls: []agenttest.Call{{Name: "everything__get-tiny-image", Args: `{}`}}},
		agenttest.Step{Text: "The sum is 42."})
	r := runCLIEnv(t, dir, noKeys, "", append([]string{"run", "--json"}, append(modelFlags(m, "anthropic"), "add 2 and 40")...)...).want(t, 0)
	reqs := m.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the model got %d requests, want 3\n%s", len(reqs), r.stdout)
	}
	got := reqs[1].ToolResults()
	if len(got) != 3 || !strings.Contains(got[0], "42") || !strings.Contains(got[1], "from the model") || !strings.Contains(got[2], "invalid") {
		t.Errorf("results = %q, want the sum, the echo, and the bad arguments refused", got)
	}
	if !bytes.Contains(reqs[2].Raw, []byte(`"type":"image"`)) || !bytes.Contains(reqs[2].Raw, []byte(`image/png`)) {
		t.Errorf("the image did not go to the model as an image:\n%.2000s", reqs[2].Raw)
	}
	noRefusals(t, m, "anthropic")
}

// TestRunJSON: airlock run --json writes one event a line, ending with
// done and the run's totals.
func TestRunJSON(t *testing.T) {
	dir, _ := runProject(t, "")
	m := agenttest.New(t,
		agenttest.Step{Calls: []agenttest.Call{{ID: "call_model_1", Name: "w__greet", Args: `{"name":"bo"}`}}, InputTokens: 100, OutputTokens: 7},
		agenttest.Step{Text: "Greeted.", InputTokens: 120, OutputTokens: 3})
	r := runCLIEnv(t, dir, noKeys, "", append([]string{"run", "--json"}, append(modelFlags(m, "openai"), "greet bo")...)...).want(t, 0)
	var kinds []string
	var done, ended map[string]any
	var text string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		ev := decode(t, line)
		kind, _ := ev["event"].(string)
		kinds = append(kinds, kind)
		switch {
		case kind == "done":
			done = ev
		case kind == "text":
			text += ev["text"].(string)
		case kind == "tool_call" && ev["status"] != "started":
			ended = ev
		}
	}
	if kinds[0] != "run" || kinds[len(kinds)-1] != "done" || !slices.Contains(kinds, "tool_call") {
		t.Errorf("events %v, want run … tool_call … done", kinds)
	}
	if ended["name"] != "w__greet" || ended["status"] != "ok" || ended["call_id"] != "call_model_1" {
		t.Errorf("tool_call event = %v", ended)
	}
	if text != "Greeted." {
		t.Errorf("text events = %q", text)
	}
	want := map[string]any{"steps": 2.0, "tool_calls": 1.0, "input_tokens": 220.0, "output_tokens": 10.0, "text": "Greeted."}
	for k, v := range want {
		if done[k] != v {
			t.Errorf("done[%s] = %v, want %v (%v)", k, done[k], v, done)
		}
	}
	if id, _ := done["run_id"].(string); !strings.HasPrefix(id, "run_") {
		t.Errorf("done has no run id: %v", done)
	}
	if strings.TrimSpace(r.stderr) != "" {
		t.Errorf("--json wrote on stderr:\n%s", r.stderr)
	}
}

// TestRunPausesForApproval: not on a terminal, calls that need approval
// end the step and the run (exit 5, the approval ids on stderr); after a
// person decides, --resume goes on: the granted write is sent once, the
// denied one never, and the model is told which was which.
func TestRunPausesForApproval(t *testing.T) {
	dir, mark := runProject(t, "")
	m := agenttest.New(t,
		agenttest.Step{Calls: []agenttest.Call{{Name: "w__record", Args: `{"tag":"keep"}`}, {Name: "w__record", Args: `{"tag":"drop"}`}}})
	args := append([]string{"run"}, append(modelFlags(m, "openai"), "record two tags")...)
	r := runCLIEnv(t, dir, noKeys, "", args...).want(t, 5)
	approvals := regexpAll(`apr_[0-9a-z]+`, r.stderr)
	if len(approvals) != 2 {
		t.Fatalf("stderr names approvals %v, want two:\n%s", approvals, r.stderr)
	}
	// Each command it gives runs as it is: approve takes one id. The
	// calls ran together, so their ids are named in either order.
	if !strings.Contains(r.stderr, "waits for 2 approvals: airlock approvals approve "+approvals[0]+"; airlock approvals approve "+approvals[1]+", then") &&
		!strings.Contains(r.stderr, "waits for 2 approvals: airlock approvals approve "+approvals[1]+"; airlock approvals approve "+approvals[0]+", then") {
		t.Errorf("stderr = %q, want one approve command for each of %v", r.stderr, approvals)
	}
	id, status := runIDOf(t, dir)
	if status != "waiting" || !strings.Contains(r.stderr, "airlock run --resume "+id) {
		t.Errorf("run %s is %s; stderr:\n%s", id, status, r.stderr)
	}
	if got := marked(t, mark); len(got) != 0 {
		t.Fatalf("the server saw %q before anyone approved", got)
	}

	// Resuming before anyone decided pauses again, sending nothing.
	runCLIEnv(t, dir, noKeys, "", "run", "--resume", id, "--base-url", m.URL("openai")).want(t, 5)
	if len(m.Requests()) != 1 {
		t.Errorf("the model was asked again with nothing decided: %d requests", len(m.Requests()))
	}

	if s := runCLI(t, dir, "", "runs", "show", id).want(t, 0); !strings.Contains(s.stdout, "2 calls of the last step have no result yet") {
		t.Errorf("runs show of the waiting run:\n%s", s.stdout)
	}

	// Which approval is which: approvals list shows the arguments.
	l := runCLI(t, dir, "", "approvals", "list", "--json").want(t, 0)
	var listed struct{ Approvals []map[string]any }
	if err := json.Unmarshal([]byte(l.stdout), &listed); err != nil || len(listed.Approvals) != 2 {
		t.Fatalf("approvals list = %s (%v)", l.stdout, err)
	}
	for _, a := range listed.Approvals {
		verb := "deny"
		if b, _ := json.Marshal(a); strings.Contains(string(b), "keep") {
			verb = "approve"
		}
		runCLI(t, dir, "", "approvals", verb, a["id"].(string)).want(t, 0)
	}
	m.Add(agenttest.Step{Text: "Kept one."})
	r = runCLIEnv(t, dir, noKeys, "", "run", "--resume", id, "--base-url", m.URL("openai")).want(t, 0)
	if !strings.Contains(r.stdout, "Kept one.") {
		t.Errorf("stdout = %q", r.stdout)
	}
	if got := marked(t, mark); !slices.Equal(got, []string{"record keep"}) {
		t.Errorf("the server recorded %q, want only keep", got)
	}
	reqs := m.Requests()
	got := reqs[len(reqs)-1].ToolResults()
	if len(got) != 2 || !strings.Contains(got[0], "recorded keep") || !strings.Contains(got[1], "denied") {
		t.Errorf("the model was told %q, want keep's result and drop's denial", got)
	}
	if _, status := runIDOf(t, dir); status != "done" {
		t.Errorf("after resuming, the run is %s", status)
	}
	noRefusals(t, m, "openai")

	// The transcript shows what happened.
	s := runCLI(t, dir, "", "runs", "show", id, "--json").want(t, 0)
	show := decode(t, s.stdout)
	if msgs, _ := show["messages"].([]any); len(msgs) < 4 {
		t.Errorf("runs show: %d messages, want the prompt, the calls, their results and the answer:\n%s", len(msgs), s.stdout)
	}
	s = runCLI(t, dir, "", "runs", "show", id).want(t, 0)
	for _, want := range []string{"record two tags", "w__record", "recorded keep", "Kept one."} {
		if !strings.Contains(s.stdout, want) {
			t.Errorf("runs show lacks %q:\n%s", want, s.stdout)
		}
	}
	runCLI(t, dir, "", "runs", "show", "run_nope").want(t, 2)
}

// TestRunKilledResumes: airlock run killed (kill -9) while a write is at
// the server, or after its result came but before the model heard it,
// then --resume: each write reached the server once, and the model was
// told its result, or that its outcome is unknown.
func TestRunKilledResumes(t *testing.T) {
	for _, tt := range []struct {
		name, tool string
		// the script before the kill, and when to kill
		killWhen func(t *testing.T, m *agenttest.Model, mark string)
		marks    []string
		told     string
		// heard: the model had the result before the kill (its next
		// request is held until then)
		heard bool
	}{
		{"while the write runs", "w__slow_write", func(t *testing.T, _ *agenttest.Model, mark string) {
			waitFor(t, "the write at the server", func() bool { return slices.Contains(marked(t, mark), "called") })
		}, []string{"called"}, "unknown", false},
		{"before the model heard the result", "w__record", func(t *testing.T, m *agenttest.Model, _ string) {
			m.WaitRequests(t, 2)
		}, []string{"record k"}, "recorded k", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, mark := runProject(t, "    - {server: w, tool: \"*\", decision: allow}\n")
			m := agenttest.New(t, agenttest.Step{Calls: []agenttest.Call{{Name: tt.tool, Args: `{"tag":"k"}`}}})
			if tt.heard {
				m.Add(agenttest.Step{Hold: true})
			}
			cmd := exec.Command(airlockBin, append([]string{"run"}, append(modelFlags(m, "openai"), "write once")...)...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), noKeys...)
			var stderr testenv.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("the killed run's stderr:\n%s", stderr.String())
				}
			})
			tt.killWhen(t, m, mark)
			if tt.heard {
				// One process drives a run at a time.
				id, _ := runIDOf(t, dir)
				r := runCLIEnv(t, dir, noKeys, "", "run", "--resume", id, "--base-url", m.URL("openai")).want(t, 2)
				if !strings.Contains(r.stderr, "is going on in another airlock process") {
					t.Errorf("a second driver of run %s: %s", id, r.stderr)
				}
			}
			cmd.Process.Kill()
			cmd.Wait()

			id, status := runIDOf(t, dir)
			if status != "running" {
				t.Errorf("the killed run is %s, want running", status)
			}
			m.Add(agenttest.Step{Text: "Checked."})
			r := runCLIEnv(t, dir, noKeys, "", "run", "--resume", id, "--base-url", m.URL("openai")).want(t, 0)
			if !strings.Contains(r.stdout, "Checked.") {
				t.Errorf("stdout = %q", r.stdout)
			}
			if got := marked(t, mark); !slices.Equal(got[:min(len(got), len(tt.marks))], tt.marks) || slices.Index(got[1:], tt.marks[0]) >= 0 {
				t.Errorf("the server saw %q, want the write once", got)
			}
			reqs := m.Requests()
			got := reqs[len(reqs)-1].ToolResults()
			if len(got) != 1 || !strings.Contains(got[0], tt.told) {
				t.Errorf("the resumed run told the model %q, want %q", got, tt.told)
			}
			if tt.told == "unknown" && !strings.Contains(got[0], "verify") {
				t.Errorf("an unknown outcome should tell the model to verify before retrying: %q", got[0])
			}
			noRefusals(t, m, "openai")
		})
	}
}

// TestRunKeepsTheKeySecret: an API key in the environment, sent to the
// model and echoed in its error text, is nowhere in the state directory
// (the store, the logs, the audit trail), stdout or stderr.
func TestRunKeepsTheKeySecret(t *testing.T) {
	const canary = "sk-canary-5a1f0c8e9b2d4f6a8c0e2b4d6f8a0c2e"
	dir, _ := runProject(t, "")
	m := agenttest.New(t,
		agenttest.Step{Calls: []agenttest.Call{{Name: "workspace__read_file", Args: `{"path":"hello.txt"}`}}},
		agenttest.Step{Status: 401, Message: "Incorrect API key provided: " + canary + "."})
	env := []string{"OPENAI_API_KEY=" + canary, "ANTHROPIC_API_KEY="}
	r := runCLIEnv(t, dir, env, "", append([]string{"run", "--verbose"}, append(modelFlags(m, "openai"), "read hello.txt")...)...).want(t, 3)
	if !strings.Contains(r.stderr, "openai") || !strings.Contains(r.stderr, "401") || !strings.Contains(r.stderr, "Incorrect API key provided") {
		t.Errorf("stderr should name the provider, the status and its text:\n%s", r.stderr)
	}
	if got := m.Requests()[0].Header.Get("Authorization"); got != "Bearer "+canary {
		t.Fatalf("the model got Authorization %q: the key was not in play", got)
	}
	id, _ := runIDOf(t, dir)
	outputs := map[string]string{"stdout": r.stdout, "stderr": r.stderr}
	for _, args := range [][]string{{"runs", "show", id, "--json"}, {"audit", "--json"}, {"runs", "--json"}} {
		outputs[strings.Join(args, " ")] = runCLI(t, dir, "", args...).want(t, 0).stdout
	}
	for what, s := range outputs {
		if strings.Contains(s, canary) {
			t.Errorf("%s has the key:\n%s", what, s)
		}
	}
	testenv.NoFileHolds(t, dir, canary)
	if fi, err := os.Stat(filepath.Join(dir, ".airlock")); err != nil || !fi.IsDir() {
		t.Errorf("no state directory was searched: %v", err)
	}
}

// TestRunUsageErrors: what airlock run refuses before it starts, each
// with exit 2 and a message that says what to do.
func TestRunUsageErrors(t *testing.T) {
	dir, _ := runProject(t, "")
	local := "http://127.0.0.1:9/v1"
	for _, tt := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"run"}, "run takes a prompt"},
		{nil, []string{"run", "  "}, "the prompt is empty"},
		{nil, []string{"run", "@missing.txt"}, "prompt @missing.txt: cannot read the file"},
		{nil, []string{"run", "hi"}, "choose the model's provider"},
		{nil, []string{"run", "--provider", "gemini", "--model", "m", "hi"}, "--provider must be openai or anthropic"},
		{nil, []string{"run", "--provider", "openai", "hi"}, "name the model"},
		{nil, []string{"run", "--provider", "openai", "--model", "gpt-5.2", "hi"}, "OPENAI_API_KEY is not set"},
		{nil, []string{"run", "--provider", "anthropic", "--model", "claude", "hi"}, "ANTHROPIC_API_KEY is not set"},
		{nil, []string{"run", "--provider", "openai", "--model", "m", "--base-url", "ftp://example.com", "hi"}, "--base-url"},
		{[]string{"OPENAI_API_KEY=sk-x"}, []string{"run", "--provider", "openai", "--model", "m", "--base-url", "http://models.example.com/v1", "hi"}, "in the clear"},
		{nil, []string{"run", "--provider", "openai", "--model", "m", "--base-url", local, "--max-steps", "-1", "hi"}, "-max-steps: give a whole number from 1 to 10000"},
		{nil, []string{"run", "--provider", "openai", "--model", "m", "--base-url", local, "--max-steps", "0", "hi"}, "-max-steps: give a whole number from 1 to 10000"},
		{nil, []string{"runs", "--limit", "0"}, "-limit: give a whole number from 1 to 100000"},
		{nil, []string{"audit", "--limit", "-5"}, "-limit: give a whole number from 1 to 1000000"},
		{nil, []string{"run", "--resume", "run_nope", "--base-url", local}, "no run run_nope"},
		{nil, []string{"run", "--resume", "run_nope", "more"}, "takes no prompt"},
	} {
		r := runCLIEnv(t, dir, append(append([]string{}, noKeys...), tt.env...), "", tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("airlock %v: exit %d, stderr %q; want 2 and %q", tt.args, r.code, r.stderr, tt.want)
		}
		if strings.Contains(r.stderr, "sk-x") {
			t.Errorf("airlock %v printed the key: %s", tt.args, r.stderr)
		}
	}
	// A config's agent: section is used, and a flag overrides it.
	m := agenttest.New(t, agenttest.Step{Text: "from the config"}, agenttest.Step{Text: "from the flag"})
	b, _ := os.ReadFile(filepath.Join(dir, "airlock.yaml"))
	writeFile(t, filepath.Join(dir, "airlock.yaml"), string(b)+fmt.Sprintf("agent:\n  provider: anthropic\n  model: config-model\n  base_url: %s\n", m.URL("anthropic")))
	r := runCLIEnv(t, dir, noKeys, "", "run", "hello").want(t, 0)
	if !strings.Contains(r.stdout, "from the config") || m.Requests()[0].API != "anthropic" || m.Requests()[0].Body["model"] != "config-model" {
		t.Errorf("agent: in the config was not used: %q %+v", r.stdout, m.Requests()[0].Body["model"])
	}
	runCLIEnv(t, dir, noKeys, "", "run", "--model", "flag-model", "hello").want(t, 0)
	if got := m.Requests()[1].Body["model"]; got != "flag-model" {
		t.Errorf("--model did not override agent.model: %v", got)
	}
}

// TestRunProviderFailure: a provider that refuses ends the run with exit
// 3 and its status and text; the run can be resumed.
func TestRunProviderFailure(t *testing.T) {
	dir, _ := runProject(t, "")
	m := agenttest.New(t, agenttest.Step{Status: 400, Message: "model test-model does not exist"})
	r := runCLIEnv(t, dir, noKeys, "", append([]string{"run"}, append(modelFlags(m, "anthropic"), "hi")...)...).want(t, 3)
	for _, want := range []string{"anthropic", "400", "model test-model does not exist", "--resume"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	id, status := runIDOf(t, dir)
	if status != "failed" {
		t.Errorf("run is %s, want failed", status)
	}
	m.Add(agenttest.Step{Text: "Second try."})
	r = runCLIEnv(t, dir, noKeys, "", "run", "--resume", id, "--base-url", m.URL("anthropic")).want(t, 0)
	if !strings.Contains(r.stdout, "Second try.") {
		t.Errorf("stdout = %q", r.stdout)
	}
}

// regexpAll returns the distinct matches of expr in s, in order.
func regexpAll(expr, s string) []string {
	var out []string
	for _, m := range regexp.MustCompile(expr).FindAllString(s, -1) {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// TestRunShowsEscapes: what the model writes (its text, a tool name it
// made up) reaches the terminal with what a terminal would obey shown,
// not obeyed.
func TestRunShowsEscapes(t *testing.T) {
	dir, _ := runProject(t, "")
	m := agenttest.New(t,
		agenttest.Step{Text: "Look\x1b]0;pwned\x07 here\x1b[2J.", Calls: []agenttest.Call{{Name: "evil\x1b[2J\x1b[H", Args: `{}`}}},
		agenttest.Step{Text: "Done."})
	// The provider refuses the made-up name in the next step's history;
	// what matters here is what was shown before.
	r := runCLIEnv(t, dir, noKeys, "", append([]string{"run"}, append(modelFlags(m, "openai"), "go")...)...)
	if !strings.Contains(r.stderr, "→ evil[2J[H") {
		t.Errorf("stderr = %q, want the made-up tool's name shown", r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "\x1b") || strings.Contains(r.stdout+r.stderr, "\x07") {
		t.Errorf("an escape sequence reached the terminal:\nstdout %q\nstderr %q", r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, `Look\x1b]0;pwned\a here\x1b[2J.`) {
		t.Errorf("stdout = %q, want the model's text with its escapes shown", r.stdout)
	}
}

// TestRunStepLimitSaysHowToGoOn: a run that reaches --max-steps is told to
// resume with more steps (a plain resume stops at the limit again), and
// exits 1.
func TestRunStepLimitSaysHowToGoOn(t *testing.T) {
	dir, _ := runProject(t, "")
	again := agenttest.Step{Calls: []agenttest.Call{{Name: "workspace__list_dir", Args: `{}`}}}
	m := agenttest.New(t, again, again, agenttest.Step{Text: "Done."})
	r := runCLIEnv(t, dir, noKeys, "", append([]string{"run", "--max-steps", "1"}, append(modelFlags(m, "openai"), "go")...)...)
	if r.code != exitModel || !strings.Contains(r.stderr, "--max-steps N") || strings.Contains(r.stderr, "tries again") {
		t.Errorf("exit %d, stderr %q; want exit %d saying to resume with --max-steps", r.code, r.stderr, exitModel)
	}
}
