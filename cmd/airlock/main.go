// Command airlock is the command-line face of the Airlock MCP host: it lists
// the governed tool catalog, runs tool calls through the pipeline, keeps a
// long-lived shell for people and harnesses, and serves the bundled MCP
// servers. Its flags, JSON and exit codes are a contract that scripts rely
// on (see docs/cli.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
)

func main() {
	// A hangup (the terminal closed, an SSH session dropped) ends the
	// command as an interrupt does: servers are closed, with what they
	// started, and the journal and runs are settled.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(report(err, os.Stderr))
}

// Exit codes (docs/cli.md).
const (
	exitOK          = 0
	exitModel       = 1 // a failure the model is shown
	exitBroken      = 1 // audit verify: the audit trail is broken
	exitUsage       = 2 // usage or configuration error
	exitServer      = 3 // server contract or connection failure
	exitUnknown     = 4 // outcome unknown
	exitApproval    = 5 // approval required
	exitAuth        = 6 // auth required
	exitInterrupted = 130
)

// An exitError ends the command with a code. An empty message means the
// command already said everything it had to say.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...)}
}

func exitCode(code int) error {
	if code == exitOK {
		return nil
	}
	return &exitError{code: code}
}

// report prints err (if it has something to say) and returns the exit code.
func report(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(stderr, "airlock: "+ee.msg)
		}
		return ee.code
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "airlock: interrupted")
		return exitInterrupted
	}
	fmt.Fprintln(stderr, "airlock: "+err.Error())
	return exitServer
}

const usage = `airlock is a governed MCP host: it connects to the MCP servers in airlock.yaml
and runs every tool call through one checked pipeline.

Usage:
  airlock tools [--json]                      list the model-visible tool catalog
  airlock tools --available [--json]          every tool each server offers, allowed or not,
                                              and what allowing it takes
  airlock call NAME [--args JSON|@FILE|-] [--json] [--progress]
                                              run one tool call through the pipeline (on a terminal,
                                              asks when it needs approval and shows progress)
  airlock resources [--json]                  list the resources and resource templates servers expose
  airlock read URI [--server ID] [--json]     read a resource through the pipeline (a blob is saved
                                              as an artifact)
  airlock prompts [--json]                    list the prompts servers expose
  airlock prompt NAME [--args JSON|@FILE|-] [--json]
                                              get a prompt's messages through the pipeline
  airlock complete (--prompt NAME | --template URI_TEMPLATE [--server ID]) --argument NAME
                   [--value TEXT] [--context JSON] [--json]
                                              values a server suggests for an argument
  airlock shell [--json]                      a long-lived session, one command per line
  airlock add ID -- COMMAND [ARGS…]           add a server to airlock.yaml (none of its tools
  airlock add ID --url URL                    allowed yet) and show what it offers
  airlock remove ID                           remove a server from airlock.yaml
  airlock status [--json]                     connect to every server and report its state
  airlock task open ID [--repo DIR] [--base REF]
                                              a git worktree and task-scoped servers for one task
  airlock task list [--json]                  the open tasks, including those left by a crash
  airlock task close ID [--json]              stop its servers, save uncommitted work, remove the worktree
  airlock approvals list|show ID|approve ID [--remember]|deny ID [--all-principals]
                                              the calls policy wants a person to approve, of
                                              tenancy's tenant and user (operators: everyone's)
  airlock approvals rules|forget RULE [--all-principals]
                                              the remembered "always" answers, and taking one back
  airlock recovery list|show ID|resolve ID --outcome applied|not-applied [--all-principals]
                                              calls that were sent and whose outcome is unknown,
                                              of tenancy's tenant and user (operators: everyone's)
  airlock jobs list|show ID|cancel ID [--all-principals]
                                              tool calls airlock serve runs as MCP tasks (a server's
                                              tasks: mapping), of tenancy's tenant and user
  airlock audit [--since DUR] [--limit N] [--follow] [--json]
                                              the newest events of the audit trail (--follow: and new ones)
  airlock audit verify [--json]               check that no audit event was edited, deleted, reordered or inserted
  airlock auth login SERVER [--no-browser]    log in to a remote server (OAuth) for tenancy's tenant and user
                                              (--tenant T --user U: for another, such as a gateway's user)
  airlock auth status [SERVER] [--json]       who is logged in where, and until when (never the tokens)
  airlock auth logout SERVER                  delete this machine's tokens for a server
  airlock serve --stdio | --http ADDR         the gateway: the governed catalog as an MCP server, for one
                                              client on stdin/stdout or many over Streamable HTTP at /mcp
  airlock server workspace [--root DIR]       serve the bundled workspace MCP server on stdio
  airlock server issues --addr HOST:PORT --issuer URL --resource URL
                                              serve the remote issue service (Streamable HTTP, OAuth)
  airlock version                             print the version

Flags every command takes, before or after the command:
  --config FILE   airlock.yaml, or an mcpServers JSON file (default: airlock.yaml here or
                  in the nearest directory above, up to the repository's root, else the
                  built-in default: the workspace server over the current directory)
  --state DIR     state directory (default: .airlock beside the config)
  --allow S:T,…   tools to expose from an mcpServers JSON file (SERVER:TOOL or SERVER:*)
  --verbose       copy the host's log (and servers' stderr) to stderr
  --task ID       (tools, call, shell, status, resources, read, prompts, prompt, complete)
                  act in a task: its worktree and servers
  --trace FILE    (the same commands) write every JSON-RPC message sent and received,
                  redacted, one JSON object a line, to FILE

Exit codes: 0 ok, 1 a failure the model is shown, 2 usage or config error,
3 server contract or connection failure, 4 outcome unknown (a write interrupted
after it was sent too), 5 approval required, 6 auth required, 130 interrupted.
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitCode(exitUsage)
	}
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	switch args[0] {
	case "version", "--version":
		fmt.Fprintln(stdout, "airlock", version())
		return nil
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	lead, rest, err := leadingFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return nil
	}
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		fmt.Fprint(stderr, usage)
		return exitCode(exitUsage)
	}
	return e.dispatch(&commands, "", lead, rest)
}

// env is what every command runs with.
type env struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer

	closeLog     func()                     // set by openHost
	actorCfg     *config.Config             // the configuration asActor loaded
	approver     airlock.Approver           // asks a person, on a terminal (shell, call)
	elicit       airlock.Elicitor           // puts a server's questions to a person, on a terminal (shell, call)
	callProgress func(airlock.CallProgress) // shows a call's progress (call)
	stepUps      airlock.AuthOptions        // step-ups, in a shell on a terminal
	// hostOptions, when set, completes the host's options once the
	// configuration is read (serve: the gateway's approver and catalog
	// follower); an error ends the command before any server starts.
	hostOptions func(cfg *config.Config, opts *airlock.Options) error
}
