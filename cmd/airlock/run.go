package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/agent"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
)

const runUsage = "airlock run [--provider openai|anthropic] [--model NAME] [--base-url URL] [--max-steps N] [--yes-reads] [--answer-wait DURATION] [--json] [--task ID] " +
	"[--config FILE] [--state DIR] PROMPT|-|@FILE | run --resume RUN_ID [...]"

// runFlags are the flags of airlock run.
type runFlags struct {
	provider, model, baseURL string
	maxSteps                 int
	yesReads                 bool
	resume                   string
}

// run is airlock run: the agent loop, a model driving the governed
// catalog until it answers.
func (e *env) run(o *options, pos []string) error {
	tuneGC(os.Getenv)
	f := &o.run
	var prompt string
	switch {
	case f.resume != "" && len(pos) > 0:
		return usageError("run --resume %s takes no prompt: the run goes on with its own conversation", f.resume)
	case f.resume == "" && len(pos) == 0:
		return usageError("run takes a prompt: airlock run \"what to do\" (or - to read it from stdin, @FILE from a file)")
	case f.resume == "":
		var err error
		if prompt, err = e.readPrompt(pos); err != nil {
			return err
		}
	}
	if f.maxSteps < 0 || f.maxSteps > 10000 {
		return usageError("--max-steps must be from 1 to 10000, not %d", f.maxSteps)
	}
	cfg, err := e.loadConfig(&o.common)
	if err != nil {
		return err
	}
	var rec *store.RunRecord
	if f.resume != "" {
		if rec, err = e.runRecord(&o.common, cfg, f.resume); err != nil {
			return err
		}
		if o.task == "" {
			o.task = rec.Task
		} else if o.task != rec.Task {
			return usageError("run %s acts in task %q, not %q: leave out --task", rec.ID, rec.Task, o.task)
		}
	}
	pc, err := chooseProvider(cfg, f, rec)
	if err != nil {
		return err
	}

	// A person is asked inline only on a terminal, and not with --json,
	// which scripts read; elsewhere a call that needs approval pauses the
	// run (exit 5) until airlock approvals approve and --resume.
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	e.ctx = ctx
	fromStdin := len(pos) == 1 && pos[0] == "-"
	if !o.json && !fromStdin && isTerminalReader(e.stdin) && isTerminal(e.stderr) {
		ta := &terminalApprover{out: e.stderr, ed: newLineEditor(e.stdin.(*os.File), e.stderr)}
		e.approver = cancelOnInterrupt{ta, cancel}
		e.elicit = ta.elicit
	}
	if f.yesReads {
		e.approver = yesReads{e.approver}
	}
	e.hostOptions = func(_ *config.Config, opts *airlock.Options) error {
		if pc.key != "" {
			opts.Secrets = append(opts.Secrets, pc.key) // redacted from the log, the audit trail and results
		}
		return nil
	}
	s, err := e.sessionOf(&o.common, cfg)
	if err != nil {
		return err
	}
	defer e.closeSession(s)

	provider, err := agent.NewProvider(agent.ProviderOptions{Name: pc.name, BaseURL: pc.baseURL, APIKey: pc.key})
	if err != nil {
		return usageError("%v", err)
	}
	view := newRunView(e.stdout, e.stderr, o.json)
	ag, err := agent.New(agent.Options{Host: s.h, Turn: s.BeginTurn, Provider: provider, Model: pc.model,
		System: cfg.Agent.System, MaxSteps: firstPositive(f.maxSteps, cfg.Agent.MaxSteps), MaxToolsInPrompt: cfg.Agent.MaxToolsInPrompt,
		Stream: true, Events: view.event, Task: o.task, Principal: airlock.ConfigPrincipal(cfg),
		Lock: runLock(stateDir(&o.common, cfg)), Log: s.h.Logger()})
	if err != nil {
		return &exitError{code: exitServer, msg: err.Error()}
	}
	var out *agent.Outcome
	if f.resume != "" {
		if out, err = ag.Resume(ctx, f.resume); err != nil {
			return usageError("%v", err)
		}
	} else {
		out = ag.Start(ctx, prompt)
	}
	view.finish()
	return runExit(out, e.ctx.Err() != nil)
}

// readPrompt is the prompt of airlock run: its words, - for stdin, or
// @FILE.
func (e *env) readPrompt(pos []string) (string, error) {
	var text string
	switch {
	case len(pos) == 1 && pos[0] == "-":
		b, err := io.ReadAll(io.LimitReader(e.stdin, 1<<20+1))
		if err != nil {
			return "", usageError("reading the prompt from stdin: %v", err)
		}
		if len(b) > 1<<20 {
			return "", usageError("the prompt on stdin is larger than 1 MiB")
		}
		text = string(b)
	case len(pos) == 1 && strings.HasPrefix(pos[0], "@"):
		b, err := os.ReadFile(pos[0][1:])
		if err != nil {
			return "", usageError("prompt %s: cannot read the file: %v", pos[0], errText(err))
		}
		if len(b) > 1<<20 {
			return "", usageError("prompt %s: the file is larger than 1 MiB", pos[0])
		}
		text = string(b)
	default:
		text = strings.Join(pos, " ")
	}
	if strings.TrimSpace(text) == "" {
		return "", usageError("the prompt is empty: say what the agent should do")
	}
	if strings.IndexByte(text, 0) >= 0 || !utf8.ValidString(text) {
		return "", usageError("the prompt must be UTF-8 text without NUL characters")
	}
	return text, nil
}

// runRecord reads the record of a run to resume, from the store the
// configuration names.
func (e *env) runRecord(c *common, cfg *config.Config, id string) (*store.RunRecord, error) {
	st, err := e.openStoreOf(c, cfg)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	runs, ok := st.(store.Runs)
	if !ok {
		return nil, usageError("this store keeps no runs")
	}
	rec, err := runs.RunRecord(e.ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, usageError("no run %s: see airlock runs", id)
	}
	if err != nil {
		return nil, storeError(err)
	}
	return &rec, nil
}

// A providerChoice is the provider a run asks, and how.
type providerChoice struct {
	name, model, baseURL string
	key                  string // never printed
	keyEnv               string
}

// chooseProvider resolves the provider of a run: flags, then agent: in
// the configuration, then (resuming) what the run used; with none, the
// one whose API key is set. The key comes from the environment only.
func chooseProvider(cfg *config.Config, f *runFlags, rec *store.RunRecord) (providerChoice, error) {
	a := cfg.Agent
	pc := providerChoice{name: firstNonEmpty(f.provider, a.Provider), model: firstNonEmpty(f.model, a.Model), baseURL: firstNonEmpty(f.baseURL, a.BaseURL)}
	if rec != nil {
		if f.provider == "" {
			pc.name = rec.Provider
		}
		if f.model == "" {
			pc.model = rec.Model
		}
	}
	if pc.name == "" {
		openaiKey, anthropicKey := os.Getenv(a.KeyEnv(config.ProviderOpenAI)) != "", os.Getenv(a.KeyEnv(config.ProviderAnthropic)) != ""
		switch {
		case anthropicKey && !openaiKey && a.APIKeyEnv == "":
			pc.name = config.ProviderAnthropic
		case openaiKey || pc.baseURL != "":
			pc.name = config.ProviderOpenAI
		default:
			return pc, usageError("choose the model's provider: --provider openai|anthropic, or agent.provider in airlock.yaml (and set its API key in %s or %s)",
				config.DefaultOpenAIKeyEnv, config.DefaultAnthropicKeyEnv)
		}
	}
	if pc.name != config.ProviderOpenAI && pc.name != config.ProviderAnthropic {
		return pc, usageError("--provider must be openai or anthropic, not %q", pc.name)
	}
	if pc.model == "" {
		return pc, usageError("name the model: --model NAME, or agent.model in airlock.yaml (such as gpt-5.2, claude-sonnet-4-5, or a local model's name)")
	}
	if msg := config.CheckModel(pc.model); msg != "" {
		return pc, usageError("--model %s", msg)
	}
	if pc.baseURL != "" {
		if msg := config.CheckBaseURL(pc.baseURL); msg != "" {
			return pc, usageError("--base-url %s", msg)
		}
	}
	pc.keyEnv = a.KeyEnv(pc.name)
	pc.key = os.Getenv(pc.keyEnv)
	if pc.key == "" && !loopbackURL(pc.baseURL) {
		return pc, usageError("%s is not set: put the %s API key in it (agent.api_key_env names another variable); a server on loopback (--base-url http://127.0.0.1:PORT/…) needs none",
			pc.keyEnv, pc.name)
	}
	return pc, nil
}

// loopbackURL reports whether raw is a URL of a loopback host.
func loopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	return raw != "" && err == nil && agent.Loopback(u.Hostname())
}

// runExit is the exit of airlock run: 0 done, 5 waiting for approval,
// 130 cancelled, 3 a provider, connection or store failure, 1 the step
// limit.
func runExit(out *agent.Outcome, interrupted bool) error {
	switch out.Status {
	case store.RunDone:
		return nil
	case store.RunWaiting:
		// Calls of a step made alike wait for one approval.
		var approve []string
		for _, id := range out.Approvals {
			if cmd := "airlock approvals approve " + id; !slices.Contains(approve, cmd) {
				approve = append(approve, cmd)
			}
		}
		what := "approval"
		if len(approve) > 1 {
			what = fmt.Sprintf("%d approvals", len(approve))
		}
		return &exitError{code: exitApproval, msg: fmt.Sprintf("run %s waits for %s: %s, then airlock run --resume %s",
			out.RunID, what, strings.Join(approve, "; "), out.RunID)}
	case store.RunCancelled:
		return &exitError{code: exitInterrupted, msg: fmt.Sprintf("interrupted: airlock run --resume %s goes on", out.RunID)}
	}
	if interrupted || errors.Is(out.Err, context.Canceled) {
		return &exitError{code: exitInterrupted, msg: "interrupted"}
	}
	msg := "the run failed"
	if out.Err != nil {
		msg = out.Err.Error()
	}
	if errors.Is(out.Err, agent.ErrMaxSteps) {
		return &exitError{code: exitModel, msg: msg} // it says how to resume: with more steps
	}
	if out.RunID != "" {
		msg += fmt.Sprintf(" (run %s; airlock run --resume %s tries again)", out.RunID, out.RunID)
	}
	return &exitError{code: exitServer, msg: msg}
}

// yesReads approves the calls policy asks about whose tools local policy
// calls reads, and puts every other question to the approver it wraps
// (nil: nobody, and the call waits).
type yesReads struct{ next airlock.Approver }

var _ airlock.RememberingApprover = yesReads{}

func (y yesReads) Approve(ctx context.Context, req airlock.ApprovalRequest) (airlock.Verdict, error) {
	if req.Effect == airlock.EffectRead {
		return airlock.Allow, nil
	}
	if y.next == nil {
		return "", nil
	}
	return y.next.Approve(ctx, req)
}

func (y yesReads) ApproveRemember(ctx context.Context, req airlock.ApprovalRequest) (airlock.Verdict, bool, error) {
	if req.Effect == airlock.EffectRead {
		return airlock.Allow, false, nil
	}
	if ra, ok := y.next.(airlock.RememberingApprover); ok {
		return ra.ApproveRemember(ctx, req)
	}
	v, err := y.Approve(ctx, req)
	return v, false, err
}

// cancelOnInterrupt is a terminal approver whose Ctrl-C (read by the
// line editor, not as a signal) interrupts the whole run.
type cancelOnInterrupt struct {
	*terminalApprover
	cancel context.CancelFunc
}

func (c cancelOnInterrupt) Approve(ctx context.Context, req airlock.ApprovalRequest) (airlock.Verdict, error) {
	v, err := c.terminalApprover.Approve(ctx, req)
	c.interrupted(ctx, err)
	return v, err
}

func (c cancelOnInterrupt) ApproveRemember(ctx context.Context, req airlock.ApprovalRequest) (airlock.Verdict, bool, error) {
	v, remember, err := c.terminalApprover.ApproveRemember(ctx, req)
	c.interrupted(ctx, err)
	return v, remember, err
}

// interrupted cancels the run when the person interrupted the question,
// not when it was withdrawn because someone answered it elsewhere.
func (c cancelOnInterrupt) interrupted(ctx context.Context, err error) {
	if errors.Is(err, context.Canceled) && !errors.Is(context.Cause(ctx), airlock.ErrDecidedElsewhere) {
		c.cancel()
	}
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func firstPositive(vs ...int) int {
	for _, v := range vs {
		if v > 0 {
			return v
		}
	}
	return 0
}
