// Package upstream connects Airlock to MCP servers and owns everything about
// a connection that the SDK leaves to the host.
//
// For a stdio server that means: the command comes from configuration only;
// the process runs in its own process group with a minimal environment and a
// private HOME under the state directory; its stderr is drained into a bounded
// ring and the host's log, never to stdout or a model; every line it writes on
// stdout is capped in size and every response is checked for strict JSON
// before the SDK decodes it; the 2026-07-28 version probe is bounded so that a
// legacy server falls back to the initialize handshake quickly; the negotiated
// version must be one the deployment allows and the server must offer tools.
// Close ends the whole process group (close stdin, then SIGTERM, then SIGKILL)
// and is idempotent and bounded in time.
//
// Protocol work (framing, handshake, requests, cancellation) is the SDK's:
// this package never writes JSON-RPC by hand.
//
// Only the root airlock package imports upstream.
package upstream
