// Package airlock is a governed MCP host: it sits between an agent loop and
// MCP servers and runs every tool call through one pipeline.
//
// A [Host] starts the configured servers (stdio subprocesses, each in its own
// process group, and remote Streamable HTTP servers behind OAuth), discovers
// their tools with every check a hostile or broken server calls for, and
// freezes the result in an immutable [Snapshot]: the catalog a model sees,
// under deterministic local names such as "fs__read_file". A model turn
// takes one snapshot ([Host.BeginTurn], the safe point where servers'
// list_changed take effect) and resolves every call against it:
//
//	snapshot lookup ─► strict JSON decoding ─► before hooks ─► policy
//	(allow / ask: a person's approval / deny) ─► input schema ─► journal
//	intent ─► concurrency slot ─► tools/call ─► strict response check
//	─► output schema ─► artifacts ─► after hooks ─► Result
//
// Nothing reaches a server unless the name is in the snapshot, the
// arguments are strict JSON (no duplicate or case-variant keys, valid UTF-8,
// bounded depth), hooks and policy let the call through, and the arguments
// match the tool's input schema; the value that was checked is the value
// that is sent. A call that is not a read is written to the journal before
// it is sent, and a write whose outcome is unknown is never sent again by
// guessing. Every outcome has a [Kind]: the model is shown ok,
// invalid_arguments, tool_error, unknown_tool, denied and busy; approvals,
// logins and unknown outcomes go to a person; a contract or connection
// failure is for the harness and is never dressed up as tool text. Images,
// audio and embedded resources go to a content-addressed artifact store and
// the model gets a reference. Every stage is recorded in an audit trail,
// with secrets redacted.
//
// A server's own annotations (read-only, destructive) are hints: they are
// shown, and never lower a tool's [Effect], which only local policy sets.
//
// A server that asks for something during a call (an elicitation, an
// input_required round, a sample of a model) asks a person, never the
// model: an [InputRequest] goes to the [Elicitor] of the call or the host
// ([Options.Elicit]), the answer is checked against the request's schema
// before the server sees it, and the rounds are bounded
// (limits.max_input_rounds) and recorded with the call. Sampling is
// governed per server (servers[].sampling: deny, ask or allow).
//
// A [Task] gives agent work a git worktree of its own, with its own
// instances of the task-scoped servers.
//
// The command airlock (cmd/airlock) is this package on the command line.
package airlock
