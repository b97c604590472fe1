package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
)

// openStore opens the state directory's store without starting servers.
func (e *env) openStore(c *common) (store.Store, error) {
	_, st, err := e.configAndStore(c, e.openStoreOf)
	return st, err
}

// configAndStore loads the configuration and opens the store that open
// finds in it.
func (e *env) configAndStore(c *common, open func(*common, *config.Config) (store.Store, error)) (*config.Config, store.Store, error) {
	cfg, err := e.loadConfig(c)
	if err != nil {
		return nil, nil, err
	}
	st, err := open(c, cfg)
	if err != nil {
		return nil, nil, err
	}
	return cfg, st, nil
}

// openStoreOf opens the store cfg names (store.url), or else the one in
// its state directory (or --state).
func (e *env) openStoreOf(c *common, cfg *config.Config) (store.Store, error) {
	st, err := airlock.OpenConfiguredStore(cfg, stateDir(c, cfg))
	if err != nil {
		// The store cannot be read or reached: exit 3, as docs/cli.md
		// gives for the governance commands (2 is for the command line).
		return nil, &exitError{code: exitServer, msg: err.Error()}
	}
	// Calls left open by a process that died are unknown now; the store
	// knows which writers are still alive.
	if _, err := st.Journal().RecoverOpen(e.ctx, time.Now()); err != nil {
		st.Close()
		return nil, storeError(err)
	}
	return st, nil
}

func whoami() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "unknown"
}

// storeError maps a store error: unknown ids, settled records and another
// principal's approval requests are usage errors, anything else is a
// failure to reach the store.
func storeError(err error) error {
	if errors.Is(err, airlock.ErrOtherPrincipal) {
		return usageError("%v: set tenancy: in the configuration to the tenant and user it was asked for, or act as an operator with --all-principals", err)
	}
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConflict) {
		return usageError("%v", err)
	}
	return &exitError{code: exitServer, msg: err.Error()}
}

// asActor runs an approvals or recovery command on the state directory's
// store, acting for the tenant and user of tenancy: (for every principal
// with --all-principals) in the name of the person running it.
func asActor(run func(e *env, st store.Store, as airlock.Actor, o *options, pos []string) error) func(*env, *options, []string) error {
	return func(e *env, o *options, pos []string) error {
		cfg, st, err := e.configAndStore(&o.common, e.openStoreOf)
		if err != nil {
			return err
		}
		defer st.Close()
		as := airlock.Actor{Principal: airlock.ConfigPrincipal(cfg), By: whoami(), AllPrincipals: o.allPrincipals}
		e.actorCfg = cfg
		return run(e, st, as, o, pos)
	}
}

var approvalsListing = listing[store.Approval]{
	key:    "approvals",
	none:   "No approval requests are pending.",
	header: []string{"ID", "STATUS", "SERVER", "TOOL", "FOR", "EXPIRES"},
	row: func(a store.Approval) []string {
		return []string{a.ID, string(a.Status), a.Server, a.Tool, a.Tenant + "/" + a.User, localTime(a.ExpiresAt)}
	},
}

func (e *env) approvalsList(st store.Store, as airlock.Actor, o *options, _ []string) error {
	f := store.ApprovalFilter{Status: store.ApprovalPending}
	if o.all {
		f.Status = ""
	}
	list, err := airlock.ListApprovals(e.ctx, st, f, as)
	return approvalsListing.printRead(e, o, list, err)
}

func (e *env) approvalsShow(st store.Store, as airlock.Actor, o *options, pos []string) error {
	a, err := airlock.GetApproval(e.ctx, st, pos[0], as)
	return show(e, o, a, err, printApproval)
}

// show prints x, what a show command read (err, the read's error): as JSON
// with --json, otherwise as text prints it.
func show[T any](e *env, o *options, x T, err error, text func(io.Writer, T)) error {
	if err != nil {
		return storeError(err)
	}
	if o.json {
		return writeJSON(e.stdout, x)
	}
	text(e.stdout, x)
	return nil
}

func printApproval(w io.Writer, a store.Approval) {
	fmt.Fprintf(w, "%s (%s): %s on %s, expires %s\n", a.ID, a.Status, a.Tool, a.Server, localTime(a.ExpiresAt))
	fmt.Fprintf(w, "  asked for %s/%s\n", a.Tenant, a.User)
	if a.Target != "" {
		fmt.Fprintf(w, "  server %s: %s\n", a.Server, a.Target)
	}
	fmt.Fprintf(w, "\n%s\n", a.Summary)
}

func (e *env) approve(st store.Store, as airlock.Actor, o *options, pos []string) error {
	if !o.remember {
		return e.decide(st, as, o, pos[0], true)
	}
	if hooks := e.actorCfg.Policy.Hooks; len(hooks) > 0 {
		return usageError("approve --remember: policy.hooks are configured (%s), and an answer remembered for a tool would answer a hook's question too: approve without --remember",
			hooks[0].Source)
	}
	rule, err := airlock.RememberApproval(e.ctx, st, pos[0], o.note, as)
	if err != nil {
		return storeError(err)
	}
	a, _ := st.Approvals().Get(e.ctx, pos[0])
	if o.json {
		// The approval's own JSON, as without --remember, and the rule.
		return writeJSON(e.stdout, struct {
			store.Approval
			Rule store.AllowRule `json:"rule"`
		}{a, rule})
	}
	fmt.Fprintf(e.stdout, "Approved %s: the same call (%s, same arguments) may now run once, until %s.\n", a.ID, a.Tool, localTime(a.ExpiresAt))
	printRemembered(e.stdout, rule)
	return nil
}

// printRemembered says what a remembered rule lets run, and how to undo it.
func printRemembered(w io.Writer, r store.AllowRule) {
	fmt.Fprintf(w, "Remembered as %s: calls of %s on %s for %s/%s run without asking while policy would ask, as long as the tool and its server stay as they are now; what policy denies stays denied. Undo: airlock approvals forget %s\n",
		r.ID, r.Tool, r.Server, r.Tenant, r.User, r.ID)
}

var rulesListing = listing[store.AllowRule]{
	key:    "rules",
	none:   "No answers are remembered.",
	header: []string{"ID", "SERVER", "TOOL", "FOR", "BY", "CREATED"},
	row: func(r store.AllowRule) []string {
		return []string{r.ID, r.Server, r.Tool, r.Tenant + "/" + r.User, r.CreatedBy, localTime(r.CreatedAt)}
	},
}

// approvalRules lists the remembered "always" answers.
func (e *env) approvalRules(st store.Store, as airlock.Actor, o *options, _ []string) error {
	list, err := airlock.ListRules(e.ctx, st, as)
	return rulesListing.printRead(e, o, list, err)
}

// forgetRule deletes a remembered answer: that tool is asked about again.
func (e *env) forgetRule(st store.Store, as airlock.Actor, o *options, pos []string) error {
	rule, err := airlock.ForgetRule(e.ctx, st, pos[0], o.note, as)
	if err != nil {
		return storeError(err)
	}
	if o.json {
		return writeJSON(e.stdout, rule)
	}
	fmt.Fprintf(e.stdout, "Forgot %s: calls of %s on %s for %s/%s are asked about again.\n", rule.ID, rule.Tool, rule.Server, rule.Tenant, rule.User)
	return nil
}

func (e *env) deny(st store.Store, as airlock.Actor, o *options, pos []string) error {
	return e.decide(st, as, o, pos[0], false)
}

// decide grants or denies an approval request in the name of the user
// running the command.
func (e *env) decide(st store.Store, as airlock.Actor, o *options, id string, grant bool) error {
	if err := airlock.DecideApproval(e.ctx, st, id, grant, o.note, as); err != nil {
		return storeError(err)
	}
	a, _ := st.Approvals().Get(e.ctx, id)
	if o.json {
		return writeJSON(e.stdout, a)
	}
	if grant {
		fmt.Fprintf(e.stdout, "Approved %s: the same call (%s, same arguments) may now run once, until %s.\n", a.ID, a.Tool, localTime(a.ExpiresAt))
	} else {
		fmt.Fprintf(e.stdout, "Denied %s: the same call (%s, same arguments) is refused without asking until %s.\n",
			a.ID, a.Tool, localTime(a.DecidedAt.Add(e.actorCfg.Approvals.TTL)))
	}
	return nil
}

var recordsListing = listing[store.Record]{
	key:    "records",
	none:   "No calls have an unknown outcome.",
	header: []string{"ID", "STATUS", "SERVER", "TOOL", "CREATED", "RESOLVED"},
	row: func(r store.Record) []string {
		resolved := "no"
		if r.Resolved {
			resolved = string(r.Resolution)
		}
		return []string{r.ID, string(r.Status), r.Server, r.Tool, localTime(r.CreatedAt), resolved}
	},
}

func (e *env) recoveryList(st store.Store, as airlock.Actor, o *options, _ []string) error {
	recs, err := airlock.ListRecoveries(e.ctx, st, store.RecordFilter{All: o.all}, as)
	return recordsListing.printRead(e, o, recs, err)
}

func (e *env) recoveryShow(st store.Store, as airlock.Actor, o *options, pos []string) error {
	r, err := airlock.GetRecovery(e.ctx, st, pos[0], as)
	return show(e, o, r, err, printRecord)
}

func (e *env) recoveryResolve(o *options, pos []string) error {
	if !store.Resolution(o.outcome).Valid() {
		return usageError("recovery resolve needs --outcome applied or --outcome not-applied: check whether the call took effect first")
	}
	return asActor((*env).resolve)(e, o, pos)
}

// resolve records what a person found out about a call whose outcome was
// unknown.
func (e *env) resolve(st store.Store, as airlock.Actor, o *options, pos []string) error {
	if err := airlock.ResolveRecovery(e.ctx, st, pos[0], store.Resolution(o.outcome), o.note, as); err != nil {
		return storeError(err)
	}
	r, _ := st.Journal().Get(e.ctx, pos[0])
	if o.json {
		return writeJSON(e.stdout, r)
	}
	fmt.Fprintf(e.stdout, "Resolved %s as %s.\n", r.ID, r.Resolution)
	return nil
}

func printRecord(w io.Writer, r store.Record) {
	fmt.Fprintf(w, "%s: %s on %s, %s\n", r.ID, r.Tool, r.Server, r.Status)
	fmt.Fprintf(w, "  effect %s, arguments %s, snapshot %s, sent %s\n", r.Effect, r.ArgsHash, r.Snapshot, localTime(r.CreatedAt))
	fmt.Fprintf(w, "  made for %s/%s\n", r.Tenant, r.User)
	// The journal keeps the arguments as JSON that escapes what a terminal
	// would hide; Indent keeps every string as it is written.
	var args bytes.Buffer
	switch {
	case len(r.Arguments) > 0 && json.Indent(&args, r.Arguments, "  ", "  ") == nil:
		fmt.Fprintf(w, "  arguments (secrets redacted): %s\n", args.Bytes())
	case r.Status == store.OutcomeOpen || r.Status == store.OutcomeUnknown:
		fmt.Fprintln(w, "  arguments: not kept (the record is older than that); only their hash is known")
	default:
		fmt.Fprintln(w, "  arguments: not kept once the outcome is known; only their hash is")
	}
	if r.Detail != "" {
		// The detail may quote a server (its JSON-RPC error's message).
		fmt.Fprintf(w, "  %s\n", terminalText(r.Detail))
	}
	if r.LateAnswer != "" {
		fmt.Fprintf(w, "  later, at %s, %s (evidence, not a resolution)\n", localTime(r.LateAnswerAt), r.LateAnswer)
	}
	if r.Resolved {
		fmt.Fprintf(w, "  resolved as %s by %s: %s\n", r.Resolution, r.ResolvedBy, terminalText(r.Note))
	} else if r.Status == store.OutcomeUnknown {
		fmt.Fprintf(w, "  check whether it took effect, then record what you found, one of:\n    airlock recovery resolve %s --outcome applied\n    airlock recovery resolve %s --outcome not-applied\n", r.ID, r.ID)
	}
}

func (e *env) audit(o *options, _ []string) error {
	if o.since <= 0 || o.limit <= 0 {
		return usageError("--since and --limit must be positive")
	}
	return inStore((*env).printAudit)(e, o, nil)
}

// followEvery is how often audit --follow looks for new events: each look
// is two indexed queries that read only what is new.
const followEvery = 500 * time.Millisecond

// followPage bounds the events one look of audit --follow takes in; more
// than that in followEvery are left out, and it says so.
const followPage = 10000

// printAudit prints the newest --limit events of the audit trail since
// --since, oldest first, and says on stderr how many older ones it left
// out. With --follow it then prints new events as they are written, until
// interrupted.
func (e *env) printAudit(st store.Store, o *options, _ []string) error {
	since := time.Now().Add(-o.since)
	page, err := st.Audit().Tail(e.ctx, since, 0, o.limit)
	if err != nil {
		return storeError(err)
	}
	if err := e.printEvents(o, page.Events); err != nil {
		return err
	}
	if page.Omitted > 0 {
		fmt.Fprintf(e.stderr, "airlock: %d older events since %s are not shown; to see them too: airlock audit --since %s --limit %d\n",
			page.Omitted, localTime(since), o.since, page.Omitted+len(page.Events))
	}
	if !o.follow {
		return nil
	}
	tick := time.NewTicker(followEvery)
	defer tick.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return nil // interrupted: the way following ends
		case <-tick.C:
		}
		if page, err = st.Audit().Tail(e.ctx, since, page.Next, followPage); err != nil {
			if e.ctx.Err() != nil {
				return nil
			}
			return storeError(err)
		}
		if page.Omitted > 0 {
			fmt.Fprintf(e.stderr, "airlock: %d events were written faster than they could be shown and are left out; see them with airlock audit --since %s\n",
				page.Omitted, o.since)
		}
		if err := e.printEvents(o, page.Events); err != nil {
			return err
		}
	}
}

// auditTextFields are the fields of an audit event that airlock audit
// shows in text mode, in this order: what was decided and by whom, and
// for a server's questions during a call, what it asked and how often.
var auditTextFields = []string{"decision", "reason", "action", "approval", "by", "recovery",
	"kind", "mode", "round", "domain", "message", "input_rounds", "error"}

// printEvents prints audit events, one a line: JSON with --json, else the
// time, the event, the server, the tool, the class and what else matters.
func (e *env) printEvents(o *options, events []store.Event) error {
	for _, ev := range events {
		if o.json {
			if err := writeJSON(e.stdout, ev); err != nil {
				return err
			}
			continue
		}
		var extra []string
		for _, k := range auditTextFields {
			v, ok := ev.Fields[k]
			if !ok {
				continue
			}
			// Values may hold a server's words: shown as one line a
			// terminal shows as it is.
			text := printable(fmt.Sprint(v), 300)
			if k == "message" || strings.ContainsAny(text, " =") {
				text = strconv.Quote(text)
			}
			extra = append(extra, k+"="+text)
		}
		fmt.Fprintf(e.stdout, "%s %-18s %-10s %-24s %-16s %s\n", localTime(ev.Time), ev.Event, ev.Server, ev.Tool, ev.Class, strings.Join(extra, " "))
	}
	return nil
}

// auditVerify checks the audit trail's chain and reports the first break:
// exit 0 when it holds, 1 when it is broken (a check that failed, as with
// cmp(1)), 3 when the trail or its key cannot be read.
func (e *env) auditVerify(st store.Store, o *options, _ []string) error {
	r, err := st.Audit().Verify(e.ctx)
	if err != nil {
		return storeError(err)
	}
	if o.json {
		if err := writeJSON(e.stdout, r); err != nil {
			return err
		}
	} else {
		printChainReport(e.stdout, r)
	}
	if !r.Intact {
		return exitCode(exitBroken)
	}
	return nil
}

func printChainReport(w io.Writer, r store.ChainReport) {
	unchained := ""
	if r.Unchained > 0 {
		unchained = fmt.Sprintf("; %d written before the trail was chained, which the chain does not protect", r.Unchained)
	}
	if b := r.Break; b != nil {
		where := ""
		if b.At != nil {
			where = " at " + chainPoint(b.At)
		}
		fmt.Fprintf(w, "The audit trail is broken: %s%s: %s.\n", b.Kind, where, b.Detail)
		fmt.Fprintf(w, "Before the break: %d of %d events chained in order%s.\n", r.Verified, r.Events, unchained)
		return
	}
	fmt.Fprintf(w, "The audit trail is intact: %d events, %d chained%s.\n", r.Events, r.Verified, unchained)
	if r.Head != nil {
		fmt.Fprintf(w, "Head: %s, sum %s.\n", chainPoint(r.Head), r.Head.Sum)
		fmt.Fprintln(w, "Keep the head elsewhere and compare: newest events cut off together with the head record, and an older copy of it put back, do not show in the trail itself.")
	}
}

// chainPoint names an event of the trail for a person.
func chainPoint(p *store.ChainPoint) string {
	s := fmt.Sprintf("seq %d", p.Seq)
	if p.Position > 0 {
		s += fmt.Sprintf(" (#%d)", p.Position)
	}
	s += fmt.Sprintf(", %s %s", localTime(p.Time), p.Event)
	return s + strings.TrimRight(" "+p.Server+" "+p.Tool, " ")
}

// jobView is a job (a tool call airlock serve runs as an MCP task) as the
// jobs commands show it.
type jobView struct {
	ID             string          `json:"id"`
	Status         string          `json:"status"`
	Message        string          `json:"message,omitempty"`
	Server         string          `json:"server"`
	Tool           string          `json:"tool"`
	Tenant         string          `json:"tenant"`
	User           string          `json:"user"`
	Write          bool            `json:"write"`
	RecordID       string          `json:"record_id,omitempty"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	ExpiresAt      time.Time       `json:"expires_at"`
	PollIntervalMS int64           `json:"poll_interval_ms"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          json.RawMessage `json:"error,omitempty"`
	InputRequests  json.RawMessage `json:"input_requests,omitempty"`
}

func viewJob(j store.Job) jobView {
	return jobView{ID: j.ID, Status: string(j.Status), Message: j.Message, Server: j.Server, Tool: j.Tool, Tenant: j.Tenant, User: j.User,
		Write: j.Write, RecordID: j.RecordID, CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt, ExpiresAt: j.ExpiresAt(),
		PollIntervalMS: j.PollInterval.Milliseconds(), Result: j.Result, Error: j.Error, InputRequests: j.Input}
}

var jobsListing = listing[jobView]{
	key:    "tasks",
	none:   "No tasks are running.",
	header: []string{"ID", "STATUS", "SERVER", "TOOL", "FOR", "CREATED", "UPDATED"},
	row: func(j jobView) []string {
		return []string{j.ID, j.Status, j.Server, j.Tool, j.Tenant + "/" + j.User, localTime(j.CreatedAt), localTime(j.UpdatedAt)}
	},
}

func (e *env) jobsList(st store.Store, as airlock.Actor, o *options, _ []string) error {
	f := store.JobFilter{Status: []store.JobStatus{store.JobWorking, store.JobInputRequired}}
	if o.all {
		f.Status = nil
	}
	list, err := airlock.ListJobs(e.ctx, st, f, as)
	if err != nil {
		return storeError(err)
	}
	views := make([]jobView, len(list))
	for i, j := range list {
		views[i] = viewJob(j)
	}
	return jobsListing.print(e.stdout, o.json, views)
}

func (e *env) jobsShow(st store.Store, as airlock.Actor, o *options, pos []string) error {
	j, err := airlock.GetJob(e.ctx, st, pos[0], as)
	return show(e, o, viewJob(j), err, printJob)
}

func printJob(w io.Writer, v jobView) {
	fmt.Fprintf(w, "%s (%s): %s on %s, for %s/%s\n", v.ID, v.Status, v.Tool, v.Server, v.Tenant, v.User)
	fmt.Fprintf(w, "  created %s, updated %s, kept until %s\n", localTime(v.CreatedAt), localTime(v.UpdatedAt), localTime(v.ExpiresAt))
	if v.Message != "" {
		fmt.Fprintf(w, "  %s\n", v.Message)
	}
	if v.Write {
		fmt.Fprintln(w, "  a write: its call is in the journal (airlock recovery list --all)")
	}
	for _, part := range []struct {
		name string
		body json.RawMessage
	}{{"result", v.Result}, {"error", v.Error}, {"waiting for answers to", v.InputRequests}} {
		if len(part.body) > 0 {
			fmt.Fprintf(w, "  %s: %s\n", part.name, clipTo(string(part.body), 2000))
		}
	}
}

func (e *env) jobsCancel(st store.Store, as airlock.Actor, o *options, pos []string) error {
	if err := airlock.CancelJob(e.ctx, st, pos[0], o.note, as); err != nil {
		return storeError(err)
	}
	if o.json {
		return writeJSON(e.stdout, map[string]string{"id": pos[0], "status": string(store.JobCancelled)})
	}
	fmt.Fprintf(e.stdout, "Cancelled %s: the gateway running it cancels its call within a second.\n", pos[0])
	return nil
}

// clipTo bounds s to n bytes for a terminal, marking a cut.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
