// Package airlock is a governed MCP host: it sits between an agent loop and
// MCP servers and runs every tool call through one pipeline.
//
// A [Host] starts the configured servers (stdio subprocesses, each in its own
// process group), discovers their tools with every check a hostile or broken
// server calls for, and freezes the result in an immutable [Snapshot]: the
// catalog a model sees, under deterministic local names such as
// "fs__read_file". A model turn takes one snapshot and resolves every call
// against it:
//
//	snapshot lookup ─► strict JSON decoding ─► input schema ─► tools/call
//	─► strict response check ─► output schema ─► artifacts ─► Result
//
// Nothing reaches a server unless the name is in the snapshot and the
// arguments are strict JSON (no duplicate or case-variant keys, valid UTF-8,
// bounded depth) that matches the tool's input schema; the value that was
// checked is the value that is sent. Every outcome has a [Kind]: the model is
// shown ok, invalid_arguments, tool_error and unknown_tool results; a contract
// or connection failure is for the harness and is never dressed up as tool
// text. Images, audio and embedded resources go to a content-addressed
// artifact store and the model gets a reference.
//
// A server's own annotations (read-only, destructive) are hints: they are
// shown, and never lower a tool's effect.
//
// The command airlock (cmd/airlock) is this package on the command line.
package airlock
