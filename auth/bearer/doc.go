// Package bearer verifies OAuth 2.0 bearer access tokens for a resource
// server: JWT access tokens as profiled by RFC 9068, checked against the
// authorization server's published keys and, optionally, its RFC 7662
// introspection endpoint.
//
// It builds on the MCP SDK's auth package ([auth.RequireBearerToken],
// [auth.TokenInfo], [auth.ProtectedResourceMetadataHandler]) and adds what a
// public resource server needs and the SDK leaves to its callers:
//
//   - keys from the issuer's JWKS, found through RFC 8414 or OpenID Connect
//     discovery at the issuer (or given explicitly), cached, refreshed when a
//     token names an unknown key id, at most once per
//     [Options.MinRefreshInterval];
//   - an algorithm allowlist of asymmetric algorithms only: "none" and every
//     HMAC algorithm are refused whatever the configuration says, and a key is
//     used only with an algorithm of its own type, so a public RSA key can
//     never serve as an HMAC secret;
//   - header "typ" at+jwt (or application/at+jwt), "iss" equal to the issuer,
//     "aud" naming this resource under [SameResource], "exp" required,
//     "nbf" and "iat" with a bounded clock skew, "sub" required; "exp",
//     "nbf" and "iat" JSON numbers (RFC 7519 NumericDate, never numeric
//     strings) and "scope" RFC 6749 scope tokens separated by single
//     spaces ([ParseScope]), nothing more lenient;
//   - the scope, client id, tenant and user claims as a [Principal] in the
//     request context and in the SDK's [auth.TokenInfo] (whose UserID binds
//     a stateful session to its tenant and user);
//   - RFC 6750 challenges: 401 with resource_metadata and scope (and
//     error="invalid_token" when a token was presented), and
//     [WriteInsufficientScope] for 403 error="insufficient_scope", which the
//     SDK does not write;
//   - the door of an MCP server over HTTP, checked before any token:
//     [HostCheck] against DNS rebinding, [OriginCheck] with CORS for exactly
//     the allowed origins, and [MetadataPaths] for RFC 9728 metadata.
//
// Tokens are never logged and never passed on: the [Verifier.Middleware]
// removes the Authorization header before the protected handler runs.
//
// Any Airlock package that serves a protected resource may import it (the
// issue server, and the gateway with serve.auth); the client side shares
// [SameResource] so that both ends compare resources the same way.
package bearer
