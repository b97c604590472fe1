// Package gateway serves an Airlock [airlock.Host] as an MCP server, so that
// any MCP client (Claude Code, Cursor, the MCP Inspector, an agent in any
// language) reaches the governed catalog instead of the servers behind it.
//
// The Host is served through the SDK's [mcp.Server]: on stdio for one
// client ([Gateway.ServeStdio]), or over Streamable HTTP ([Gateway.Handler],
// [Gateway.Serve]) for many, where one endpoint takes both protocol eras: a
// 2025-11-25 client initializes and gets a session, a 2026-07-28 client
// sends stateless requests. Each tools/call runs [airlock.Host.Call], the
// same pipeline as every library call; there is no second path. The
// catalog's resources, resource templates and prompts are listed too, and
// resources/read, prompts/get, completion/complete and resource
// subscriptions run through the host's own methods for them
// ([airlock.Host.ReadResource], [airlock.Host.GetPrompt],
// [airlock.Host.Complete], [airlock.Host.Subscribe]); a URI two servers
// list is listed qualified by its server (content.go). The Host,
// and with it one upstream process per server, is shared by every
// downstream session, so concurrency slots and tenant caps hold across
// them.
//
// A call's result is mapped onto MCP honestly: what the model may act on is
// a tool result (isError for failures), an unknown tool is the JSON-RPC
// error the specification gives for one, and a server's contract or
// connection failure is a JSON-RPC error that carries no tool text. A call
// that policy wants approved asks the person at the client, through
// elicitation, when the client declared it. The progress and log messages
// a server sends about a call reach the client that made it, and no other.
//
// Without inbound authentication the HTTP endpoint answers loopback clients
// only and every call is made for the host's own principal. With it
// ([Options.Verifier], built from serve.auth by [NewVerifier]) the endpoint
// is an OAuth resource server, and each call is made for the tenant and
// user its caller's access token names ([airlock.Host.SnapshotFor]).
//
//	client ──► mcp.Server ─┬─► Gateway.call ─────► Host.Call ──────────────┬─► upstream servers
//	             ▲         └─► Gateway.read, get ─► Host.ReadResource, GetPrompt ┘
//	             │
//	             └─ tools, resources, prompts ◄── snapshot (swapped when the catalog changes)
//
// It is imported by cmd/airlock (airlock serve) and by tests.
package gateway
