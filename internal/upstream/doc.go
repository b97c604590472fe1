// Package upstream connects Airlock to MCP servers and owns everything about
// a connection that the SDK leaves to the host.
//
// For a stdio server that means: the command comes from configuration only;
// the process runs in its own process group with a minimal environment (which
// points package managers at the user's caches, never their configuration), a
// private HOME under the state directory and a marker (AIRLOCK_SERVER_INSTANCE)
// that whatever it starts inherits; on Linux it gets the parent-death signal,
// and the host process is a child subreaper, so that the server dies with the
// host and what it leaves behind comes back to the host; its stderr is drained
// into a bounded ring and, within limits of rate and size, the host's log,
// never to stdout or a model; every line it writes on stdout is capped in size
// and every response is checked for strict JSON before the SDK decodes it; the
// 2026-07-28 version probe is bounded so that a legacy server falls back to
// the initialize handshake quickly; the negotiated version must be one the
// deployment allows and the server must offer tools; a request from the
// server is answered "method not found", the host offering no client
// features. Close ends the whole process group (close stdin, then SIGTERM,
// then SIGKILL), then what left it, and is idempotent and bounded in time.
// WriteRecord and StopRecorded keep what a later process needs to end the
// servers of one that died.
//
// Protocol work (framing, handshake, requests, cancellation) is the SDK's:
// this package never writes JSON-RPC by hand.
//
// Only the root airlock package imports upstream, and internal/worktree, to
// end the servers a dead process left in a task.
package upstream
