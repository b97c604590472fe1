package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/auth/bearer/bearertest"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/gateway"
	"github.com/airlockhq/airlock/internal/testenv"
)

// taskTools is the tasks: mapping of w in the task fixtures: its waits
// and echo run as tasks, note only as one.
var taskTools = map[string]*config.Tasks{"w": {Tools: []string{"wait*", "echo"}, Required: []string{"note"},
	TTL: time.Hour, PollInterval: 500 * time.Millisecond, MaxResultBytes: 1 << 20}}

// startTasks serves the fixture with taskTools, and opts (nil for none).
func startTasks(t *testing.T, opts *gateway.Options) *fixture {
	t.Helper()
	var o gateway.Options
	if opts != nil {
		o = *opts
	}
	o.Tasks = taskTools
	return start(t, "", &o)
}

// declaring is the _meta of a 2026-07-28 request whose client declares
// the tasks extension.
const declaring = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},` +
	`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// undeclaring is the same without the extension.
const undeclaring = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},` +
	`"io.modelcontextprotocol/clientCapabilities":{}}`

// rpcReply is a JSON-RPC response as the tests read it.
type rpcReply struct {
	status int
	Result map[string]any `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// taskRPC sends a 2026-07-28 request of method to the fixture, with
// params (a JSON object into which _meta is put), the Mcp-Name header
// name, and tok as its bearer token when not empty.
func taskRPC(t *testing.T, f *fixture, method, name, params, meta, tok string) rpcReply {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + strings.TrimSuffix(params, "}") + `,"_meta":` + meta + `}}`
	if params == "{}" {
		body = `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"_meta":` + meta + `}}`
	}
	code, _, out := post(t, f, stateless, body, func(r *http.Request) {
		r.Header.Set("Mcp-Name", name)
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
	})
	var rep rpcReply
	if i := strings.Index(out, "{"); i >= 0 {
		// A reply on an event stream is one data line.
		out = out[i:]
		if j := strings.LastIndex(out, "}"); j >= 0 {
			out = out[:j+1]
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%s: %d %q: %v", method, code, out, err)
	}
	rep.status = code
	return rep
}

func startTask(t *testing.T, f *fixture, tool, tok string) string {
	t.Helper()
	return startTaskWith(t, f, tool, declaring, tok)
}

// startTaskWith starts a task of tool, its request's _meta meta.
func startTaskWith(t *testing.T, f *fixture, tool, meta, tok string) string {
	t.Helper()
	rep := taskRPC(t, f, "tools/call", tool, `{"name":"`+tool+`","arguments":{}}`, meta, tok)
	if rep.Error != nil || rep.Result["resultType"] != "task" {
		t.Fatalf("tools/call %s: %+v, want a task", tool, rep)
	}
	id, _ := rep.Result["taskId"].(string)
	if id == "" || rep.Result["status"] != "working" {
		t.Fatalf("tools/call %s: %v, want a working task with an id", tool, rep.Result)
	}
	return id
}

func getTask(t *testing.T, f *fixture, id, tok string) rpcReply {
	t.Helper()
	return taskRPC(t, f, "tasks/get", id, `{"taskId":"`+id+`"}`, declaring, tok)
}

// waitStatus polls the task until it has status.
func waitStatus(t *testing.T, f *fixture, id, tok, status string) map[string]any {
	t.Helper()
	var last map[string]any
	waitFor(t, "task "+status, func() bool {
		rep := getTask(t, f, id, tok)
		last = rep.Result
		return rep.Error == nil && rep.Result["status"] == status
	})
	return last
}

// TestTaskLifecycle: a long call of a declaring client becomes a task at
// once, which the client polls after its connection was closed (as one
// that went away and came back) until it completes with the call's result; the
// server saw the call once. A quick call of the same client is answered as
// any call, and a client that did not declare the extension gets its calls
// answered as before.
func TestTaskLifecycle(t *testing.T) {
	f := startTasks(t, nil)
	id := startTask(t, f, "w__wait_write", "")
	// The client goes away: its connection is closed, and every poll
	// below opens one of its own.
	http.DefaultClient.CloseIdleConnections()
	rep := getTask(t, f, id, "")
	if rep.Error != nil || rep.Result["status"] != "working" || rep.Result["resultType"] != "complete" {
		t.Fatalf("tasks/get while the call runs: %+v", rep)
	}
	for _, k := range []string{"result", "error", "inputRequests", "requestState"} {
		if _, ok := rep.Result[k]; ok {
			t.Errorf("a working task carries %s: %v", k, rep.Result)
		}
	}
	if ttl, _ := rep.Result["ttlMs"].(float64); ttl != float64(time.Hour.Milliseconds()) {
		t.Errorf("ttlMs = %v, want the configured hour", rep.Result["ttlMs"])
	}
	http.DefaultClient.CloseIdleConnections()
	release(t, f.mark)
	done := waitStatus(t, f, id, "", "completed")
	res, _ := done["result"].(map[string]any)
	if content, _ := res["content"].([]any); len(content) != 1 || !strings.Contains(string(mustJSON(t, content)), `"done"`) {
		t.Errorf("completed task's result = %v, want the call's content", done["result"])
	}
	if got := marks(t, f.mark, "call wait_write"); len(got) != 1 {
		t.Errorf("the server saw %q, want one call", got)
	}

	quick := taskRPC(t, f, "tools/call", "w__echo", `{"name":"w__echo","arguments":{"text":"hi"}}`, declaring, "")
	if quick.Error != nil || quick.Result["resultType"] != "complete" || quick.Result["taskId"] != nil {
		t.Errorf("a quick call of a task tool: %+v, want its result", quick)
	}
	plain := taskRPC(t, f, "tools/call", "w__echo", `{"name":"w__echo","arguments":{"text":"hi"}}`, undeclaring, "")
	if plain.Error != nil || plain.Result["taskId"] != nil || !strings.Contains(string(mustJSON(t, plain.Result["content"])), "hi") {
		t.Errorf("a call of a client without the extension: %+v, want its result", plain)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTaskCancel: tasks/cancel of a running task is acknowledged with an
// empty result, the task settles cancelled, the server's call is
// cancelled, and a second cancel is the same acknowledgement.
func TestTaskCancel(t *testing.T) {
	f := startTasks(t, nil)
	id := startTask(t, f, "w__wait", "")
	waitFor(t, "the server has the call", func() bool { return len(marks(t, f.mark, "call wait")) == 1 })
	for range 2 {
		rep := taskRPC(t, f, "tasks/cancel", id, `{"taskId":"`+id+`"}`, declaring, "")
		if rep.Error != nil || len(rep.Result) != 1 || rep.Result["resultType"] != "complete" {
			t.Fatalf("tasks/cancel: %+v, want the empty acknowledgement", rep)
		}
	}
	waitStatus(t, f, id, "", "cancelled")
	waitFor(t, "the server's call cancelled", func() bool { return len(marks(t, f.mark, "cancelled wait")) == 1 })
}

// TestTaskErrors: what a client may get wrong about tasks is refused with
// the error the extension names, and nothing reaches the server.
func TestTaskErrors(t *testing.T) {
	f := startTasks(t, nil)
	id := startTask(t, f, "w__wait", "")
	defer release(t, f.mark)

	for _, method := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		rep := taskRPC(t, f, method, id, `{"taskId":"`+id+`","inputResponses":{}}`, undeclaring, "")
		if rep.Error == nil || rep.Error.Code != -32021 || rep.status != http.StatusBadRequest ||
			!strings.Contains(string(rep.Error.Data), "io.modelcontextprotocol/tasks") {
			t.Errorf("%s without the extension: %+v, want -32021 naming it", method, rep)
		}
		rep = taskRPC(t, f, method, "task_nope", `{"taskId":"task_nope","inputResponses":{}}`, declaring, "")
		switch {
		case method == "tasks/update" && (rep.Error != nil || rep.Result["resultType"] != "complete"):
			t.Errorf("tasks/update of an unknown task: %+v, want the acknowledgement SEP-2663 gives any id", rep)
		case method != "tasks/update" && (rep.Error == nil || rep.Error.Code != -32602):
			t.Errorf("%s of an unknown task: %+v, want -32602", method, rep)
		}
		rep = taskRPC(t, f, method, "another", `{"taskId":"`+id+`","inputResponses":{}}`, declaring, "")
		if rep.Error == nil || rep.Error.Code != -32020 || rep.status != http.StatusBadRequest {
			t.Errorf("%s with an Mcp-Name not its task's: %+v, want -32020", method, rep)
		}
	}
	for _, method := range []string{"tasks/list", "tasks/result"} {
		rep := taskRPC(t, f, method, id, `{"taskId":"`+id+`"}`, declaring, "")
		if rep.Error == nil || rep.Error.Code != -32601 {
			t.Errorf("%s: %+v, want -32601: not a method of this revision", method, rep)
		}
	}
	// note runs only as a task.
	rep := taskRPC(t, f, "tools/call", "w__note", `{"name":"w__note","arguments":{"text":"x"}}`, undeclaring, "")
	if rep.Error == nil || rep.Error.Code != -32021 {
		t.Errorf("a task-only tool without the extension: %+v, want -32021", rep)
	}
	cs := f.connect(t, session, nil)
	if _, err := call(t, cs, "w__note", `{"text":"x"}`); err == nil || rpcError(t, err).Code != -32021 {
		t.Errorf("a task-only tool in a 2025-11-25 session: %v, want -32021", err)
	}
	if got := marks(t, f.mark, "call note"); len(got) != 0 {
		t.Errorf("the server saw %q, want nothing of note", got)
	}
}

// TestTaskBelongsToItsPrincipal: another user's tasks/get and tasks/cancel
// of a task are answered as for a task that does not exist, and the task
// runs on; its own user reads it.
func TestTaskBelongsToItsPrincipal(t *testing.T) {
	idp := bearertest.New(t, nil)
	a := &config.ServeAuth{Issuer: idp.URL, Resource: gatewayResource, Scopes: []string{scopeTools}, TenantClaim: "tenant", UserClaim: "sub"}
	v, err := gateway.NewVerifier(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := startTasks(t, &gateway.Options{Serve: config.Serve{Auth: a}, Verifier: v})
	alice, bob, other := token(t, idp, "acme", "alice"), token(t, idp, "acme", "bob"), token(t, idp, "globex", "alice")
	id := startTask(t, f, "w__wait", alice)
	for _, tok := range []string{bob, other} {
		for _, method := range []string{"tasks/get", "tasks/cancel"} {
			rep := taskRPC(t, f, method, id, `{"taskId":"`+id+`"}`, declaring, tok)
			if rep.Error == nil || rep.Error.Code != -32602 {
				t.Errorf("%s by another principal: %+v, want -32602 (unknown task)", method, rep)
			}
		}
	}
	if rep := getTask(t, f, id, alice); rep.Error != nil || rep.Result["status"] != "working" {
		t.Errorf("tasks/get by its own user: %+v, want it still working", rep)
	}
	release(t, f.mark)
	waitStatus(t, f, id, alice, "completed")
}

// askingClient is the _meta of a declaring client that may be asked
// (form elicitation).
const askingClient = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},` +
	`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// answerTask waits until the task id asks under key, checks the question,
// and answers it on f (a replica, perhaps not the one running the call).
func answerTask(t *testing.T, asked, f *fixture, id, key, answer string) {
	t.Helper()
	got := waitStatus(t, asked, id, "", "input_required")
	reqs, _ := got["inputRequests"].(map[string]any)
	q, _ := reqs[key].(map[string]any)
	if q["method"] != "elicitation/create" || !strings.Contains(string(mustJSON(t, q)), "What is your name?") {
		t.Fatalf("the task's questions = %v, want the server's under %s", got["inputRequests"], key)
	}
	rep := taskRPC(t, f, "tasks/update", id, `{"taskId":"`+id+`","inputResponses":{"`+key+`":`+answer+`,"not_asked":{"action":"accept"}}}`, askingClient, "")
	if rep.Error != nil || len(rep.Result) != 1 || rep.Result["resultType"] != "complete" {
		t.Fatalf("tasks/update: %+v, want the empty acknowledgement", rep)
	}
}

// TestTaskInput: a task whose server asks once the call has become a task
// waits in input_required with the question under the server's key;
// tasks/update answers it (an answer to a question not asked is ignored),
// and the task completes with what the server made of the answer.
func TestTaskInput(t *testing.T) {
	f := startAsksWith(t, "", &gateway.Options{Tasks: map[string]*config.Tasks{"w": {Tools: []string{"later", "twice"},
		TTL: time.Hour, PollInterval: time.Second, MaxResultBytes: 1 << 20}}})
	id := startTaskWith(t, f, "later", askingClient, "")
	answerTask(t, f, f, id, "user_name", `{"action":"accept","content":{"name":"Ada"}}`)
	done := waitStatus(t, f, id, "", "completed")
	if !strings.Contains(string(mustJSON(t, done["result"])), "hello Ada") {
		t.Errorf("the completed task = %v, want the server's greeting", done)
	}

	// A key is asked under once in a task: the server's second question
	// under user_name is asked under another.
	id = startTaskWith(t, f, "twice", askingClient, "")
	answerTask(t, f, f, id, "user_name", `{"action":"accept","content":{"name":"Ada"}}`)
	answerTask(t, f, f, id, "user_name.2", `{"action":"accept","content":{"name":"Grace"}}`)
	done = waitStatus(t, f, id, "", "completed")
	if !strings.Contains(string(mustJSON(t, done["result"])), "Ada then Grace") {
		t.Errorf("the completed task = %v, want both answers", done)
	}
}

// TestTaskInputAcrossReplicas: the answers to a task's question sent to
// another replica than the one running its call (PostgreSQL) reach the
// call there, and the task completes.
func TestTaskInputAcrossReplicas(t *testing.T) {
	db := testenv.PostgresDatabase(t)
	shared := fmt.Sprintf("    tasks: {tools: [later]}\nstore: {url: %q, audit_key: %q}\n", db, filepath.Join(t.TempDir(), "audit.key"))
	opts := &gateway.Options{StateKey: make([]byte, 32), Tasks: map[string]*config.Tasks{"w": {Tools: []string{"later"},
		TTL: time.Hour, PollInterval: time.Second, MaxResultBytes: 1 << 20}}}
	var replicas [2]*fixture
	for i := range replicas {
		replicas[i] = startAsksWith(t, shared, opts)
	}
	testenv.WaitListening(t, db, "gateway", 2)
	id := startTaskWith(t, replicas[0], "later", askingClient, "")
	answerTask(t, replicas[1], replicas[1], id, "user_name", `{"action":"accept","content":{"name":"Grace"}}`)
	done := waitStatus(t, replicas[1], id, "", "completed")
	if !strings.Contains(string(mustJSON(t, done["result"])), "hello Grace") {
		t.Errorf("the completed task = %v, want the server's greeting", done)
	}
}

// TestTaskBounds: a result larger than max_result_bytes is not kept (the
// task fails saying so), and a task is gone once its ttl has passed: read
// as unknown, and its call, still running, cancelled.
func TestTaskBounds(t *testing.T) {
	f := start(t, "", &gateway.Options{Tasks: map[string]*config.Tasks{"w": {Tools: []string{"wait"}, Required: []string{"echo"},
		TTL: 1500 * time.Millisecond, PollInterval: 100 * time.Millisecond, MaxResultBytes: 1024}}})
	rep := taskRPC(t, f, "tools/call", "w__echo", `{"name":"w__echo","arguments":{"text":"`+strings.Repeat("x", 900)+`"}}`, declaring, "")
	id, _ := rep.Result["taskId"].(string)
	if id == "" {
		t.Fatalf("a call of a task-only tool: %+v, want a task", rep)
	}
	failed := waitStatus(t, f, id, "", "failed")
	if e, _ := failed["error"].(map[string]any); e == nil || !strings.Contains(e["message"].(string), "max_result_bytes") {
		t.Errorf("the task of a result too large = %v, want failed naming max_result_bytes", failed)
	}

	id = startTask(t, f, "w__wait", "")
	waitFor(t, "the task removed after its ttl", func() bool {
		rep := getTask(t, f, id, "")
		return rep.Error != nil && rep.Error.Code == -32602
	})
	waitFor(t, "its call cancelled", func() bool { return len(marks(t, f.mark, "cancelled wait")) == 1 })
}

// TestTaskApprovedFirst: a task call that policy wants approved asks
// first, as any call of a client that can be asked does, and nothing is
// sent; the retry carrying the approval becomes the task, and the server
// sees the call once.
func TestTaskApprovedFirst(t *testing.T) {
	f := start(t, `    - {server: w, tool: wait, decision: ask}
`, &gateway.Options{Tasks: taskTools})
	round := taskRPC(t, f, "tools/call", "w__wait", `{"name":"w__wait","arguments":{}}`, askingClient, "")
	state, _ := round.Result["requestState"].(string)
	if round.Error != nil || round.Result["resultType"] != "input_required" || state == "" || round.Result["taskId"] != nil {
		t.Fatalf("a task call policy wants approved: %+v, want the approval question first", round)
	}
	if got := marks(t, f.mark, "call wait"); len(got) != 0 {
		t.Fatalf("the server saw %q before the approval", got)
	}
	reqs, _ := round.Result["inputRequests"].(map[string]any)
	var key string
	for k := range reqs {
		key = k
	}
	retry := taskRPC(t, f, "tools/call", "w__wait", `{"name":"w__wait","arguments":{},"requestState":"`+state+
		`","inputResponses":{"`+key+`":{"action":"accept","content":{"approve":true}}}}`, askingClient, "")
	id, _ := retry.Result["taskId"].(string)
	if retry.Error != nil || retry.Result["resultType"] != "task" || id == "" {
		t.Fatalf("the approved retry: %+v, want a task", retry)
	}
	waitFor(t, "the server has the call", func() bool { return len(marks(t, f.mark, "call wait")) == 1 })
	release(t, f.mark)
	waitStatus(t, f, id, "", "completed")
	if got := marks(t, f.mark, "call wait"); len(got) != 1 {
		t.Errorf("the server saw %q, want one call", got)
	}
}

// TestTaskHostileInput: malformed tasks requests are refused with what to
// fix, and none reaches a task.
func TestTaskHostileInput(t *testing.T) {
	f := startTasks(t, nil)
	for _, c := range []struct{ params, name, want string }{
		{`{"inputResponses":{}}`, "", "needs params.taskId"},
		{`{"taskId":42}`, "42", "invalid params"},
		{`{"taskId":"` + strings.Repeat("x", 5000) + `"}`, strings.Repeat("x", 5000), "unknown task"},
	} {
		rep := taskRPC(t, f, "tasks/get", c.name, c.params, declaring, "")
		if rep.Error == nil || rep.Error.Code != -32602 || !strings.Contains(rep.Error.Message, c.want) || len(rep.Error.Message) > 300 {
			t.Errorf("tasks/get %.60s: %+v, want -32602 saying %q, briefly", c.params, rep, c.want)
		}
	}
}

// TestTaskOnlyToolApprovedFirst: a tool that only runs as a task and that
// policy wants approved asks first too (the question is not swallowed by
// the task), and the approved retry is the task, settled with the call's
// result even when the call returns at once.
func TestTaskOnlyToolApprovedFirst(t *testing.T) {
	f := start(t, `    - {server: w, tool: note, decision: ask}
`, &gateway.Options{Tasks: taskTools})
	round := taskRPC(t, f, "tools/call", "w__note", `{"name":"w__note","arguments":{"text":"hi"}}`, askingClient, "")
	state, _ := round.Result["requestState"].(string)
	if round.Error != nil || round.Result["resultType"] != "input_required" || state == "" {
		t.Fatalf("a task-only call policy wants approved: %+v, want the approval question first", round)
	}
	var key string
	for k := range round.Result["inputRequests"].(map[string]any) {
		key = k
	}
	retry := taskRPC(t, f, "tools/call", "w__note", `{"name":"w__note","arguments":{"text":"hi"},"requestState":"`+state+
		`","inputResponses":{"`+key+`":{"action":"accept","content":{"approve":true}}}}`, askingClient, "")
	id, _ := retry.Result["taskId"].(string)
	if retry.Error != nil || retry.Result["resultType"] != "task" || id == "" {
		t.Fatalf("the approved retry: %+v, want a task", retry)
	}
	done := waitStatus(t, f, id, "", "completed")
	if !strings.Contains(string(mustJSON(t, done["result"])), "noted: hi") {
		t.Errorf("the task = %v, want the call's result", done)
	}
	if got := marks(t, f.mark, "call note"); len(got) != 1 {
		t.Errorf("the server saw %q, want one call", got)
	}
}

// TestTasksOfferedTo2026ClientsOnly: the tasks extension is declared in
// server/discover, and not in a 2025-11-25 session's initialize: such a
// session could not use it (tasks/get there is method not found).
func TestTasksOfferedTo2026ClientsOnly(t *testing.T) {
	f := startTasks(t, nil)
	req := newPost(t, f.url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"protocolVersion":"2025-11-25"`) || strings.Contains(string(body), "io.modelcontextprotocol/tasks") {
		t.Errorf("initialize answered %s; want no tasks extension", body)
	}
	_, _, disc := post(t, f, stateless, `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"_meta":`+declaring+`}}`, nil)
	if !strings.Contains(disc, `"io.modelcontextprotocol/tasks"`) {
		t.Errorf("server/discover answered %s; want the tasks extension", disc)
	}
}
