package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/airlockhq/airlock/store"
)

// A command is one entry of the command table: what `airlock NAME …`
// takes and what it runs. A group (task, approvals, …) has subcommands
// instead of flags and a run function; a group that has them too (audit)
// runs them when its first argument names no subcommand.
type command struct {
	name  string
	usage string // what -h prints after "usage: "

	// args names the positionals; "[NAME]" is optional. Given another
	// number, the command's usage error is "PATH takes " + takes (default
	// "no arguments"), and got says what it adds: `call takes exactly one
	// tool name (see airlock tools), got 2 arguments`.
	args  []string
	takes string
	got   gotForm
	// rest lets the last of args take every positional left (after --).
	rest bool

	// Every command but the bundled servers (bare) takes the host flags;
	// task adds --task. flags defines the command's own flags, if any.
	task  bool
	bare  bool
	flags func(fs *flag.FlagSet, o *options)

	run func(e *env, o *options, pos []string) error

	// A group's subcommands, and its usage errors without one and for an
	// unknown one (%q: the name given).
	subs    []command
	missing string
	unknown string
}

// gotForm is what a wrong-count error says about the positionals given.
type gotForm int

const (
	gotNothing gotForm = iota
	gotFirst           // `, got "extra"`
	gotCount           // `, got 2 arguments`
)

// The usage lines a group's subcommands share.
const (
	approvalsUsage = "airlock approvals list [--all] | show ID | approve ID [--remember] [--note TEXT] | deny ID [--note TEXT] | rules | forget RULE [--note TEXT], each [--all-principals]"
	jobsUsage      = "airlock jobs list [--all] | show ID | cancel ID [--note TEXT], each [--all-principals]"
	recoveryUsage  = "airlock recovery list [--all] | show ID | resolve ID --outcome applied|not-applied [--note TEXT], each [--all-principals]"
	authUsage      = "airlock auth login SERVER [--no-browser] | status [SERVER] [--json] | logout SERVER, each [--tenant T] [--user U]"
	auditUsage     = "airlock audit [--since DUR] [--limit N] [--follow] [--json] | verify [--json]"
	completeUsage  = "airlock complete (--prompt NAME | --template URI_TEMPLATE [--server ID]) --argument NAME [--value TEXT] [--context JSON] [--json] [--task ID] [--trace FILE] [--config FILE] [--state DIR]"
	runsUsage      = "airlock runs [--limit N] [--json] | runs show RUN_ID [--json], each [--config FILE] [--state DIR]"
	addUsage       = "airlock add ID [--json] [--config FILE] -- COMMAND [ARGS…] | add ID --url URL [--json] [--config FILE]"
)

// commands is the command table, the group of every command of the CLI
// but help and version.
var commands = command{unknown: "unknown command %q; run airlock help", subs: []command{
	{name: "tools", usage: "airlock tools [--available] [--json] [--task ID] [--trace FILE] [--config FILE] [--state DIR]",
		task: true, got: gotFirst,
		flags: func(fs *flag.FlagSet, o *options) {
			fs.BoolVar(&o.available, "available", false, "every tool each server offers, allowed or not, and how to allow it")
			traceFlag(fs, o)
		},
		run: (*env).tools},
	{name: "call", usage: "airlock call NAME [--args JSON|@FILE|-] [--json] [--progress] [--answer-wait DURATION] [--task ID] [--trace FILE] [--config FILE] [--state DIR]",
		args: []string{"NAME"}, takes: "exactly one tool name (see airlock tools)", got: gotCount, task: true,
		flags: func(fs *flag.FlagSet, o *options) {
			fs.StringVar(&o.callArgs, "args", "", "arguments: JSON text, @FILE, or - for stdin")
			fs.BoolVar(&o.progress, "progress", false, "show the server's progress notifications on stderr, one line each (a bar on a terminal without it)")
			answerWaitFlag(fs, o)
			traceFlag(fs, o)
		},
		run: (*env).call},
	{name: "resources", usage: "airlock resources [--json] [--task ID] [--trace FILE] [--config FILE] [--state DIR]",
		task: true, got: gotFirst, flags: traceFlag, run: (*env).resources},
	{name: "read", usage: "airlock read URI [--server ID] [--json] [--task ID] [--trace FILE] [--config FILE] [--state DIR]",
		args: []string{"URI"}, takes: "exactly one resource URI (see airlock resources)", got: gotCount, task: true,
		flags: func(fs *flag.FlagSet, o *options) {
			serverFlag(fs, o)
			traceFlag(fs, o)
		},
		run: (*env).read},
	{name: "prompts", usage: "airlock prompts [--json] [--task ID] [--trace FILE] [--config FILE] [--state DIR]",
		task: true, got: gotFirst, flags: traceFlag, run: (*env).prompts},
	{name: "prompt", usage: "airlock prompt NAME [--args JSON|@FILE|-] [--json] [--task ID] [--trace FILE] [--config FILE] [--state DIR]",
		args: []string{"NAME"}, takes: "exactly one prompt name (see airlock prompts)", got: gotCount, task: true,
		flags: func(fs *flag.FlagSet, o *options) {
			fs.StringVar(&o.callArgs, "args", "", `the prompt's arguments, a JSON object of strings: JSON text, @FILE, or - for stdin`)
			traceFlag(fs, o)
		},
		run: (*env).prompt},
	{name: "complete", usage: completeUsage, task: true, got: gotFirst,
		flags: func(fs *flag.FlagSet, o *options) {
			fs.StringVar(&o.promptName, "prompt", "", "complete an argument of this prompt (see airlock prompts)")
			fs.StringVar(&o.template, "template", "", "complete a variable of this resource template (see airlock resources)")
			serverFlag(fs, o)
			fs.StringVar(&o.argument, "argument", "", "the argument or variable to complete")
			fs.StringVar(&o.value, "value", "", "what is typed of it so far")
			fs.StringVar(&o.context, "context", "", `the values of other arguments, a JSON object of strings, such as {"department": "Engineering"}`)
			traceFlag(fs, o)
		},
		run: (*env).complete},
	{name: "shell", usage: "airlock shell [--json] [--task ID] [--trace FILE] [--config FILE] [--state DIR]",
		task: true, got: gotFirst, flags: traceFlag, run: (*env).shell},
	{name: "status", usage: "airlock status [--json] [--task ID] [--trace FILE] [--config FILE] [--state DIR]",
		task: true, got: gotFirst, flags: traceFlag, run: (*env).status},

	{name: "run", usage: runUsage,
		args: []string{"[PROMPT…]"}, rest: true, task: true,
		flags: func(fs *flag.FlagSet, o *options) {
			fs.StringVar(&o.run.provider, "provider", "", "the model's provider: openai (and every server compatible with it) or anthropic (default: agent.provider)")
			fs.StringVar(&o.run.model, "model", "", "the provider's model name (default: agent.model)")
			fs.StringVar(&o.run.baseURL, "base-url", "", "the provider's endpoint, such as http://127.0.0.1:11434/v1 (default: agent.base_url, else the provider's own)")
			fs.Var(bounded{&o.run.maxSteps, 1, 10000}, "max-steps", "at most this many model steps, 1 to 10000 (default: agent.max_steps, else 50)")
			fs.BoolVar(&o.run.yesReads, "yes-reads", false, "approve, without asking, the calls policy asks about of tools local policy calls reads")
			fs.StringVar(&o.run.resume, "resume", "", "go on with this run (see airlock runs): after an approval, a crash or an interruption")
			answerWaitFlag(fs, o)
		},
		run: (*env).run},
	{name: "runs", usage: runsUsage,
		flags: func(fs *flag.FlagSet, o *options) {
			o.limit = 50
			fs.Var(bounded{&o.limit, 1, 100000}, "limit", "at most this many runs, the newest (1 to 100000; default 50)")
		},
		run: inRuns((*env).runsList),
		subs: []command{
			{name: "show", usage: runsUsage, args: []string{"RUN_ID"}, takes: "exactly one run id (see airlock runs)", got: gotCount,
				run: inRuns((*env).runsShow)},
		}},

	{name: "add", usage: addUsage,
		args: []string{"ID", "[COMMAND ARGS…]"}, takes: "a server id, then -- and the command that starts the server (or --url URL)", got: gotCount, rest: true,
		flags: func(fs *flag.FlagSet, o *options) {
			fs.StringVar(&o.url, "url", "", "the MCP endpoint of a remote server (Streamable HTTP), instead of a command")
		},
		run: (*env).add},
	{name: "remove", usage: "airlock remove ID [--json] [--config FILE]",
		args: []string{"ID"}, takes: "exactly one server id", got: gotCount, run: (*env).remove},

	{name: "task",
		missing: "task needs a subcommand: open ID, list, or close ID",
		unknown: "unknown task subcommand %q: use open ID, list, or close ID",
		subs: []command{
			{name: "open", usage: "airlock task open ID [--repo DIR] [--base REF] [--json]",
				args: []string{"ID"}, takes: "exactly one task id",
				flags: func(fs *flag.FlagSet, o *options) {
					fs.StringVar(&o.repo, "repo", "", "a directory in the git repository (default: the working directory)")
					fs.StringVar(&o.base, "base", "", "what the task's branch starts from (default: HEAD)")
				},
				run: (*env).taskOpen},
			{name: "list", usage: "airlock task list [--json]", run: (*env).taskList},
			{name: "close", usage: "airlock task close ID [--json]",
				args: []string{"ID"}, takes: "exactly one task id", run: (*env).taskClose},
		}},

	{name: "approvals",
		missing: "approvals needs a subcommand: list, show ID, approve ID, deny ID, rules, or forget RULE",
		unknown: "unknown approvals subcommand %q: use list, show ID, approve ID, deny ID, rules, or forget RULE",
		subs: []command{
			{name: "list", usage: approvalsUsage,
				flags: operatorFlag(allFlag("every request, not only pending ones")), run: asActor((*env).approvalsList)},
			{name: "show", usage: approvalsUsage, args: []string{"ID"}, takes: "exactly one approval id",
				flags: operatorFlag(nil), run: asActor((*env).approvalsShow)},
			{name: "approve", usage: approvalsUsage, args: []string{"ID"}, takes: "exactly one approval id",
				flags: operatorFlag(func(fs *flag.FlagSet, o *options) {
					fs.BoolVar(&o.remember, "remember", false,
						"don't ask again: later calls of this tool (as it is defined now), whatever the arguments, run without asking while policy would ask")
					noteFlag("why, for the audit trail")(fs, o)
				}),
				run: asActor((*env).approve)},
			{name: "deny", usage: approvalsUsage, args: []string{"ID"}, takes: "exactly one approval id",
				flags: operatorFlag(noteFlag("why, for the audit trail")), run: asActor((*env).deny)},
			{name: "rules", usage: approvalsUsage, flags: operatorFlag(nil), run: asActor((*env).approvalRules)},
			{name: "forget", usage: approvalsUsage, args: []string{"RULE"}, takes: "exactly one rule id (see airlock approvals rules)",
				flags: operatorFlag(noteFlag("why, for the audit trail")), run: asActor((*env).forgetRule)},
		}},

	{name: "recovery",
		missing: "recovery needs a subcommand: list, show ID, or resolve ID --outcome applied|not-applied",
		unknown: "unknown recovery subcommand %q: use list, show ID, or resolve ID",
		subs: []command{
			{name: "list", usage: recoveryUsage,
				flags: operatorFlag(allFlag("every record of the journal, not only unresolved unknown outcomes")), run: asActor((*env).recoveryList)},
			{name: "show", usage: recoveryUsage, args: []string{"ID"}, takes: "exactly one record id",
				flags: operatorFlag(nil), run: asActor((*env).recoveryShow)},
			{name: "resolve", usage: recoveryUsage, args: []string{"ID"}, takes: "exactly one record id",
				flags: operatorFlag(func(fs *flag.FlagSet, o *options) {
					fs.StringVar(&o.outcome, "outcome", "", "what you found: applied or not-applied")
					noteFlag("how you found out, for the audit trail")(fs, o)
				}),
				run: (*env).recoveryResolve},
		}},

	{name: "jobs",
		missing: "jobs needs a subcommand: list, show ID, or cancel ID",
		unknown: "unknown jobs subcommand %q: use list, show ID, or cancel ID",
		subs: []command{
			{name: "list", usage: jobsUsage,
				flags: operatorFlag(allFlag("every task kept (until its ttl), not only running ones")), run: asActor((*env).jobsList)},
			{name: "show", usage: jobsUsage, args: []string{"ID"}, takes: "exactly one task id",
				flags: operatorFlag(nil), run: asActor((*env).jobsShow)},
			{name: "cancel", usage: jobsUsage, args: []string{"ID"}, takes: "exactly one task id",
				flags: operatorFlag(noteFlag("why, for the audit trail")), run: asActor((*env).jobsCancel)},
		}},

	{name: "audit", usage: auditUsage,
		flags: func(fs *flag.FlagSet, o *options) {
			fs.DurationVar(&o.since, "since", 24*time.Hour, "how far back, such as 30m or 48h")
			o.limit = 1000
			fs.Var(bounded{&o.limit, 1, 1000000}, "limit", "at most this many events, the newest, printed oldest first (1 to 1000000; default 1000)")
			fs.BoolVar(&o.follow, "follow", false, "then keep printing new events as they are written, until interrupted")
		},
		run: (*env).audit,
		subs: []command{
			{name: "verify", usage: auditUsage, run: inStore((*env).auditVerify)},
		}},

	{name: "auth",
		missing: "auth needs a subcommand: login SERVER, status [SERVER] or logout SERVER",
		unknown: "unknown auth subcommand %q: use login SERVER, status [SERVER] or logout SERVER",
		subs: []command{
			{name: "login", usage: authUsage,
				args: []string{"SERVER"}, takes: "exactly one server id: airlock auth login SERVER",
				flags: func(fs *flag.FlagSet, o *options) {
					fs.BoolVar(&o.noBrowser, "no-browser", false, "only print the authorization URL; do not start a browser")
					principalFlags(fs, o)
				},
				run: (*env).authLogin},
			{name: "status", usage: authUsage,
				args: []string{"[SERVER]"}, takes: "at most one server id", got: gotCount, flags: principalFlags, run: (*env).authStatus},
			{name: "logout", usage: authUsage,
				args: []string{"SERVER"}, takes: "exactly one server id: airlock auth logout SERVER", flags: principalFlags, run: (*env).authLogout},
		}},

	{name: "serve", usage: serveUsage, got: gotFirst,
		flags: func(fs *flag.FlagSet, o *options) {
			fs.BoolVar(&o.stdio, "stdio", false, "serve one client on stdin and stdout")
			fs.StringVar(&o.httpAddr, "http", "", "serve Streamable HTTP at /mcp on this HOST:PORT (loopback unless serve.auth is configured)")
			fs.BoolVar(&o.console, "console", false, "also serve the operator console under /console/ (with --http)")
			fs.BoolVar(&o.allPrincipals, "all-principals", false, "the console's viewers act on the requests and records of every tenant and user, not only those of tenancy:")
		},
		run: (*env).serve},

	{name: "console", usage: consoleUsage, got: gotFirst,
		flags: operatorFlag(func(fs *flag.FlagSet, o *options) {
			fs.StringVar(&o.httpAddr, "http", "", "serve the console on this loopback HOST:PORT (default "+defaultConsoleAddr+")")
		}),
		run: (*env).console},

	{name: "server",
		missing: "server needs a name: airlock server workspace [--root DIR], or airlock server issues --issuer URL --resource URL",
		unknown: "unknown server %q; the bundled servers are: workspace, issues",
		subs: []command{
			{name: "workspace", usage: "airlock server workspace [--root DIR] [--allow-hard-links] [--protect PATH]...",
				bare: true, got: gotFirst,
				flags: func(fs *flag.FlagSet, o *options) {
					fs.StringVar(&o.root, "root", "", "the directory to serve (default: $AGENT_WORKSPACE_ROOT, else the working directory)")
					fs.BoolVar(&o.allowHardLinks, "allow-hard-links", false,
						"read, search and replace files with more than one hard link (another name for such a file may be outside the root)")
					fs.Var(&o.protect, "protect", "a file or directory the tools refuse, as they do Airlock's own (repeatable)")
				},
				run: (*env).serveWorkspace},
			{name: "issues", usage: serveIssuesUsage, bare: true, got: gotFirst,
				flags: func(fs *flag.FlagSet, o *options) { o.issues.register(fs) },
				run:   (*env).serveIssues},
		}},
}}

// serverFlag defines --server, for what names a resource, which more
// than one server may serve.
func serverFlag(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.server, "server", "", "the server, when more than one may serve the resource or lists the template (default: the one that does)")
}

// answerWaitFlag defines --answer-wait, for a command that may run with
// nobody at a terminal.
func answerWaitFlag(fs *flag.FlagSet, o *options) {
	fs.Var((*answerWait)(&o.answerWait), "answer-wait",
		"with no terminal to ask on, a server's question waits this long for an answer in the console (airlock console), such as 10m, before it is declined (default: declined at once)")
}

// bounded is an integer flag's value, checked as it is given: from min to
// max.
type bounded struct {
	n        *int
	min, max int
}

func (b bounded) String() string {
	if b.n == nil {
		return ""
	}
	return strconv.Itoa(*b.n)
}

func (b bounded) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < b.min || n > b.max {
		return fmt.Errorf("give a whole number from %d to %d", b.min, b.max)
	}
	*b.n = n
	return nil
}

// answerWait is --answer-wait's value: a duration from 1s to
// maxAnswerWait, checked as it is given.
type answerWait time.Duration

func (a *answerWait) String() string { return time.Duration(*a).String() }

func (a *answerWait) Set(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second || d > maxAnswerWait {
		return fmt.Errorf("give a duration from 1s to 24h, such as 10m")
	}
	*a = answerWait(d)
	return nil
}

// allFlag defines --all, for a list of more than what awaits a person.
func allFlag(usage string) func(fs *flag.FlagSet, o *options) {
	return func(fs *flag.FlagSet, o *options) { fs.BoolVar(&o.all, "all", false, usage) }
}

// operatorFlag adds --all-principals to flags (which may be nil): act on
// the approval requests and journal records of every tenant and user, not
// only tenancy:'s.
func operatorFlag(flags func(fs *flag.FlagSet, o *options)) func(fs *flag.FlagSet, o *options) {
	return func(fs *flag.FlagSet, o *options) {
		if flags != nil {
			flags(fs, o)
		}
		fs.BoolVar(&o.allPrincipals, "all-principals", false,
			"as an operator, act on the requests and records of every tenant and user, not only those of tenancy: (written to the audit trail)")
	}
}

// noteFlag defines --note, the person's words for the audit trail.
func noteFlag(usage string) func(fs *flag.FlagSet, o *options) {
	return func(fs *flag.FlagSet, o *options) { fs.StringVar(&o.note, "note", "", usage) }
}

// inStore runs a command on the state directory's store, which it opens
// (starting no server) and closes after.
func inStore(run func(e *env, st store.Store, o *options, pos []string) error) func(*env, *options, []string) error {
	return func(e *env, o *options, pos []string) error {
		st, err := e.openStore(&o.common)
		if err != nil {
			return err
		}
		defer st.Close()
		return run(e, st, o, pos)
	}
}

// dispatch finds the subcommand of group that args name and runs it with
// the rest of args, after lead, the host flags given before the command
// (leadingFlags); path is the group's name ("" for the table's root).
func (e *env) dispatch(group *command, path string, lead, args []string) error {
	if len(args) == 0 {
		return usageError("%s", group.missing)
	}
	cmd := group.sub(args[0])
	if cmd == nil {
		return usageError(group.unknown, args[0])
	}
	path = strings.TrimPrefix(path+" "+cmd.name, " ")
	if cmd.subs != nil && (cmd.run == nil || len(args) > 1 && cmd.sub(args[1]) != nil) {
		return e.dispatch(cmd, path, lead, args[1:])
	}
	return e.runCommand(cmd, path, append(slices.Clip(lead), args[1:]...))
}

// sub returns the subcommand of group called name, or nil.
func (group *command) sub(name string) *command {
	for i := range group.subs {
		if group.subs[i].name == name {
			return &group.subs[i]
		}
	}
	return nil
}

// runCommand parses the flags and checks the positionals of cmd, then runs
// it. Flags may follow positionals.
func (e *env) runCommand(cmd *command, path string, args []string) error {
	var o options
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	if !cmd.bare {
		o.common.register(fs)
	}
	if cmd.task {
		o.common.registerTask(fs)
	}
	if cmd.flags != nil {
		cmd.flags(fs, &o)
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return e.help(err, cmd.usage)
	}
	if err := cmd.checkArgs(path, pos); err != nil {
		return err
	}
	return cmd.run(e, &o, pos)
}

// checkArgs is the usage error for a number of positionals cmd does not
// take, or nil.
func (cmd *command) checkArgs(path string, pos []string) error {
	required := 0
	for _, a := range cmd.args {
		if !strings.HasPrefix(a, "[") {
			required++
		}
	}
	if len(pos) >= required && (len(pos) <= len(cmd.args) || cmd.rest) {
		return nil
	}
	takes := cmd.takes
	if takes == "" {
		takes = "no arguments"
	}
	msg := path + " takes " + takes
	switch {
	case cmd.got == gotFirst && len(pos) > 0:
		msg += fmt.Sprintf(", got %q", pos[0])
	case cmd.got == gotCount:
		msg += fmt.Sprintf(", got %d arguments", len(pos))
	}
	return usageError("%s", msg)
}

// help turns a flag.ErrHelp into the command's usage line.
func (e *env) help(err error, line string) error {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(e.stdout, "usage: "+line)
		return nil
	}
	return err
}
