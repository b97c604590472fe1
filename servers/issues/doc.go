// Package issues is the remote issue service bundled with Airlock: an MCP
// server over Streamable HTTP that is a strict OAuth 2.0 resource server.
// It is Airlock's reference remote server (the remote client is tested
// against it) and an example of putting a service behind MCP.
//
// The CLI serves it as `airlock server issues`; tests import it. The rest of
// Airlock reaches it only over HTTP.
//
// # Tools
//
// get_issue, list_issues (paged, filtered by project and status),
// create_issue (idempotent per caller-chosen idempotency_key) and
// close_issue. Issues belong to a tenant and a project and live in SQLite
// (a file, or memory).
//
// # Security model
//
// Every HTTP request is authenticated on its own; a stateful session id is
// never a credential. A request passes, in order: the DNS-rebinding check
// (Host on a loopback listener), the Origin allowlist, CORS, the body limit,
// bearer token verification ([bearer.Verifier]: signature by the issuer's
// keys, typ, iss, aud, exp/nbf/iat, tenant, optional introspection), the
// per-tool scope check (mcp:issues.read to read, mcp:issues.write to create
// or close; a missing scope is HTTP 403 with error="insufficient_scope"),
// then the SDK's own checks. Every query names the token's tenant, so
// another tenant's issue is indistinguishable from a missing one. The
// caller's token never leaves the server: the Authorization header is
// removed before the MCP handler runs, and the server calls nothing
// downstream with it. No answer repeats more than a bounded part of its
// request: error messages, error data and error bodies cut every value
// they quote, and a request id too long to repeat is refused.
package issues
