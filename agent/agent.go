package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
)

// Defaults of Options; those agent: in airlock.yaml also has are its.
const (
	DefaultMaxSteps         = config.DefaultAgentMaxSteps
	DefaultMaxToolsInPrompt = config.DefaultMaxToolsInPrompt
	DefaultParallel         = 8
	DefaultRetries          = 4
	DefaultMaxRetryWait     = time.Minute
)

// DefaultSystem is the system prompt of a run whose configuration gives
// none.
const DefaultSystem = `You are an agent that works through tools. Every tool call you make goes through a governed pipeline: ` +
	`it may be refused by policy, wait for a person's approval, or fail; each result says which. ` +
	`A refused or denied call is final for those arguments: do not retry it unchanged, choose another way or say what you need. ` +
	`When a write's outcome is unknown, verify its effect before doing it again. ` +
	`Answer the user with a short summary of what you did when you are done.`

// Options configure an Agent. Host and Provider are required; the zero
// value of every other field is its default.
type Options struct {
	// Host runs every tool call (Host.Call): the agent has no other way
	// to reach a server.
	Host *airlock.Host
	// Turn begins a model step: the newest snapshot of the catalog the
	// run acts on, the safe point where servers' changes take effect.
	// Nil means Host.BeginTurn; a run in a task passes Task.BeginTurn.
	Turn func(context.Context) *airlock.Snapshot
	// Provider is the model.
	Provider Provider
	// Model is the provider's model name.
	Model string
	// System is the system prompt; "" means DefaultSystem. The
	// instructions of servers whose configuration says instructions:
	// include follow it.
	System string
	// MaxSteps bounds the model steps of a run (DefaultMaxSteps).
	MaxSteps int
	// MaxToolsInPrompt is how many tools a request may carry; past it the
	// model gets find_tools (DefaultMaxToolsInPrompt).
	MaxToolsInPrompt int
	// MaxTokens bounds each answer (the provider's max_tokens); 0 means
	// the provider's default (DefaultMaxTokens for Anthropic, which
	// requires one).
	MaxTokens int
	// Parallel bounds the tool calls of one step that run at once
	// (DefaultParallel).
	Parallel int
	// Stream asks the provider to stream its answers.
	Stream bool
	// Events, when set, is told what the run does, one event at a time.
	Events func(Event)
	// Task is the task the run acts in, for its record; Principal whom it
	// acts for (the host's, when empty).
	Task      string
	Principal airlock.Principal
	// Retries is how many times one step is asked again after a rate
	// limit, a provider error of 5xx, a stream cut short or a failed
	// connection (DefaultRetries); MaxRetryWait is the longest a
	// Retry-After is waited for (DefaultMaxRetryWait): a longer one fails
	// the step.
	Retries      int
	MaxRetryWait time.Duration
	// Lock, when set, is called before a run starts or resumes, with its
	// id, and unlock when Start or Resume returns: a run is driven by one
	// process at a time. An error refuses the run.
	Lock func(runID string) (unlock func(), err error)
	// Log receives the agent's log; nil discards it.
	Log *slog.Logger
}

// An Agent runs agent loops: a model, and the governed catalog of one
// host. Start and Resume may be called from several goroutines, each for
// its own run.
type Agent struct {
	o    Options
	runs store.Runs
	cat  atomic.Pointer[catalog] // of the newest snapshot a step used
}

// New returns an agent. The host's store must keep runs (store.Runs):
// both the SQLite and the PostgreSQL store do.
func New(o Options) (*Agent, error) {
	if o.Host == nil || o.Provider == nil {
		return nil, errors.New("agent: Options.Host and Options.Provider are required")
	}
	runs, ok := o.Host.Store().(store.Runs)
	if !ok {
		return nil, fmt.Errorf("agent: the host's store (%T) keeps no runs", o.Host.Store())
	}
	if o.Turn == nil {
		o.Turn = o.Host.BeginTurn
	}
	if o.System == "" {
		o.System = DefaultSystem
	}
	o.MaxSteps = orDefault(o.MaxSteps, DefaultMaxSteps)
	o.MaxToolsInPrompt = orDefault(o.MaxToolsInPrompt, DefaultMaxToolsInPrompt)
	o.Parallel = orDefault(o.Parallel, DefaultParallel)
	o.Retries = orDefault(o.Retries, DefaultRetries)
	o.MaxRetryWait = orDefault(o.MaxRetryWait, DefaultMaxRetryWait)
	if o.Principal == (airlock.Principal{}) {
		o.Principal = o.Host.Principal()
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Agent{o: o, runs: runs}, nil
}

// orDefault returns v, or def when v is zero or negative: the options
// that count something take their default for either.
func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// An Outcome is where a run stands when Start or Resume returns.
type Outcome struct {
	RunID     string
	Status    store.RunStatus
	Steps     int
	ToolCalls int
	Usage     Usage
	// Text is the model's final answer (RunDone).
	Text string
	// Approvals are the approval requests a waiting run waits for.
	Approvals []string
	// Err says why a failed or cancelled run stopped: a *ProviderError,
	// ErrMaxSteps, a store that could not keep the checkpoint, or the
	// context's error.
	Err error
}

// ErrMaxSteps ends a run that took Options.MaxSteps steps without a final
// answer.
var ErrMaxSteps = errors.New("the run took its maximum number of steps without a final answer")

// checkpointVersion is the version of the checkpoint this agent writes
// and reads.
const checkpointVersion = 1

// A checkpoint is the agent's state, kept in the store after every step
// and every call: enough to go on after the process dies.
type checkpoint struct {
	Version  int       `json:"version"`
	System   string    `json:"system"`
	Messages []Message `json:"messages"`
	// Pending are the calls of the last assistant message, while they
	// run or wait; they become a tool message when all have results.
	Pending []*pending `json:"pending,omitempty"`
	// Found are the tools find_tools found or the model used, in order:
	// they enter the steps of a large catalog.
	Found []string `json:"found,omitempty"`
	// MaxSteps is the bound the run was started with (a resume may raise
	// it).
	MaxSteps int `json:"max_steps"`
}

// pending is one call of a step.
type pending struct {
	Call ToolCall `json:"call"`
	// Ref is the call's id in the pipeline (Call.ID, and the journal's
	// call_id): the run's own, never the provider's.
	Ref    string      `json:"ref"`
	Result *ToolResult `json:"result,omitempty"`
	// Approval is the approval request the call waits for.
	Approval string `json:"approval,omitempty"`
	// loaded: it came from a checkpoint, so it may have been sent by the
	// process that wrote it.
	loaded bool
}

// Start begins a run with the user's prompt and drives it until it is
// done, waits for a person, fails or ctx is cancelled.
func (a *Agent) Start(ctx context.Context, prompt string) *Outcome {
	r := a.newRun()
	r.rec = store.RunRecord{ID: store.NewID("run_"), Status: store.RunRunning, Tenant: a.o.Principal.Tenant, User: a.o.Principal.User,
		Provider: a.o.Provider.Name(), Model: a.o.Model, Task: a.o.Task, Title: printable(a.o.Host.Redact(prompt), 100)}
	r.cp = checkpoint{Version: checkpointVersion, System: a.o.System, MaxSteps: a.o.MaxSteps,
		Messages: []Message{{Role: RoleUser, Text: prompt}}}
	if a.o.Lock != nil {
		unlock, err := a.o.Lock(r.rec.ID)
		if err != nil {
			return r.outcome(err)
		}
		defer unlock()
	}
	if err := r.save(); err != nil {
		return r.outcome(err)
	}
	r.emit(Event{Event: EventRun, RunID: r.rec.ID})
	return r.loop(ctx)
}

// Resume goes on with the run id from its last checkpoint: calls that
// have results keep them; a call the journal shows as sent is never sent
// again (its result, if it was lost, and an unknown outcome are given to
// the model as such); calls that waited for approval are made again, and
// run on the grant a person gave. A run that is done cannot be resumed.
func (a *Agent) Resume(ctx context.Context, id string) (*Outcome, error) {
	rec, err := a.runs.RunRecord(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("no run %s: see airlock runs", id)
	}
	if err != nil {
		return nil, err
	}
	if rec.Tenant != a.o.Principal.Tenant || rec.User != a.o.Principal.User {
		return nil, fmt.Errorf("run %s was made for %s/%s, not %s/%s", id, rec.Tenant, rec.User, a.o.Principal.Tenant, a.o.Principal.User)
	}
	if rec.Status == store.RunDone {
		return nil, fmt.Errorf("run %s is done: start a new run", id)
	}
	if a.o.Lock != nil {
		unlock, err := a.o.Lock(id)
		if err != nil {
			return nil, err
		}
		defer unlock()
		// Another process may have gone on with it while this one waited.
		if rec, err = a.runs.RunRecord(ctx, id); err != nil {
			return nil, err
		}
		if rec.Status == store.RunDone {
			return nil, fmt.Errorf("run %s is done: start a new run", id)
		}
	}
	r := a.newRun()
	r.rec = rec
	if err := json.Unmarshal(rec.Checkpoint, &r.cp); err != nil || r.cp.Version != checkpointVersion {
		return nil, fmt.Errorf("run %s: its checkpoint cannot be read by this airlock", id)
	}
	for _, p := range r.cp.Pending {
		p.loaded = true
	}
	if a.o.MaxSteps > r.cp.MaxSteps {
		r.cp.MaxSteps = a.o.MaxSteps
	}
	r.rec.Status, r.rec.Error = store.RunRunning, ""
	if err := r.save(); err != nil {
		return r.outcome(err), nil
	}
	r.emit(Event{Event: EventRun, RunID: r.rec.ID})
	return r.loop(ctx), nil
}

// A run is one run in this process.
type run struct {
	a *Agent
	o *Options

	mu  sync.Mutex // guards rec, cp and saves, while calls run
	rec store.RunRecord
	cp  checkpoint
	// behind: the last save failed, so the store's checkpoint is older
	// than cp.
	behind bool

	emitMu sync.Mutex
	told   map[string]bool // notices already given
	// noticed is the catalog whose notices the run gave.
	noticed *catalog
}

func (a *Agent) newRun() *run {
	return &run{a: a, o: &a.o, told: map[string]bool{}}
}

// catalog is the catalog of snap: the one the agent's last step made, if
// it is of the same snapshot, or a new one.
func (a *Agent) catalog(snap *airlock.Snapshot) *catalog {
	if c := a.cat.Load(); c != nil && c.id == snap.ID() {
		return c
	}
	c := newCatalog(a.o.Provider, snap.ID(), snap.Tools(), a.o.MaxToolsInPrompt)
	a.cat.Store(c)
	return c
}

// emit tells Options.Events of e, one event at a time.
func (r *run) emit(e Event) {
	if r.o.Events == nil {
		return
	}
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	r.o.Events(e)
}

// notice emits a notice once per run.
func (r *run) notice(text string) {
	r.emitMu.Lock()
	seen := r.told[text]
	r.told[text] = true
	r.emitMu.Unlock()
	if !seen {
		r.emit(Event{Event: EventNotice, Text: text})
		r.o.Log.Info("agent notice", "run", r.rec.ID, "notice", text)
	}
}

// save writes the record and its checkpoint, whatever becomes of the
// caller's context: a checkpoint is what a resume starts from.
func (r *run) save() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.saveLocked()
}

func (r *run) saveLocked() error {
	r.behind = true
	cp, err := json.Marshal(r.atRest())
	if err != nil {
		return fmt.Errorf("cannot encode the run's checkpoint: %w", err)
	}
	r.rec.Checkpoint = cp
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A running run's checkpoints need not wait for the disk: a write
	// the run sends is preceded by its durable intent in the same store,
	// which takes every earlier checkpoint to the disk with it, and a
	// checkpoint lost with the machine before then is one that only
	// reads followed (asked again on resume, harmlessly). A run that
	// stops is saved durably.
	save := r.a.runs.SaveRunRelaxed
	if r.rec.Status != store.RunRunning {
		save = r.a.runs.SaveRun
	}
	if err := save(ctx, r.rec); err != nil {
		return fmt.Errorf("cannot save the run's checkpoint: %w", err)
	}
	r.behind = false
	return nil
}

// atRest is the checkpoint as it is saved: every text and every call's
// arguments with the secrets the host knows redacted, as the audit trail
// has them, but for the arguments of a call that has no result yet,
// which a resumed run sends as the model wrote them. A resumed run shows
// the model its earlier steps as saved.
func (r *run) atRest() checkpoint {
	h := r.o.Host
	cp := r.cp
	cp.Messages = make([]Message, len(r.cp.Messages))
	for i, m := range r.cp.Messages {
		m.Text = h.Redact(m.Text)
		m.Calls = slices.Clone(m.Calls)
		for j := range m.Calls {
			m.Calls[j].Arguments = h.RedactJSON(m.Calls[j].Arguments)
		}
		m.Results = slices.Clone(m.Results)
		for j := range m.Results {
			m.Results[j].Text = h.Redact(m.Results[j].Text)
		}
		cp.Messages[i] = m
	}
	cp.Pending = make([]*pending, len(r.cp.Pending))
	for i, p := range r.cp.Pending {
		q := *p
		if q.Result != nil {
			q.Call.Arguments = h.RedactJSON(q.Call.Arguments)
			res := *q.Result
			res.Text = h.Redact(res.Text)
			q.Result = &res
		}
		cp.Pending[i] = &q
	}
	return cp
}

// loop drives the run: it settles the calls of the last step, then asks
// the model for the next, until the model answers without calls.
func (r *run) loop(ctx context.Context) *Outcome {
	var (
		snap *airlock.Snapshot
		off  offered
	)
	for {
		if len(r.cp.Pending) > 0 {
			if snap == nil {
				// A resumed run's calls run in the newest snapshot.
				snap = r.o.Turn(ctx)
				off = r.a.catalog(snap).offer(r.cp.Found)
			}
			r.settle(ctx, snap, off)
			if ctx.Err() != nil {
				return r.stop(store.RunCancelled, ctx.Err())
			}
			if waiting := r.waiting(); len(waiting) > 0 {
				return r.wait(waiting)
			}
			// The step's last result closed it, in the save that kept
			// the result (keep), unless every call had its result when
			// the run resumed. A save that failed is made again now,
			// before the model is asked.
			closed := len(r.cp.Pending) == 0
			if !closed {
				r.closeStep()
			}
			if !closed || r.behind {
				if err := r.save(); err != nil {
					return r.stop(store.RunFailed, err)
				}
			}
		}
		if r.rec.Steps >= r.cp.MaxSteps {
			return r.stop(store.RunFailed, fmt.Errorf("%w (%d): resume it to give it more (airlock run --resume %s --max-steps N)", ErrMaxSteps, r.cp.MaxSteps, r.rec.ID))
		}

		snap = r.o.Turn(ctx)
		off = r.a.catalog(snap).offer(r.cp.Found)
		if off.cat != r.noticed {
			r.noticed = off.cat
			for _, l := range off.leftOut {
				r.notice(fmt.Sprintf("%s is left out of %s's requests: %s", l.Name, r.o.Provider.Name(), l.Reason))
			}
			if off.finder != "" {
				r.notice(fmt.Sprintf("the catalog has %d tools, more than %d: the model finds them with %s", len(off.byName), r.o.MaxToolsInPrompt, off.finder))
			}
		}
		resp, err := r.ask(ctx, snap, off)
		if err != nil {
			if ctx.Err() != nil {
				return r.stop(store.RunCancelled, ctx.Err())
			}
			return r.stop(store.RunFailed, err)
		}

		r.mu.Lock()
		r.rec.Steps++
		r.rec.Snapshot = snap.ID()
		r.rec.InputTokens += resp.Usage.Input
		r.rec.OutputTokens += resp.Usage.Output
		r.rec.ToolCalls += len(resp.Calls)
		r.cp.Messages = append(r.cp.Messages, Message{Role: RoleAssistant, Text: resp.Text, Calls: resp.Calls})
		for _, c := range resp.Calls {
			r.cp.Pending = append(r.cp.Pending, &pending{Call: c, Ref: store.NewID("tc_")})
		}
		done := len(resp.Calls) == 0
		if done {
			r.rec.Status = store.RunDone
		}
		// The calls are kept before any is made: a process killed from
		// here on resumes knowing them.
		err = r.saveLocked()
		r.mu.Unlock()
		if err != nil {
			return r.stop(store.RunFailed, err)
		}
		if done {
			o := r.outcome(nil)
			o.Text = resp.Text
			r.emit(Event{Event: EventDone, RunID: o.RunID, Text: resp.Text, Steps: &o.Steps, ToolCalls: &o.ToolCalls,
				InputTokens: &o.Usage.Input, OutputTokens: &o.Usage.Output})
			return o
		}
	}
}

// system is the step's system prompt: the run's, then the instructions
// of the servers whose configuration includes them.
func (r *run) system(snap *airlock.Snapshot) string {
	s := r.cp.System
	for _, in := range r.o.Host.Instructions(snap) {
		s += fmt.Sprintf("\n\nInstructions of the tool server %s (its own words, included by the configuration):\n%s", in.Server, in.Text)
	}
	return s
}

// ask asks the model for the next step, again after a rate limit, a
// provider error of 5xx, a stream cut short or a failed connection,
// within Options.Retries and MaxRetryWait.
func (r *run) ask(ctx context.Context, snap *airlock.Snapshot, off offered) (*Response, error) {
	req := &Request{Model: r.o.Model, System: r.system(snap), Messages: r.cp.Messages, Tools: off.specs,
		MaxTokens: r.o.MaxTokens, Stream: r.o.Stream}
	var text func(string)
	if r.o.Stream {
		text = func(s string) { r.emit(Event{Event: EventText, Text: s}) }
	}
	for attempt := 0; ; attempt++ {
		resp, err := r.o.Provider.Step(ctx, req, text)
		if err == nil {
			if !r.o.Stream && resp.Text != "" {
				r.emit(Event{Event: EventText, Text: resp.Text})
			}
			return resp, nil
		}
		var pe *ProviderError
		if !errors.As(err, &pe) || !pe.retryable() || attempt >= r.o.Retries {
			return nil, err
		}
		wait := min(500*time.Millisecond<<attempt, 8*time.Second)
		if pe.RetryAfter > 0 {
			wait = pe.RetryAfter
		}
		if wait > r.o.MaxRetryWait {
			return nil, fmt.Errorf("%w (it asked to wait %s, more than %s)", err, wait.Round(time.Second), r.o.MaxRetryWait)
		}
		r.o.Log.Warn("provider step failed; asking again", "run", r.rec.ID, "error", err, "wait", wait)
		r.emit(Event{Event: EventRetry, Text: pe.Error(), HTTPStatus: pe.Status, WaitMS: wait.Milliseconds(), Step: r.rec.Steps + 1})
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// settle runs the step's calls that have no result, at most Parallel at
// once; each result is kept as it comes.
func (r *run) settle(ctx context.Context, snap *airlock.Snapshot, off offered) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, r.o.Parallel)
	for _, p := range r.cp.Pending {
		if p.Result != nil {
			continue
		}
		// The calls run at once, but each starts once the one before it
		// was counted in the turn: limits.max_calls_per_turn refuses the
		// last of them, not whichever lost a race.
		admitted := make(chan struct{})
		admit := sync.OnceFunc(func() { close(admitted) })
		wg.Go(func() {
			defer admit()
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-slots }()
			r.call(ctx, snap, off, p, admit)
		})
		<-admitted
	}
	wg.Wait()
}

// call runs one call of the step and keeps its result.
func (r *run) call(ctx context.Context, snap *airlock.Snapshot, off offered, p *pending, admitted func()) {
	if p.loaded {
		if res, ok := r.recovered(ctx, p); ok {
			r.keep(p, &res, "", false)
			r.emit(Event{Event: EventToolCall, Name: p.Call.Name, CallID: p.Call.ID, Status: res.Status, Args: argSummary(r.o.Host.RedactJSON(p.Call.Arguments))})
			return
		}
	}
	began := time.Now()
	server := ""
	if t, ok := off.byName[p.Call.Name]; ok {
		server = t.Server
	}
	r.emit(Event{Event: EventToolCall, Name: p.Call.Name, CallID: p.Call.ID, Server: server, Status: "started", Args: argSummary(r.o.Host.RedactJSON(p.Call.Arguments))})
	end := func(status string) {
		r.emit(Event{Event: EventToolCall, Name: p.Call.Name, CallID: p.Call.ID, Server: server, Status: status,
			DurationMS: time.Since(began).Milliseconds()})
	}

	if off.finder != "" && p.Call.Name == off.finder {
		res := r.find(off, p.Call)
		r.keep(p, &res, "", false)
		end(res.Status)
		return
	}

	res := r.o.Host.Call(ctx, snap, airlock.Call{ID: p.Ref, Name: p.Call.Name, Arguments: json.RawMessage(p.Call.Arguments), Admitted: admitted})
	_, used := off.byName[p.Call.Name]
	switch res.Status {
	case airlock.ApprovalRequired:
		r.keep(p, nil, res.ApprovalID, used)
		// The host's message tells a caller to call again; a run is
		// resumed instead.
		summary := fmt.Sprintf("%s needs a person's approval", p.Call.Name)
		if why := res.Decision.Reason; why != "" {
			summary += " (" + why + ")"
		}
		summary += fmt.Sprintf(": airlock approvals approve %s, then airlock run --resume %s", res.ApprovalID, r.rec.ID)
		r.emit(Event{Event: EventApprovalRequired, Name: p.Call.Name, CallID: p.Call.ID, ApprovalID: res.ApprovalID, Summary: summary})
		end(string(res.Status))
		return
	case airlock.Cancelled:
		if ctx.Err() != nil {
			// Interrupted before it was sent: a resume makes it then.
			end(string(res.Status))
			return
		}
	case airlock.ContractError, airlock.ConnectionError, airlock.AuthRequired:
		if res.Err != nil {
			r.emit(Event{Event: EventError, Name: p.Call.Name, CallID: p.Call.ID, Status: string(res.Status), Text: res.Err.Msg})
		}
	case airlock.OutcomeUnknown:
		msg := "the outcome is unknown"
		if res.Err != nil {
			msg = res.Err.Msg
		}
		r.emit(Event{Event: EventError, Name: p.Call.Name, CallID: p.Call.ID, Status: string(res.Status),
			Text: msg + " (airlock recovery show " + res.RecoveryID + ")"})
	}
	out := modelResult(p.Call, res)
	r.keep(p, &out, "", used)
	end(string(res.Status))
}

// recovered is, for a call a dead process may have made, what the
// journal says of it: ok is false when it was never sent (no record, or
// one the pipeline rejected before sending), and the call is to be made.
func (r *run) recovered(ctx context.Context, p *pending) (ToolResult, bool) {
	recs, err := r.o.Host.Store().Journal().Records(ctx, store.RecordFilter{CallID: p.Ref})
	if err != nil {
		// Without the journal nobody can say it was not sent.
		r.o.Log.Error("cannot read the journal for a resumed call", "run", r.rec.ID, "call", p.Ref, "error", err)
		return ToolResult{CallID: p.Call.ID, Name: p.Call.Name, Status: string(airlock.OutcomeUnknown), Text: unknownText, IsError: true}, true
	}
	for _, rec := range recs {
		if rec.Status != store.OutcomeRejected {
			return recoveredResult(p.Call, rec), true
		}
	}
	return ToolResult{}, false
}

// keep records a call's result, or the approval it waits for, and saves
// the checkpoint; the step's last result closes the step in the same save.
// A tool the model called by a name the catalog has is one it uses: in a
// large catalog it stays in the steps after.
func (r *run) keep(p *pending, res *ToolResult, approval string, used bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p.Result, p.Approval, p.loaded = res, approval, false
	if used && !slices.Contains(r.cp.Found, p.Call.Name) {
		r.cp.Found = append(r.cp.Found, p.Call.Name)
	}
	if !slices.ContainsFunc(r.cp.Pending, func(p *pending) bool { return p.Result == nil }) {
		r.closeStepLocked()
	}
	if err := r.saveLocked(); err != nil {
		r.o.Log.Error("cannot keep a call's result", "run", r.rec.ID, "call", p.Ref, "error", err)
	}
}

// find answers a find_tools call from the step's catalog.
func (r *run) find(off offered, c ToolCall) ToolResult {
	query, limit, err := findArgs(c.Arguments)
	if err != nil {
		return ToolResult{CallID: c.ID, Name: c.Name, Status: string(airlock.InvalidArguments), Text: err.Error(), IsError: true}
	}
	found := off.cat.toolIndex().Find(query, limit)
	r.mu.Lock()
	for _, t := range found {
		if !slices.Contains(r.cp.Found, t.Name) {
			r.cp.Found = append(r.cp.Found, t.Name)
		}
	}
	r.mu.Unlock()
	return ToolResult{CallID: c.ID, Name: c.Name, Status: string(airlock.OK), Text: describeFound(query, found)}
}

// waiting lists the approvals the step's calls wait for.
func (r *run) waiting() []string {
	var ids []string
	for _, p := range r.cp.Pending {
		if p.Result == nil && p.Approval != "" {
			ids = append(ids, p.Approval)
		}
	}
	return ids
}

// closeStep turns the step's results into a tool message, in the order
// the model gave the calls.
func (r *run) closeStep() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closeStepLocked()
}

func (r *run) closeStepLocked() {
	m := Message{Role: RoleTool}
	for _, p := range r.cp.Pending {
		m.Results = append(m.Results, *p.Result)
	}
	r.cp.Messages = append(r.cp.Messages, m)
	r.cp.Pending = nil
}

// wait pauses the run for a person's approvals.
func (r *run) wait(ids []string) *Outcome {
	o := r.stop(store.RunWaiting, nil)
	o.Approvals = ids
	r.emit(Event{Event: EventWaiting, RunID: o.RunID, ApprovalIDs: ids, Steps: &o.Steps, ToolCalls: &o.ToolCalls,
		InputTokens: &o.Usage.Input, OutputTokens: &o.Usage.Output})
	return o
}

// stop ends this process's part of the run with status.
func (r *run) stop(status store.RunStatus, err error) *Outcome {
	r.mu.Lock()
	r.rec.Status = status
	if err != nil && status == store.RunFailed {
		r.rec.Error = printable(err.Error(), 2000)
	}
	serr := r.saveLocked()
	r.mu.Unlock()
	if serr != nil && err == nil {
		err = serr
	}
	o := r.outcome(err)
	switch status {
	case store.RunFailed:
		text := "failed"
		if err != nil {
			text = err.Error()
		}
		r.emit(Event{Event: EventFailed, RunID: o.RunID, Text: text, Steps: &o.Steps, ToolCalls: &o.ToolCalls,
			InputTokens: &o.Usage.Input, OutputTokens: &o.Usage.Output})
	case store.RunCancelled:
		r.emit(Event{Event: EventCancelled, RunID: o.RunID, Steps: &o.Steps, ToolCalls: &o.ToolCalls,
			InputTokens: &o.Usage.Input, OutputTokens: &o.Usage.Output})
	}
	return o
}

// outcome is the run as it stands.
func (r *run) outcome(err error) *Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &Outcome{RunID: r.rec.ID, Status: r.rec.Status, Steps: r.rec.Steps, ToolCalls: r.rec.ToolCalls,
		Usage: Usage{Input: r.rec.InputTokens, Output: r.rec.OutputTokens}, Err: err}
}
