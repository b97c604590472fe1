package oauthtest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/subtle"
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// storage is the in-memory op.Storage behind the provider. The provider
// does the protocol (authorization endpoint, PKCE verification, the code and
// refresh grants, signing); the storage decides what a library leaves to
// its user: the audience (the RFC 8707 resource the client asked for),
// refresh token rotation, users and claims.
type storage struct {
	key      *rsa.PrivateKey
	keyID    string
	clientID string
	redirect []string
	tenant   string
	withhold []string
	users    map[string]string // subject → password
	tenants  map[string]string // subject → tenant, in place of tenant
	// optionalResource lets requests name no resource; userinfoOnly
	// keeps the tenant out of ID tokens.
	optionalResource, userinfoOnly bool
	service                        *ServiceClient
	// assertions verifies the service client's assertions.
	assertions *op.JWTProfileVerifier

	mu       sync.Mutex
	ttl      time.Duration
	requests map[string]*authRequest
	codes    map[string]string // code → request id
	refresh  map[string]*refreshGrant
	revokedR map[string]bool // refresh tokens revoked by RevokeGrants
	issued   []string        // access token ids
	revoked  map[string]bool // access token ids
	stats    Stats
	// requested are the scopes of each authorization and client
	// credentials request.
	requested [][]string
}

// Stats counts what the authorization server did.
type Stats struct {
	// CodeExchanges and Refreshes count tokens issued by each grant.
	CodeExchanges, Refreshes int
	// ReusedRefreshTokens counts refresh requests with a refresh token
	// that had already been rotated away.
	ReusedRefreshTokens int
	// RevokedRefreshTokens counts refresh requests with a refresh token
	// that RevokeGrants revoked.
	RevokedRefreshTokens int
	// MissingResource counts authorization and token requests without a
	// resource parameter (refused).
	MissingResource int
	// ClientCredentials counts tokens issued to the service client;
	// Assertions the client assertions among them whose signature was
	// verified; RefusedClients the client credentials requests refused
	// for a wrong secret or a bad assertion.
	ClientCredentials, Assertions, RefusedClients int
}

type authRequest struct {
	id       string
	req      oidc.AuthRequest
	resource string
	subject  string
	done     bool
	authTime time.Time
}

func (a *authRequest) GetID() string    { return a.id }
func (a *authRequest) GetACR() string   { return "" }
func (a *authRequest) GetAMR() []string { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string {
	if a.resource == "" {
		return nil // the client's, which the provider adds
	}
	return []string{a.resource}
}
func (a *authRequest) GetAuthTime() time.Time { return a.authTime }
func (a *authRequest) GetClientID() string    { return a.req.ClientID }
func (a *authRequest) GetNonce() string       { return a.req.Nonce }
func (a *authRequest) GetRedirectURI() string { return a.req.RedirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType {
	return a.req.ResponseType
}
func (a *authRequest) GetResponseMode() oidc.ResponseMode { return a.req.ResponseMode }
func (a *authRequest) GetScopes() []string                { return a.req.Scopes }
func (a *authRequest) GetState() string                   { return a.req.State }
func (a *authRequest) GetSubject() string                 { return a.subject }
func (a *authRequest) Done() bool                         { return a.done }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	if a.req.CodeChallenge == "" {
		return nil
	}
	return &oidc.CodeChallenge{Challenge: a.req.CodeChallenge, Method: a.req.CodeChallengeMethod}
}

type refreshGrant struct {
	subject, clientID, resource string
	scopes                      []string
	authTime                    time.Time
}

func (r *refreshGrant) GetAMR() []string            { return []string{"pwd"} }
func (r *refreshGrant) GetAudience() []string       { return []string{r.resource} }
func (r *refreshGrant) GetAuthTime() time.Time      { return r.authTime }
func (r *refreshGrant) GetClientID() string         { return r.clientID }
func (r *refreshGrant) GetScopes() []string         { return r.scopes }
func (r *refreshGrant) GetSubject() string          { return r.subject }
func (r *refreshGrant) SetCurrentScopes(s []string) { r.scopes = s }

// newAccessID returns the id (jti) of a new access token. Callers hold mu.
func (s *storage) newAccessID() string {
	id := rand.Text()
	s.issued = append(s.issued, id)
	return id
}

type formKey struct{}

// formFrom returns the parameters of the request being served (put in the
// context by the provider's wrapper).
func formFrom(ctx context.Context) url.Values {
	f, _ := ctx.Value(formKey{}).(url.Values)
	return f
}

// resourceFrom returns the resource parameters of the request being served.
func resourceFrom(ctx context.Context) []string {
	return formFrom(ctx)["resource"]
}

func (s *storage) oneResource(ctx context.Context) (string, error) {
	r := resourceFrom(ctx)
	if len(r) == 0 && s.optionalResource {
		return "", nil
	}
	if len(r) != 1 || r[0] == "" {
		s.stats.MissingResource++
		return "", oidc.ErrInvalidRequest().WithDescription("exactly one resource parameter is required")
	}
	return r[0], nil
}

func (s *storage) CreateAuthRequest(ctx context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res, err := s.oneResource(ctx)
	if err != nil {
		return nil, err
	}
	s.requested = append(s.requested, slices.Clone(req.Scopes))
	a := &authRequest{id: rand.Text(), req: *req, resource: res}
	a.req.Scopes = slices.DeleteFunc(slices.Clone(req.Scopes), func(sc string) bool { return slices.Contains(s.withhold, sc) })
	s.requests[a.id] = a
	return a, nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.requests[id]
	if !ok {
		return nil, errors.New("no such request")
	}
	return a, nil
}

func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.requests[s.codes[code]]
	if !ok {
		return nil, errors.New("no such code")
	}
	// RFC 8707: the token request names the resource the grant was for.
	res, err := s.oneResource(ctx)
	if err != nil {
		return nil, err
	}
	if res != a.resource {
		return nil, oidc.ErrInvalidTarget().WithDescription("resource differs from the authorization request")
	}
	return a, nil
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.requests, id)
	for c, rid := range s.codes {
		if rid == id {
			delete(s.codes, c)
		}
	}
	return nil
}

// complete marks a request as authenticated by subject.
func (s *storage) complete(id, subject string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.requests[id]
	if !ok {
		return errors.New("no such request")
	}
	a.subject, a.done, a.authTime = subject, true, time.Now()
	return nil
}

func (s *storage) CreateAccessToken(ctx context.Context, req op.TokenRequest) (string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := req.(*serviceGrant); ok {
		s.stats.ClientCredentials++
	} else {
		s.stats.CodeExchanges++
	}
	return s.newAccessID(), time.Now().Add(s.ttl), nil
}

func (s *storage) CreateAccessAndRefreshTokens(ctx context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := &refreshGrant{subject: req.GetSubject(), scopes: slices.Clone(req.GetScopes())}
	switch r := req.(type) {
	case *authRequest:
		g.clientID, g.resource, g.authTime = r.GetClientID(), r.resource, r.authTime
		s.stats.CodeExchanges++
	case *refreshGrant:
		// Rotation: the presented refresh token is spent. Of two requests
		// that raced with the same token, the second finds it gone.
		if _, ok := s.refresh[current]; !ok {
			s.stats.ReusedRefreshTokens++
			return "", "", time.Time{}, oidc.ErrInvalidGrant().WithDescription("refresh token was already used")
		}
		delete(s.refresh, current)
		g.clientID, g.resource, g.authTime = r.clientID, r.resource, r.authTime
		s.stats.Refreshes++
	default:
		return "", "", time.Time{}, errors.New("unsupported request")
	}
	rt := "rt-" + rand.Text()
	s.refresh[rt] = g
	return s.newAccessID(), rt, time.Now().Add(s.ttl), nil
}

func (s *storage) TokenRequestByRefreshToken(ctx context.Context, rt string) (op.RefreshTokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.refresh[rt]
	if !ok {
		if s.revokedR[rt] {
			s.stats.RevokedRefreshTokens++
		} else {
			s.stats.ReusedRefreshTokens++
		}
		return nil, op.ErrInvalidRefreshToken
	}
	res, err := s.oneResource(ctx)
	if err != nil {
		return nil, err
	}
	if res != g.resource {
		return nil, oidc.ErrInvalidTarget().WithDescription("resource differs from the grant")
	}
	c := *g
	c.scopes = slices.Clone(g.scopes)
	return &c, nil
}

func (s *storage) TerminateSession(context.Context, string, string) error { return nil }

func (s *storage) RevokeToken(context.Context, string, string, string) *oidc.Error { return nil }

func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k signingKey) Key() any                                    { return k.key }
func (k signingKey) ID() string                                  { return k.id }

type publicKey struct{ signingKey }

func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.key.PublicKey }

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	return signingKey{s.keyID, s.key}, nil
}

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	return []op.Key{publicKey{signingKey{s.keyID, s.key}}}, nil
}

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	if id != s.clientID {
		return nil, errors.New("no such client")
	}
	return &client{id: id, redirect: s.redirect}, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	return errors.New("no confidential clients")
}

// tenantOf is the tenant of subject's tokens.
func (s *storage) tenantOf(subject string) string {
	if t, ok := s.tenants[subject]; ok {
		return t
	}
	return s.tenant
}

// SetUserinfoFromScopes adds the tenant to ID tokens (unless only the
// userinfo endpoint may say it).
func (s *storage) SetUserinfoFromScopes(_ context.Context, ui *oidc.UserInfo, subject, _ string, _ []string) error {
	ui.Subject = subject
	if t := s.tenantOf(subject); t != "" && !s.userinfoOnly {
		ui.AppendClaims("tenant", t)
	}
	return nil
}

func (s *storage) SetUserinfoFromToken(_ context.Context, ui *oidc.UserInfo, _, subject, _ string) error {
	ui.Subject = subject
	if t := s.tenantOf(subject); t != "" {
		ui.AppendClaims("tenant", t)
	}
	return nil
}

func (s *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return nil
}

// GetPrivateClaimsFromScopes adds the granted scopes (the provider puts
// none in JWT access tokens) and the tenant.
func (s *storage) GetPrivateClaimsFromScopes(_ context.Context, subject, _ string, scopes []string) (map[string]any, error) {
	claims := map[string]any{"scope": strings.Join(scopes, " ")}
	if t := s.tenantOf(subject); t != "" {
		claims["tenant"] = t
	}
	return claims, nil
}

// GetKeyByIDAndClientID returns the service client's public key, which
// verifies its assertions (whatever their key id).
func (s *storage) GetKeyByIDAndClientID(_ context.Context, _, clientID string) (*jose.JSONWebKey, error) {
	if s.service == nil || s.service.PublicKey == nil || clientID != s.service.ID {
		return nil, errors.New("no such client key")
	}
	return &jose.JSONWebKey{Key: s.service.PublicKey, Use: "sig"}, nil
}

// ClientCredentials authenticates the service client (op's client
// credentials grant leaves that to the storage): its secret, or its
// assertion, verified as RFC 7523 says.
func (s *storage) ClientCredentials(ctx context.Context, clientID, secret string) (op.Client, error) {
	svc := s.service
	if svc == nil || clientID != svc.ID {
		return nil, s.refuseClient("no such client")
	}
	form := formFrom(ctx)
	if svc.PublicKey == nil {
		if secret == "" || subtle.ConstantTimeCompare([]byte(secret), []byte(svc.Secret)) != 1 {
			return nil, s.refuseClient("wrong client secret")
		}
		return &serviceClient{client{id: clientID}}, nil
	}
	if form.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" || secret != "" {
		return nil, s.refuseClient("a client assertion is required")
	}
	req, err := op.VerifyJWTAssertion(ctx, form.Get("client_assertion"), s.assertions)
	if err != nil || req.Issuer != clientID {
		return nil, s.refuseClient("the client assertion is not valid")
	}
	s.mu.Lock()
	s.stats.Assertions++
	s.mu.Unlock()
	return &serviceClient{client{id: clientID}}, nil
}

func (s *storage) refuseClient(why string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.RefusedClients++
	return errors.New(why)
}

// ClientCredentialsTokenRequest is the grant of a token to the service
// client for the resource it names.
func (s *storage) ClientCredentialsTokenRequest(ctx context.Context, clientID string, scopes []string) (op.TokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requested = append(s.requested, slices.Clone(scopes))
	res, err := s.oneResource(ctx)
	if err != nil {
		return nil, err
	}
	granted := slices.DeleteFunc(slices.Clone(scopes), func(sc string) bool { return slices.Contains(s.withhold, sc) })
	return &serviceGrant{client: clientID, resource: res, scopes: granted}, nil
}

// serviceGrant is a client credentials grant: the client is its own
// subject.
type serviceGrant struct {
	client, resource string
	scopes           []string
}

func (g *serviceGrant) GetSubject() string    { return g.client }
func (g *serviceGrant) GetAudience() []string { return []string{g.resource} }
func (g *serviceGrant) GetScopes() []string   { return g.scopes }

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errors.New("no JWT profile grants")
}

func (s *storage) Health(context.Context) error { return nil }

// serviceClient is the service client as the provider sees it.
type serviceClient struct {
	client
}

func (c *serviceClient) AuthMethod() oidc.AuthMethod { return oidc.AuthMethodBasic }
func (c *serviceClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeClientCredentials}
}
func (c *serviceClient) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }

// client is the one public client (PKCE, no secret) the server knows.
type client struct {
	id       string
	redirect []string
}

func (c *client) GetID() string                       { return c.id }
func (c *client) RedirectURIs() []string              { return c.redirect }
func (c *client) PostLogoutRedirectURIs() []string    { return nil }
func (c *client) ApplicationType() op.ApplicationType { return op.ApplicationTypeNative }
func (c *client) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodNone }
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}
}
func (c *client) LoginURL(id string) string            { return "/login?id=" + id }
func (c *client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (c *client) IDTokenLifetime() time.Duration       { return time.Hour }
func (c *client) DevMode() bool                        { return false }
func (c *client) IsScopeAllowed(string) bool           { return true }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *client) ClockSkew() time.Duration             { return 0 }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
