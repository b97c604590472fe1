package bearer

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Principal is who a verified access token speaks for. It never holds the
// token itself.
type Principal struct {
	// Issuer is the token's "iss" (the configured issuer).
	Issuer string
	// Subject is the token's "sub": the user or service the token was issued
	// for.
	Subject string
	// Tenant is the value of the configured tenant claim, or "" when the
	// verifier has no tenant claim.
	Tenant string
	// User is the value of the configured user claim: Subject unless the
	// verifier names another claim ([Options.UserClaim]).
	User string
	// ClientID is the OAuth client the token was issued to ("client_id",
	// else "azp"), or "".
	ClientID string
	// Scopes are the token's scopes, from its space-separated "scope" claim.
	Scopes []string
	// TokenID is the token's "jti", or "".
	TokenID string
	// Expiry is the token's "exp".
	Expiry time.Time
}

// HasScope reports whether the token grants scope.
func (p *Principal) HasScope(scope string) bool {
	return p != nil && slices.Contains(p.Scopes, scope)
}

// UserID identifies the principal across requests: the same tenant and
// user give the same value. The SDK's Streamable HTTP handler binds a
// stateful session to it, so a session id taken from another user's
// requests is useless.
func (p *Principal) UserID() string {
	user := p.User
	if user == "" {
		user = p.Subject
	}
	return strconv.Quote(p.Tenant) + " " + strconv.Quote(user)
}

// TokenInfo returns the principal as the SDK's token information, with the
// principal itself in Extra for [PrincipalFromTokenInfo].
func (p *Principal) TokenInfo() *auth.TokenInfo {
	return &auth.TokenInfo{
		Scopes:     slices.Clone(p.Scopes),
		Expiration: p.Expiry,
		UserID:     p.UserID(),
		Extra:      map[string]any{principalExtraKey: p},
	}
}

// principalExtraKey is the [auth.TokenInfo] Extra key holding the *Principal.
const principalExtraKey = "airlock.principal"

// PrincipalFromTokenInfo returns the principal that [Principal.TokenInfo]
// stored in ti, or nil. MCP tool handlers find it through the request's
// Extra.TokenInfo.
func PrincipalFromTokenInfo(ti *auth.TokenInfo) *Principal {
	if ti == nil {
		return nil
	}
	p, _ := ti.Extra[principalExtraKey].(*Principal)
	return p
}

type principalKey struct{}

// WithPrincipal returns a copy of ctx that carries p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal the [Verifier.Middleware] stored in
// ctx, or nil.
func PrincipalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}
