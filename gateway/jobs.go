//lint:file-ignore SA1019 a server may still ask for a sample or its client's roots, which protocol version 2026-07-28 deprecates (SEP-2577); a task takes the client's answers to them.

package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
)

// Long tool calls as MCP tasks (the io.modelcontextprotocol/tasks
// extension, SEP-2663). A server's tasks: mapping names tools the gateway
// runs as tasks: a 2026-07-28 client that declares the extension (in its
// request's _meta) and calls one is answered, once the call has run for
// syncWindow, with a task (CreateTaskResult) it polls with tasks/get, while
// the call goes on through the same pipeline in the background, as a
// parked call does (parked.go): policy, approvals and the journal come
// first, and a question its server asks during the call waits in the task
// (input_required, answered with tasks/update). Within syncWindow the call
// is answered as any other: a question asked then is a round of the call
// (the retry carrying the answer takes it up again, and may become the
// task), and a result then is the call's answer (but for a tool that only
// runs as a task, which gets its task either way).
//
// Tasks are kept in the store (store.Jobs), so that every replica sharing
// it answers tasks/get, and a task whose gateway died while it ran reads
// failed (for a write, with the unknown outcome: the call is never sent
// again). A task belongs to the principal that made the call: for
// another, it does not exist. Clients that did not declare the extension,
// and tools not named, are served as before; a tool that only runs as a
// task (tasks.required) is refused to those clients, saying what they
// must declare.

// taskExtension names the extension, in capabilities and _meta.
const taskExtension = "io.modelcontextprotocol/tasks"

// syncWindow is how long a task call is answered as a plain call before it
// becomes a task.
const syncWindow = 300 * time.Millisecond

// jobWatch is how often a running task checks its record, to stop when it
// was cancelled through another replica.
const jobWatch = time.Second

// jobPurge is how often a gateway removes the tasks past their ttl.
const jobPurge = time.Minute

// jobs are the gateway's tasks: the records in the store, and the calls
// this process runs for them.
type jobs struct {
	st   store.Jobs // nil: tasks are not offered
	live byID[*job]
}

// A job is a task whose call this process runs.
type job struct {
	id    string
	p     *parkedCall
	tasks *config.Tasks

	mu      sync.Mutex
	pending map[string]*parkedAsk // the questions the call waits on, by key
	used    map[string]bool       // every key it was asked under
}

func (js *jobs) add(j *job)         { js.live.put(j.id, j, 0) }
func (js *jobs) get(id string) *job { return js.live.get(id) }
func (js *jobs) remove(id string)   { js.live.remove(id) }

// count is how many tasks this process runs, by status.
func (js *jobs) count() map[string]int {
	n := map[string]int{}
	for _, j := range js.live.values() {
		j.mu.Lock()
		if len(j.pending) > 0 {
			n[string(store.JobInputRequired)]++
		} else {
			n[string(store.JobWorking)]++
		}
		j.mu.Unlock()
	}
	return n
}

// taskTool is how the listed tool name is run as a task, and the tasks:
// mapping of its server.
type taskTool struct {
	mode    config.TaskMode
	tasks   *config.Tasks
	server  string
	journal bool
}

// taskToolOf returns how the gateway runs the listed tool name.
func (g *Gateway) taskToolOf(name string) taskTool {
	m := g.taskTools.Load()
	if m == nil {
		return taskTool{}
	}
	return (*m)[name]
}

// indexTaskTools returns the listed tools that run as tasks, by name:
// none when tasks are not offered, so that no tool is refused to a client
// for want of an extension the gateway cannot serve.
func (g *Gateway) indexTaskTools(snap *airlock.Snapshot) map[string]taskTool {
	out := map[string]taskTool{}
	if !g.offersTasks() {
		return out
	}
	for _, t := range snap.Tools() {
		ts := g.opts.Tasks[t.Server]
		if mode := ts.Mode(t.RemoteName); mode != config.TaskNever {
			out[t.Name] = taskTool{mode: mode, tasks: ts, server: t.Server, journal: t.Effect != airlock.EffectRead}
		}
	}
	return out
}

// offersTasks reports whether the gateway runs any tool as a task.
func (g *Gateway) offersTasks() bool { return len(g.opts.Tasks) > 0 && g.jobs.st != nil }

// declaresTasks reports whether a request's client declared the tasks
// extension.
func declaresTasks(caps *mcp.ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[taskExtension]
	return ok
}

// tasksRequired is the error for a client that did not declare the tasks
// extension and needs it: for tasks/*, and for a tool that only runs as a
// task.
func tasksRequired(what string) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{
		"extensions": map[string]any{taskExtension: map[string]any{}}}})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Data: data,
		Message: what + " needs the " + taskExtension + " extension: declare it in the request's _meta (io.modelcontextprotocol/clientCapabilities.extensions)"}
}

// unknownTask answers a task id that names no task of the caller's.
var unknownTask = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
	Message: "unknown task: no task of yours has this id (it may have expired)"}

// taskCall serves a tools/call that may become a task: req is its
// request, from a client that declared the extension, and tt how its tool
// runs. It returns the call's answer, or the task it became.
func (g *Gateway) taskCall(ctx context.Context, req *mcp.CallToolRequest, tt taskTool) (mcp.Result, *store.Job, error) {
	ctx, done, ok := g.calls.enter(ctx)
	if !ok {
		return nil, nil, shuttingDown
	}
	defer g.calls.leave()
	defer done()
	p := req.Params
	ex := toolExchange(req)
	who, err := g.callerOf(req.Extra)
	if err != nil {
		return nil, nil, err
	}
	if err := g.checkState(ex, who); err != nil {
		return nil, nil, err
	}
	if ex.parked() {
		// The retry of a round the call answered before it became a task.
		pc := g.openParked(ex.state, ex.subject, who.key())
		if pc == nil {
			// Its call waits on another replica (or nowhere): the round
			// is handed there as any call's (rounds.go), and answered as
			// a plain call's.
			res, err := g.resume(ctx, ex, who)
			return res, nil, err
		}
		if err := pc.take(ex.responses); err != nil {
			return nil, nil, err
		}
		return g.taskRound(ctx, pc, who, p.Name, tt)
	}
	turn, err := turnOf(ex.meta)
	if err != nil {
		return nil, nil, err
	}
	// Progress and log messages have nowhere to go: the request ends with
	// its first round.
	tc, err := g.toolCall(ex, who, p, turn, nil)
	if err != nil {
		return nil, nil, err
	}
	tc.asking.modern = true
	pc, err := g.startParked(ctx, ex, who, tc.asking, tc.run, tc.finish)
	if err != nil {
		tc.release()
		return nil, nil, err
	}
	return g.taskRound(ctx, pc, who, p.Name, tt)
}

// taskRound waits syncWindow for what the call pc does: a question, which
// ends the round as for any call; its result, which is the answer (unless
// the tool only runs as a task); or nothing, when the call becomes a task.
func (g *Gateway) taskRound(ctx context.Context, pc *parkedCall, who caller, name string, tt taskTool) (mcp.Result, *store.Job, error) {
	wait := time.NewTimer(syncWindow)
	defer wait.Stop()
	var (
		res     mcp.Result
		err     error
		settled bool // the call returned within the window: res and err are its answer
	)
	select {
	case a := <-pc.asks:
		return g.askRound(pc, a), nil, nil
	case <-pc.done:
		g.parked.remove(pc.id)
		res, err = pc.finish(ctx, pc.res)
		if tt.mode != config.TaskRequired || asks(res) {
			// Its answer, or a question of the gateway's own (an
			// approval), which is a round of the call as any is.
			return res, nil, err
		}
		settled = true
	case <-wait.C:
	case <-ctx.Done():
		pc.cancel()
		g.parked.remove(pc.id)
		return nil, nil, ctx.Err()
	}
	j := &job{id: store.NewID("task_"), p: pc, tasks: tt.tasks}
	now := store.UTC(time.Now())
	rec := store.Job{ID: j.id, Tenant: who.who.Tenant, User: who.who.User, Server: tt.server, Tool: name, Write: tt.journal,
		Status: store.JobWorking, Lost: airlock.LostJobError(tt.journal, tt.server, name), TTL: tt.tasks.TTL,
		PollInterval: tt.tasks.PollInterval, CreatedAt: now, UpdatedAt: now}
	if err := g.jobs.st.CreateJob(ctx, rec); err != nil {
		pc.cancel()
		g.log.Error("task not created: the store refused its record", "tool", clip(name), "error", err)
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the gateway cannot keep this task (its store refused the record); the call was cancelled: make it again"}
	}
	g.opts.Measures.Task(string(store.JobWorking))
	if settled {
		g.settleWith(ctx, j, res, err)
		return nil, &rec, nil
	}
	g.jobs.add(j)
	go g.runJob(j)
	return nil, &rec, nil
}

// asks reports whether res is a round that asks the client something.
func asks(res mcp.Result) bool {
	cr, ok := res.(*mcp.CallToolResult)
	return ok && len(cr.InputRequests) > 0
}

// runJob follows the call of j until it settles: its questions wait in
// the task, and its result or error settles it. A task cancelled through
// another replica cancels the call here.
func (g *Gateway) runJob(j *job) {
	defer g.jobs.remove(j.id)
	pc := j.p
	ctx := context.Background()
	watch := time.NewTicker(jobWatch)
	defer watch.Stop()
	for {
		select {
		case a := <-pc.asks:
			j.ask(pc.gather(a))
			g.jobUpdate(ctx, j, j.status())
		case <-pc.done:
			g.parked.remove(pc.id)
			g.settle(ctx, j)
			return
		case <-watch.C:
			if rec, err := g.jobs.st.Job(ctx, j.id); err == nil && rec.Status.Terminal() || errors.Is(err, store.ErrNotFound) {
				pc.cancel()
			}
		}
	}
}

// ask records the questions batch the call now waits on.
// A key is never asked twice in one task (SEP-2663: an answer under a
// key is always to the question the client saw under it): a server that
// asks under a key it used before gets a suffix on the wire, as two
// questions of one round do (parkedCall.gather).
func (j *job) ask(batch map[string]*parkedAsk) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.pending == nil {
		j.pending, j.used = map[string]*parkedAsk{}, map[string]bool{}
	}
	for key, a := range batch {
		for n, base := 2, key; j.used[key]; n++ {
			key = fmt.Sprintf("%s.%d", base, n)
		}
		j.used[key] = true
		j.pending[key] = a
	}
}

// status is the update of j's record for the questions it waits on.
func (j *job) status() store.JobUpdate {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.pending) == 0 {
		return store.JobUpdate{Status: store.JobWorking}
	}
	reqs := mcp.InputRequestMap{}
	for key, a := range j.pending {
		reqs[key] = a.params
	}
	input, err := json.Marshal(reqs)
	if err != nil {
		input = []byte("{}")
	}
	return store.JobUpdate{Status: store.JobInputRequired, Message: "waiting for the client's answers (tasks/update)", Input: input}
}

// answer hands the client's answers (raw, by key) to the questions the
// call waits on; answers to other keys are ignored. It reports whether
// any was taken.
func (j *job) answer(responses map[string]json.RawMessage) (bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	took := false
	for key, raw := range responses {
		a := j.pending[key]
		if a == nil {
			continue
		}
		resp, err := inputResponse(a.params, raw)
		if err != nil {
			return took, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("inputResponses[%q]: %v", clip(key), err)}
		}
		delete(j.pending, key)
		a.answer <- resp
		took = true
	}
	return took, nil
}

// inputResponse decodes raw as the answer to a question of params' kind.
func inputResponse(params mcp.InputRequest, raw json.RawMessage) (mcp.InputResponse, error) {
	var resp mcp.InputResponse
	switch params.(type) {
	case *mcp.ElicitParams:
		resp = &mcp.ElicitResult{}
	case *mcp.CreateMessageParams:
		resp = &mcp.CreateMessageResult{}
	case *mcp.ListRootsParams:
		resp = &mcp.ListRootsResult{}
	default:
		return nil, fmt.Errorf("cannot answer a question of type %T", params)
	}
	if err := json.Unmarshal(raw, resp); err != nil {
		return nil, fmt.Errorf("not an answer to this question: %v", err)
	}
	return resp, nil
}

// jobUpdate writes u to j's record; a task settled meanwhile (cancelled)
// stays as it is.
func (g *Gateway) jobUpdate(ctx context.Context, j *job, u store.JobUpdate) bool {
	err := g.jobs.st.UpdateJob(ctx, j.id, u)
	switch {
	case err == nil:
		return true
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
	default:
		g.log.Error("task record not updated", "task", j.id, "status", u.Status, "error", err)
	}
	return false
}

// settle records how j's call ended (settleWith).
func (g *Gateway) settle(ctx context.Context, j *job) {
	res, err := j.p.finish(ctx, j.p.res)
	g.settleWith(ctx, j, res, err)
}

// settleWith records how j's call ended, res and err being its answer:
// completed with its result (a tool error included), or failed with a
// protocol error, an unknown outcome or a result larger than the tasks:
// mapping keeps.
func (g *Gateway) settleWith(ctx context.Context, j *job, res mcp.Result, err error) {
	r := j.p.res
	var u store.JobUpdate
	switch {
	case r != nil && r.Status == airlock.OutcomeUnknown:
		u = failedUpdate(unknownOutcome(r))
	case err != nil:
		u = failedUpdate(err)
	default:
		if asks(res) {
			// An approval question, asked after the call became a
			// task: the person approves it out of band.
			res = toolError(r, r.Err.Msg)
		}
		body, err := json.Marshal(res)
		switch {
		case err != nil:
			u = failedUpdate(err)
		case len(body) > j.tasks.MaxResultBytes:
			u = failedUpdate(&jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(
				"the call's result of %d bytes is larger than this server's tasks.max_result_bytes (%d): it is not kept", len(body), j.tasks.MaxResultBytes)})
		default:
			u = store.JobUpdate{Status: store.JobCompleted, Result: body}
		}
	}
	if g.jobUpdate(ctx, j, u) {
		g.opts.Measures.Task(string(u.Status))
	}
}

// unknownOutcome is the error of a task whose write's outcome is unknown.
func unknownOutcome(r *airlock.Result) *jsonrpc.Error {
	msg := fmt.Sprintf("outcome_unknown: %s (recovery id %s)", unknownText(r), r.RecoveryID)
	data, _ := json.Marshal(map[string]string{"class": string(r.Status), "recovery_id": r.RecoveryID, "trace_id": r.TraceID})
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg, Data: data}
}

// failedUpdate settles a task failed with err, as a JSON-RPC error object.
func failedUpdate(err error) store.JobUpdate {
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		je = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	body, _ := json.Marshal(je)
	return store.JobUpdate{Status: store.JobFailed, Error: body}
}

// cancelJob cancels the task rec: settled cancelled, and its call, when it
// runs here, cancelled (the server is told). A settled task stays as it
// is.
func (g *Gateway) cancelJob(ctx context.Context, rec store.Job) error {
	if rec.Status.Terminal() {
		return nil
	}
	err := g.jobs.st.UpdateJob(ctx, rec.ID, store.JobUpdate{Status: store.JobCancelled, Message: "cancelled by its client"})
	switch {
	case err == nil:
		g.opts.Measures.Task(string(store.JobCancelled))
	case errors.Is(err, store.ErrConflict):
	default:
		return err
	}
	if j := g.jobs.get(rec.ID); j != nil {
		j.p.cancel()
	}
	return nil
}

// updateJob hands the answers of a tasks/update to the task rec's call:
// here, when it runs here, else through the mailbox to the replica that
// runs it (with a store that passes messages among replicas). A task that
// waits for no answer acknowledges them, as it does answers to keys it did
// not ask.
func (g *Gateway) updateJob(ctx context.Context, rec store.Job, responses map[string]json.RawMessage) error {
	if rec.Status != store.JobInputRequired || len(responses) == 0 {
		return nil
	}
	if j := g.jobs.get(rec.ID); j != nil {
		return g.answerJob(ctx, j, responses)
	}
	if !g.relays.on() {
		return nil
	}
	body, err := json.Marshal(responses)
	if err != nil {
		return err
	}
	box := rand.Text()
	if err := g.storeDo(ctx, func(ctx context.Context) error { return g.relays.mail.Post(ctx, "ans."+box, body, answerWithin) }); err != nil {
		g.log.Warn("cannot hand a task's answers to the replica that runs it", "task", rec.ID, "error", err)
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "the task runs on another replica, which cannot be reached now (the store does not answer); send the answers again"}
	}
	g.relays.announce("answers " + rec.ID + " " + box)
	g.opts.Measures.Handoff("answer")
	return nil
}

// answerJob hands answers to j's call and records what it still waits on.
func (g *Gateway) answerJob(ctx context.Context, j *job, responses map[string]json.RawMessage) error {
	took, err := j.answer(responses)
	if took {
		g.jobUpdate(ctx, j, j.status())
	}
	return err
}

// heardAnswers takes the answers another replica left under box for the
// task id, when its call runs here.
func (g *Gateway) heardAnswers(rest string) {
	id, box, _ := strings.Cut(rest, " ")
	j := g.jobs.get(id)
	if j == nil || box == "" {
		return
	}
	ctx := context.Background()
	var body []byte
	err := g.storeDo(ctx, func(ctx context.Context) (err error) { body, err = g.relays.mail.Collect(ctx, "ans."+box); return err })
	var responses map[string]json.RawMessage
	if err == nil {
		err = json.Unmarshal(body, &responses)
	}
	if err == nil {
		err = g.answerJob(ctx, j, responses)
	}
	if err != nil {
		g.log.Warn("a task's answers from another replica not taken", "task", id, "error", err)
	}
}

// keepJobs settles the tasks of gateways that are gone and removes those
// past their ttl, now and every jobPurge, until ctx ends.
func (g *Gateway) keepJobs(ctx context.Context) {
	t := time.NewTicker(jobPurge)
	defer t.Stop()
	for {
		if n, err := g.jobs.st.RecoverJobs(ctx, time.Now()); err != nil {
			g.log.Warn("tasks of stopped gateways not settled", "error", err)
		} else if n > 0 {
			g.log.Warn("tasks settled failed: the gateway that ran them stopped before their calls finished", "tasks", n)
		}
		if _, err := g.jobs.st.PurgeJobs(ctx, time.Now()); err != nil && ctx.Err() == nil {
			g.log.Warn("expired tasks not removed", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
