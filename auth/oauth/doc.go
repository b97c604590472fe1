// Package oauth is the host's OAuth 2.1 client for remote MCP servers: it
// logs a person in (or, for a headless client, obtains tokens with the
// client's own credentials), keeps their tokens apart from everyone
// else's, and puts a bearer token on each request to the server.
//
// The protocol work is the MCP SDK's and golang.org/x/oauth2's: discovery
// (RFC 9728 protected resource metadata, RFC 8414 / OpenID Connect
// authorization server metadata), the authorization code flow with PKCE
// S256, the RFC 8707 resource parameter, the RFC 9207 iss check and client
// registration (client ID metadata documents first, then a pre-registered
// client id, then dynamic registration) are the SDK's
// auth.AuthorizationCodeHandler; token exchange and refresh are oauth2's.
// This package adds what a host needs around them:
//
//   - Credential partitions. Tokens and client registrations are kept per
//     (tenant, user, server, resource, issuer) in a [secrets.Store], under a
//     hash of those ([Partition.Key]); one person's token never serves
//     another, and a server that changes its authorization server gets a
//     new partition.
//   - A trusted login ([Client.Login]): a one-time transaction bound to the
//     tenant, user and server, with the SDK's random state and an expiry,
//     answered on the configured loopback redirect URI; the authorization
//     URL goes to a caller-supplied function (only https or loopback http
//     URLs, never through a shell); logins for one partition run one at a
//     time.
//   - Stricter discovery: the authorization server must publish metadata
//     that advertises PKCE S256, the resource metadata must name the
//     configured resource, and the documents the SDK then uses are the ones
//     that were checked (they are fetched once per login). The one
//     exception is a 2025-03-26 server, which publishes no resource
//     metadata: its origin is its authorization server, with that
//     origin's metadata or the default /authorize, /token and /register.
//   - Scope selection: configured scopes are requested as they are;
//     without them, those of the server's 401 challenge, else its
//     resource metadata's scopes_supported, else none ([Server.Scopes]).
//   - The client credentials grant ([GrantClientCredentials]): tokens
//     issued with the client's secret (client_secret_basic) or an RFC 7523
//     assertion signed by its private key (private_key_jwt), with nobody
//     logging in, and issued again when they expire.
//   - Bounded fetches: every request to a metadata endpoint or an
//     authorization server is answered in full, body included, within
//     [Options.FetchTimeout] and 1 MiB, or the login or refresh fails
//     naming what it fetched.
//   - Strict token responses: a token that is not an RFC 6750 b64token, a
//     refresh token that is not RFC 6749 text, or an expires_in that is
//     not a lifetime is the authorization server's mistake; nothing of
//     such a response is stored. A refresh answered invalid_grant drops
//     the partition's tokens for good ([Status].LoginAgain), so that the
//     dead refresh token is never sent again.
//   - Egress: every connection (metadata, authorization server, token
//     endpoint) goes through an [egress.Guard], so metadata that points a
//     token endpoint at a private address is refused before anyone is asked
//     to log in, and again when the connection would be made.
//   - Calls ([Client.Transport]): the bearer token is added only to
//     requests for the server's own origin; refresh is single-flight per
//     partition, so rotating refresh tokens are never lost when many calls
//     find the token expired at once; a 401 leads to one refresh and then
//     [ErrAuthRequired] ("run airlock auth login SERVER"); a 403 with
//     insufficient_scope leads, at most once per call and only with the
//     person's consent, to a login for the union of the scopes.
//
// Tokens, codes, verifiers and client secrets are never logged, never put in
// errors, and never written anywhere but the secret store; a client
// credentials secret or private key is not even written there.
//
// The host's upstream layer and the CLI's auth commands import it.
package oauth
