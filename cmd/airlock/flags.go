package main

import (
	"errors"
	"flag"
	"io"
	"strings"
	"time"
)

// common are the flags every host command takes.
type common struct {
	config  string
	state   string
	allow   listFlag
	json    bool
	verbose bool
	task    string
	trace   string // --trace FILE: the wire trace (tools, call, shell, status)
	// answerWait is call's and run's --answer-wait: with no terminal to
	// ask on, how long a server's question waits for the console.
	answerWait time.Duration
}

// options are the flags of one command line: the host flags, and those of
// the command, which reads only the ones it defines (see the command table).
type options struct {
	common

	available      bool          // tools --available
	url            string        // add --url
	callArgs       string        // call --args, prompt --args
	server         string        // read --server, complete --server
	promptName     string        // complete --prompt
	template       string        // complete --template
	argument       string        // complete --argument
	value          string        // complete --value
	context        string        // complete --context
	progress       bool          // call --progress
	remember       bool          // approvals approve --remember
	repo, base     string        // task open
	all            bool          // approvals list, recovery list
	allPrincipals  bool          // approvals list, show, approve and deny
	note           string        // approvals approve and deny, recovery resolve
	outcome        string        // recovery resolve
	since          time.Duration // audit
	limit          int           // audit
	follow         bool          // audit
	noBrowser      bool          // auth login
	tenant, user   string        // auth login, status, logout: whose logins
	root           string        // server workspace
	allowHardLinks bool          // server workspace
	protect        pathsFlag     // server workspace
	issues         issuesFlags   // server issues
	stdio          bool          // serve
	httpAddr       string        // serve
	console        bool          // serve --console
	run            runFlags      // run
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "config", "", "airlock.yaml or an mcpServers JSON file")
	fs.StringVar(&c.state, "state", "", "state directory (default: .airlock beside the config)")
	fs.Var(&c.allow, "allow", "SERVER:TOOL,… to expose from an mcpServers JSON file")
	fs.BoolVar(&c.json, "json", false, "machine-readable output")
	fs.BoolVar(&c.verbose, "verbose", false, "copy the host's log to stderr")
}

// traceFlag defines --trace, for the commands that talk to servers.
func traceFlag(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.trace, "trace", "", "write every JSON-RPC message sent and received, redacted, one JSON object a line, to FILE")
}

// registerTask adds --task, for the commands that can act in a task.
func (c *common) registerTask(fs *flag.FlagSet) {
	fs.StringVar(&c.task, "task", "", "act in this task: its worktree, its servers and tools")
}

// listFlag collects comma-separated values over repeated uses.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// parseFlags parses args with fs, allowing flags after positionals
// (`airlock call NAME --json`), and returns the positionals. Everything
// after "--" is positional.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError("%s: %v", fs.Name(), err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag stops at the first positional, or after "--".
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// leadingFlags splits off the host flags given before the command
// (`airlock --json tools`); the command then takes them as if they
// followed it. rest starts with the command.
func leadingFlags(args []string) (lead, rest []string, err error) {
	var o options
	fs := flag.NewFlagSet("airlock", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	o.register(fs)
	o.registerTask(fs)
	traceFlag(fs, &o)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil, err
		}
		return nil, nil, usageError("%v: before the command go only the flags every command takes "+
			"(--config, --state, --allow, --json, --verbose, --task, --trace); the command's own flags follow it: airlock COMMAND [FLAGS]", err)
	}
	rest = fs.Args()
	lead = args[:len(args)-len(rest)]
	if n := len(lead); n > 0 && lead[n-1] == "--" {
		lead = lead[:n-1]
	}
	return lead, rest, nil
}
