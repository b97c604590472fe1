package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/agent/agenttest"
)

// TestRunAsksOnTheTerminal: on a terminal, airlock run asks a server's
// form through the same prompt as airlock call, and approvals inline: y
// once, n denied (the model told), always remembered for the tool, so the
// next call of it asks nobody.
func TestRunAsksOnTheTerminal(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(t.TempDir(), "mark")
	writeFile(t, filepath.Join(dir, "airlock.yaml"), testServerYAML(t, "[ask_form, record]", envTestAsks, "1", envTestMark, mark)+`policy:
  tools:
    - {server: w, tool: ask_form, effect: read}
  rules:
    - {server: w, tool: ask_form, decision: allow}
`)
	m := agenttest.New(t,
		agenttest.Step{Text: "Asking who you are.", Calls: []agenttest.Call{{Name: "w__ask_form", Args: `{}`}}},
		agenttest.Step{Calls: []agenttest.Call{{Name: "w__record", Args: `{"tag":"once"}`}}},
		agenttest.Step{Calls: []agenttest.Call{{Name: "w__record", Args: `{"tag":"no"}`}}},
		agenttest.Step{Calls: []agenttest.Call{{Name: "w__record", Args: `{"tag":"always"}`}}},
		agenttest.Step{Calls: []agenttest.Call{{Name: "w__record", Args: `{"tag":"remembered"}`}}},
		agenttest.Step{Text: "Done with the records."})
	p := onPTY(t, dir, append(append([]string{"run"}, modelFlags(m, "openai")...), "ask me, then record")...)
	p.expect("Asking who you are.")
	p.expect("server w, during w__ask_form asks:")
	p.expect("Who are you?")
	p.expect("[y = fill in the form, n = decline, c = cancel] ")
	p.send("y\r")
	p.expect("colour (number or value): ")
	p.send("1\r")
	p.expect("count (integer): ")
	p.send("2\r")
	p.expect(`name ["Ada"]: `)
	p.send("\r")
	p.expect("sure (y/n) [leave empty to skip]: ")
	p.send("\r")
	p.expect("w__ask_form ok")
	for _, answer := range []string{"y", "n", "always"} {
		p.expect("w__record needs your approval (apr_")
		p.expect("Approve this call? [y/N/always] ")
		p.send(answer + "\r")
	}
	p.expect("Done with the records.")
	code, out := p.exit()
	if code != 0 {
		t.Fatalf("exit %d, terminal:\n%s", code, out)
	}
	if strings.Contains(out, "needs your approval") {
		t.Errorf("the call after always was asked about:\n%s", out)
	}
	if got := marked(t, mark); !slices.Equal(got, []string{"record once", "record always", "record remembered"}) {
		t.Errorf("the server recorded %q, want once, always and remembered", got)
	}
	reqs := m.Requests()
	results := reqs[len(reqs)-1].ToolResults()
	if len(results) != 5 || !strings.Contains(results[0], `"colour":"red"`) || !strings.Contains(results[2], "denied") {
		t.Errorf("the model was told %q, want the form's answer, the records and the denial", results)
	}
	noRefusals(t, m, "openai")
}
