package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/testenv"
)

// declaringMeta is the _meta of a 2026-07-28 request whose client declares
// the tasks extension.
const declaringMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},` +
	`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// taskRequest sends a 2026-07-28 request of the tasks extension to url:
// method, with params (a JSON object without _meta) and the Mcp-Name
// header name. It returns the result, or fails the test with the error.
func taskRequest(t *testing.T, url, method, name, params string) map[string]any {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + strings.TrimSuffix(params, "}") + `,"_meta":` + declaringMeta + `}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var rep struct {
		Result map[string]any
		Error  any
	}
	if err := json.Unmarshal(data, &rep); err != nil || rep.Error != nil {
		t.Fatalf("%s: %d %s", method, resp.StatusCode, data)
	}
	return rep.Result
}

// tasksConfig writes an airlock.yaml in dir whose server w runs slow_write
// (which marks "called" in mark, then waits until cancelled) as a task,
// and returns its path.
func tasksConfig(t *testing.T, dir, mark string) string {
	t.Helper()
	cfg := filepath.Join(dir, "airlock.yaml")
	writeFile(t, cfg, testServerYAML(t, "[slow_write]", envTestMark, mark)+"    request_timeout: 10m\n"+
		"    tasks: {tools: [slow_write]}\n"+
		"policy:\n  rules:\n    - {server: w, tool: slow_write, decision: allow}\n")
	return cfg
}

func startSlowTask(t *testing.T, url, mark string) string {
	t.Helper()
	res := taskRequest(t, url, "tools/call", "w__slow_write", `{"name":"w__slow_write","arguments":{}}`)
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call: %v, want a task", res)
	}
	waitFor(t, "the server has the call", func() bool { b, _ := os.ReadFile(mark); return strings.Contains(string(b), "called") })
	return id
}

// TestTaskOfAKilledGateway: a gateway killed (kill -9) while a task's
// write runs leaves the task to read failed, with the unknown outcome, on
// the gateway started again on its state: the write reached the server
// once and is not sent again. airlock jobs shows it, and the journal has
// the unknown outcome for a person to resolve.
func TestTaskOfAKilledGateway(t *testing.T) {
	dir := t.TempDir()
	mark, state := filepath.Join(t.TempDir(), "mark"), filepath.Join(t.TempDir(), "state")
	cfg := tasksConfig(t, dir, mark)
	url, cmd := startServe(t, dir, "--http", "127.0.0.1:0", "--config", cfg, "--state", state)
	id := startSlowTask(t, url, mark)
	_, _, m := scrape(t, url, "", "")
	if sample(m, `airlock_gateway_tasks_total{status="working"}`) != "1" || sample(m, `airlock_gateway_tasks_running{status="working"}`) != "1" {
		t.Errorf("/metrics while the task runs lacks it:\n%s", m)
	}
	r := runCLI(t, dir, "", "jobs", "list", "--json", "--config", cfg, "--state", state).want(t, 0)
	if !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, `"working"`) {
		t.Errorf("jobs list while it runs = %s, want the working task", r.stdout)
	}
	cmd.Process.Kill()
	cmd.Wait()

	url, _ = startServe(t, dir, "--http", "127.0.0.1:0", "--config", cfg, "--state", state)
	got := taskRequest(t, url, "tasks/get", id, `{"taskId":"`+id+`"}`)
	e, _ := got["error"].(map[string]any)
	if got["status"] != "failed" || e == nil || !strings.Contains(e["message"].(string), "outcome_unknown") {
		t.Errorf("tasks/get after the kill = %v, want failed with the unknown outcome", got)
	}
	if _, ok := got["result"]; ok {
		t.Errorf("a failed task carries a result: %v", got)
	}
	time.Sleep(500 * time.Millisecond) // long enough for a re-sent call to show
	if b, _ := os.ReadFile(mark); strings.Count(string(b), "called") != 1 {
		t.Errorf("the server saw %q, want exactly one call", b)
	}
	r = runCLI(t, dir, "", "jobs", "show", id, "--config", cfg, "--state", state).want(t, 0)
	if !strings.Contains(r.stdout, "failed") || !strings.Contains(r.stdout, "a write") {
		t.Errorf("jobs show = %q, want the failed write", r.stdout)
	}
	runCLI(t, dir, "", "jobs", "cancel", id, "--config", cfg, "--state", state).want(t, 2)
	r = runCLI(t, dir, "", "recovery", "list", "--json", "--config", cfg, "--state", state).want(t, 0)
	if !strings.Contains(r.stdout, `"w__slow_write"`) || !strings.Contains(r.stdout, `"unknown"`) {
		t.Errorf("recovery list = %s, want the write's unknown outcome", r.stdout)
	}
}

// TestTaskAcrossReplicas: a task started on one replica is read on the
// other (PostgreSQL), and cancelled there: the replica that runs the call
// cancels it (the server sees the cancellation), and both read it
// cancelled. An operator's airlock jobs cancel reaches a running task the
// same way.
func TestTaskAcrossReplicas(t *testing.T) {
	db := testenv.PostgresDatabase(t)
	dir := t.TempDir()
	mark := filepath.Join(dir, "mark")
	cfg := tasksConfig(t, dir, mark)
	urls, _ := serveReplicas(t, dir, cfg, db)

	id := startSlowTask(t, urls[0], mark)
	if got := taskRequest(t, urls[1], "tasks/get", id, `{"taskId":"`+id+`"}`); got["status"] != "working" {
		t.Fatalf("tasks/get on the other replica = %v, want working", got)
	}
	if ack := taskRequest(t, urls[1], "tasks/cancel", id, `{"taskId":"`+id+`"}`); len(ack) != 1 || ack["resultType"] != "complete" {
		t.Errorf("tasks/cancel on the other replica = %v, want the empty acknowledgement", ack)
	}
	waitFor(t, "the server's call cancelled", func() bool { b, _ := os.ReadFile(mark); return strings.Contains(string(b), "cancelled") })
	for _, url := range urls {
		if got := taskRequest(t, url, "tasks/get", id, `{"taskId":"`+id+`"}`); got["status"] != "cancelled" {
			t.Errorf("tasks/get = %v, want cancelled", got)
		}
	}

	os.Remove(mark)
	id = startSlowTask(t, urls[1], mark)
	runCLI(t, dir, "", "jobs", "cancel", id, "--note", "the build is not needed", "--config", cfg).want(t, 0)
	waitFor(t, "the server's call cancelled", func() bool { b, _ := os.ReadFile(mark); return strings.Contains(string(b), "cancelled") })
	r := runCLI(t, dir, "", "jobs", "list", "--all", "--json", "--config", cfg).want(t, 0)
	var list struct {
		Tasks []struct{ ID, Status, Message string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Tasks) != 2 {
		t.Fatalf("jobs list --all = %s, want both tasks", r.stdout)
	}
	for _, task := range list.Tasks {
		if task.Status != "cancelled" {
			t.Errorf("task %s: %s, want cancelled", task.ID, task.Status)
		}
	}
	if last := list.Tasks[1]; last.ID != id || !strings.Contains(last.Message, "the build is not needed") {
		t.Errorf("the cancelled task = %+v, want the operator's note", last)
	}
	r = runCLI(t, dir, "", "audit", "--json", "--config", cfg).want(t, 0)
	if !strings.Contains(r.stdout, `"event":"job_cancelled"`) {
		t.Errorf("audit lacks the cancellation:\n%s", r.stdout)
	}
}

// TestTaskWithInspector: the MCP Inspector's CLI, a client of the tasks
// extension (2026-07-28, @modelcontextprotocol/ext-tasks), calls a tool the
// gateway runs as a task: it is given the task, polls it, and prints the
// call's result, which the task kept (airlock jobs).
func TestTaskWithInspector(t *testing.T) {
	node, launcher := testenv.Inspector(t)
	in := inspector{node: node, launcher: launcher, home: t.TempDir()}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "airlock.yaml")
	writeFile(t, cfg, testServerYAML(t, "[progress]")+"    tasks: {tools: [progress], poll_interval: 200ms}\n"+
		"policy:\n  rules:\n    - {server: w, tool: progress, decision: allow}\n")
	state := filepath.Join(t.TempDir(), "state")
	url, _ := startServe(t, dir, "--http", "127.0.0.1:0", "--config", cfg, "--state", state)
	r := in.run(t, dir, "--protocol-era", "modern", "--transport", "http", "--server-url", url,
		"--method", "tools/call", "--tool-name", "w__progress", "--tool-arg", "steps=3", "pause_ms=300")
	if r.code != 0 || r.Result.IsError || len(r.Result.Content) != 1 || r.Result.Content[0].Text != "done" {
		t.Fatalf("the Inspector's call: exit %d, %+v\nstderr:\n%s", r.code, r.Result, r.stderr)
	}
	out := runCLI(t, dir, "", "jobs", "list", "--all", "--json", "--config", cfg, "--state", state).want(t, 0)
	var list struct {
		Tasks []struct {
			Tool, Status string
			Result       json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(out.stdout), &list); err != nil || len(list.Tasks) != 1 ||
		list.Tasks[0].Status != "completed" || !strings.Contains(string(list.Tasks[0].Result), "done") {
		t.Errorf("jobs list --all = %s, want the one completed task the Inspector polled", out.stdout)
	}
}
