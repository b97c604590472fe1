package airlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/policy"
	"github.com/airlockhq/airlock/store"
)

// A Started call is a call that Host.Start runs in the background: the
// caller goes on, and waits for the result later (Wait), or cancels it.
// It is a job of the store as a task of `airlock serve` is, so that
// `airlock jobs` lists it and a person may cancel it from there, and a
// call whose process died reads failed (for a write, with the unknown
// outcome) rather than running forever.
type Started struct {
	// ID names the job: airlock jobs show ID.
	ID string

	cancel context.CancelFunc
	done   chan struct{}
	res    *Result // set before done is closed
}

// Done is closed once the call has returned.
func (s *Started) Done() <-chan struct{} { return s.done }

// Wait returns the call's result once it has returned, or ctx's error if
// ctx ends first (the call runs on).
func (s *Started) Wait(ctx context.Context) (*Result, error) {
	select {
	case <-s.done:
		return s.res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Cancel cancels the call: its result is then Cancelled (or, for a
// write already sent, OutcomeUnknown), as for a Call whose context ends.
func (s *Started) Cancel() { s.cancel() }

// Start makes the call c in snap as Call does, in the background, and
// returns at once: the result is the Started call's. ctx carries the
// call's trace context and values, not its end: the call runs until it
// returns or is cancelled (Started.Cancel, or airlock jobs cancel, which
// is heard within a second). The job is kept for the ttl of its server's
// tasks: mapping (default config.DefaultTaskTTL). An unknown tool or a
// store that keeps no jobs is an error, and nothing is started.
func (h *Host) Start(ctx context.Context, snap *Snapshot, c Call) (*Started, error) {
	js, ok := h.gov.store.(store.Jobs)
	if !ok {
		return nil, ErrNoJobs
	}
	tool, ok := snap.snap.Lookup(c.Name)
	if !ok {
		return nil, fmt.Errorf("unknown tool %q: it is not in the catalog", c.Name)
	}
	ttl, poll := config.DefaultTaskTTL, config.DefaultTaskPollInterval
	for _, s := range h.cfg.Servers {
		if s.ID == tool.Server && s.Tasks != nil {
			ttl, poll = s.Tasks.TTL, s.Tasks.PollInterval
		}
	}
	write := tool.Effect != policy.Read
	s := &Started{ID: store.NewID("task_"), done: make(chan struct{})}
	rec := store.Job{ID: s.ID, Tenant: snap.who.Tenant, User: snap.who.User, Server: tool.Server, Tool: c.Name, Write: write,
		Status: store.JobWorking, Lost: LostJobError(write, tool.Server, c.Name), TTL: ttl, PollInterval: poll}
	if err := js.CreateJob(ctx, rec); err != nil {
		return nil, fmt.Errorf("start %s: the store refused its job: %w", c.Name, err)
	}
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	go h.watchJob(life, js, s.ID, poll, cancel)
	go func() {
		defer close(s.done)
		s.res = h.Call(life, snap, c)
		cancel()
		u := jobOutcome(s.res)
		u.RecordID = s.res.RecoveryID
		err := js.UpdateJob(context.WithoutCancel(ctx), s.ID, u)
		if err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrNotFound) {
			h.log.Error("job not settled", "job", s.ID, "error", err)
		}
	}()
	return s, nil
}

// watchJob cancels a started call when its job is cancelled (or removed)
// through the store, checking every interval until ctx ends.
func (h *Host) watchJob(ctx context.Context, js store.Jobs, id string, interval time.Duration, cancel func()) {
	every(ctx, min(max(interval, 100*time.Millisecond), time.Second), func() bool {
		j, err := js.Job(ctx, id)
		if err == nil && j.Status.Terminal() || errors.Is(err, store.ErrNotFound) {
			cancel()
			return false
		}
		return true
	})
}

// jobOutcome is how a job settles with the call's result r: completed
// with the result as an MCP client gets it (a tool error included),
// cancelled, or failed with a JSON-RPC error naming the class.
func jobOutcome(r *Result) store.JobUpdate {
	switch r.Status {
	case OK, ToolError, InvalidArguments, Denied, Busy, ApprovalRequired, AuthRequired:
		res := &mcp.CallToolResult{IsError: r.Status != OK, Content: r.ContentBlocks, Meta: mcp.Meta{"airlock/status": string(r.Status)}}
		if len(res.Content) == 0 {
			text := r.Content
			if text == "" && r.Err != nil {
				text = r.Err.Msg
			}
			res.Content = []mcp.Content{&mcp.TextContent{Text: text}}
		}
		if r.Structured != nil {
			res.StructuredContent = r.Structured
		}
		body, err := json.Marshal(res)
		if err == nil {
			return store.JobUpdate{Status: store.JobCompleted, Result: body}
		}
	case Cancelled:
		return store.JobUpdate{Status: store.JobCancelled, Message: "the call was cancelled"}
	}
	msg := string(r.Status)
	if r.Err != nil {
		msg += ": " + r.Err.Msg
	}
	data, _ := json.Marshal(map[string]string{"class": string(r.Status), "recovery_id": r.RecoveryID, "trace_id": r.TraceID})
	body, _ := json.Marshal(&jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg, Data: data})
	return store.JobUpdate{Status: store.JobFailed, Error: body}
}

// LostJobError is the JSON-RPC error object a job of a call of tool on
// server settles with when the process running it dies before the call
// returned (store.Job.Lost): for a write, the unknown outcome, never to be
// repeated blindly; else a connection error, to be made again.
func LostJobError(write bool, server, tool string) []byte {
	class, what := ConnectionError, "make the call again"
	if write {
		class, what = OutcomeUnknown, "it may have taken effect: do not repeat it blindly (airlock recovery list shows the call)"
	}
	data, _ := json.Marshal(map[string]string{"class": string(class), "server": server, "tool": tool})
	e, _ := json.Marshal(&jsonrpc.Error{Code: jsonrpc.CodeInternalError, Data: data,
		Message: fmt.Sprintf("%s: the process that ran this call stopped before it returned; %s", class, what)})
	return e
}
