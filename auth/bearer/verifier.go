package bearer

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/airlockhq/airlock/internal/schema"
)

// DefaultAlgorithms are the signature algorithms accepted when
// [Options.Algorithms] is empty: every asymmetric JWS algorithm of RFC 7518
// and RFC 8037. HMAC algorithms and "none" are never accepted: a resource
// server holds no shared secret with the issuer.
var DefaultAlgorithms = []string{
	"RS256", "RS384", "RS512",
	"PS256", "PS384", "PS512",
	"ES256", "ES384", "ES512",
	"EdDSA", "Ed25519",
}

// Defaults and bounds for [Options].
const (
	DefaultClockSkew          = 30 * time.Second
	MaxClockSkew              = 5 * time.Minute
	DefaultKeysTTL            = time.Hour
	DefaultMinRefreshInterval = 30 * time.Second
	DefaultFetchRetry         = 5 * time.Second
	DefaultMaxTokenBytes      = 8 << 10
	DefaultHTTPTimeout        = 10 * time.Second
)

// Options configures a [Verifier]. A nil *Options, and the zero value of
// every field, give the documented defaults.
type Options struct {
	// JWKSURL is the issuer's JWK Set. Empty means discover it from the
	// issuer's RFC 8414 or OpenID Connect metadata.
	JWKSURL string

	// Algorithms narrows the accepted signature algorithms. Empty means
	// DefaultAlgorithms. Naming "none" or an HMAC algorithm is an error.
	Algorithms []string

	// ClockSkew is the tolerance applied to "exp", "nbf" and "iat" for
	// clocks that disagree. Zero means DefaultClockSkew; at most
	// MaxClockSkew.
	ClockSkew time.Duration

	// TenantClaim names the claim that holds the caller's tenant. When set,
	// a token without a non-empty string in that claim is refused. Empty
	// means tokens carry no tenant.
	TenantClaim string

	// UserClaim names the claim that identifies the user ([Principal.User]).
	// When set, a token without a non-empty string in that claim is
	// refused. Empty means "sub".
	UserClaim string

	// CheckPrincipal, when set, is asked about the principal of every token
	// that passed the other checks, before introspection; a token whose
	// principal it refuses is an invalid token, with the error's text as
	// the description sent to the client (quotes and backslashes are left
	// out of it). A resource server uses it for names it cannot act for.
	CheckPrincipal func(*Principal) error

	// Introspection, when set, also asks the authorization server whether
	// each token is still active (RFC 7662).
	Introspection *Introspection

	// AllowInsecureHTTP permits plain-http issuer, JWKS and introspection
	// URLs on hosts that are not loopback. Tokens and keys then cross the
	// network unprotected; it exists for closed test networks only. Plain
	// http to loopback is always allowed.
	AllowInsecureHTTP bool

	// HTTPClient fetches metadata and keys and calls the introspection
	// endpoint. Nil means a client with a DefaultHTTPTimeout timeout that
	// follows no redirects.
	HTTPClient *http.Client

	// KeysTTL is how long fetched keys are used before they are fetched
	// again. Zero means DefaultKeysTTL.
	KeysTTL time.Duration

	// MinRefreshInterval bounds how often a token with an unknown key id
	// may cause the keys to be fetched again. Zero means
	// DefaultMinRefreshInterval.
	MinRefreshInterval time.Duration

	// MaxTokenBytes bounds the size of a token. Zero means
	// DefaultMaxTokenBytes.
	MaxTokenBytes int

	// Logger receives diagnostics (never tokens). Nil discards them.
	Logger *slog.Logger

	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// Verifier checks access tokens for one resource from one issuer. It is safe
// for concurrent use.
type Verifier struct {
	issuer      string
	resource    string
	algs        []string
	skew        time.Duration
	tenantClaim string
	userClaim   string
	check       func(*Principal) error
	maxToken    int
	now         func() time.Time
	logger      *slog.Logger
	keys        *keyCache
	introspect  *introspector
}

// NewVerifier returns a verifier for tokens that issuer issues for
// resource. Both are URLs; issuer must be https (plain http only to a
// loopback host, or with [Options.AllowInsecureHTTP]). It does not contact
// the issuer: keys are fetched on first use or by [Verifier.Ready].
func NewVerifier(issuer, resource string, opts *Options) (*Verifier, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if issuer == "" {
		return nil, errors.New("the issuer is required")
	}
	if err := checkURL("issuer", issuer, o.AllowInsecureHTTP, true); err != nil {
		return nil, err
	}
	if resource == "" {
		return nil, errors.New("the resource is required")
	}
	if err := checkURL("resource", resource, o.AllowInsecureHTTP, true); err != nil {
		return nil, err
	}
	if o.JWKSURL != "" {
		if err := checkURL("JWKS URL", o.JWKSURL, o.AllowInsecureHTTP, false); err != nil {
			return nil, err
		}
	}
	algs, err := allowedAlgorithms(o.Algorithms)
	if err != nil {
		return nil, err
	}
	switch {
	case o.ClockSkew < 0:
		return nil, errors.New("the clock skew must not be negative")
	case o.ClockSkew == 0:
		o.ClockSkew = DefaultClockSkew
	case o.ClockSkew > MaxClockSkew:
		return nil, fmt.Errorf("the clock skew must be at most %s", MaxClockSkew)
	}
	if o.KeysTTL <= 0 {
		o.KeysTTL = DefaultKeysTTL
	}
	if o.MinRefreshInterval <= 0 {
		o.MinRefreshInterval = DefaultMinRefreshInterval
	}
	if o.MaxTokenBytes <= 0 {
		o.MaxTokenBytes = DefaultMaxTokenBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	client := o.HTTPClient
	if client == nil {
		client = &http.Client{
			Timeout: DefaultHTTPTimeout,
			// Metadata, keys and introspection come from the configured
			// URLs only; a redirect could lead anywhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}

	v := &Verifier{
		issuer:      issuer,
		resource:    resource,
		algs:        algs,
		skew:        o.ClockSkew,
		tenantClaim: o.TenantClaim,
		userClaim:   o.UserClaim,
		check:       o.CheckPrincipal,
		maxToken:    o.MaxTokenBytes,
		now:         o.Now,
		logger:      o.Logger,
	}
	jwksURL := o.JWKSURL
	insecure := o.AllowInsecureHTTP
	v.keys = &keyCache{
		now:        o.Now,
		ttl:        o.KeysTTL,
		minRefresh: o.MinRefreshInterval,
		retry:      min(DefaultFetchRetry, o.MinRefreshInterval),
		fetch: func(ctx context.Context) ([]verifyKey, error) {
			u := jwksURL
			if u == "" {
				md, err := discover(ctx, client, issuer)
				if err != nil {
					return nil, err
				}
				if err := checkURL("jwks_uri", md.JWKSURI, insecure, false); err != nil {
					return nil, err
				}
				u = md.JWKSURI
			}
			body, err := getJSON(ctx, client, u, maxJWKSBytes)
			if err != nil {
				return nil, fmt.Errorf("fetch JWKS: %w", err)
			}
			keys, err := parseKeys(body)
			if err != nil {
				return nil, fmt.Errorf("JWKS at %s: %w", redact(u), err)
			}
			v.logger.Info("fetched issuer keys", "jwks_uri", redact(u), "keys", len(keys))
			return keys, nil
		},
	}
	if in := o.Introspection; in != nil {
		if in.URL == "" {
			return nil, errors.New("the introspection URL is required")
		}
		if err := checkURL("introspection URL", in.URL, o.AllowInsecureHTTP, false); err != nil {
			return nil, err
		}
		v.introspect = newIntrospector(*in, client, o.Now)
	}
	return v, nil
}

// allowedAlgorithms validates a configured algorithm list.
func allowedAlgorithms(names []string) ([]string, error) {
	if len(names) == 0 {
		return slices.Clone(DefaultAlgorithms), nil
	}
	var algs []string
	for _, n := range names {
		if !slices.Contains(DefaultAlgorithms, n) {
			return nil, fmt.Errorf("signature algorithm %q is not accepted; choose from %s", n, strings.Join(DefaultAlgorithms, ", "))
		}
		algs = append(algs, n)
	}
	return algs, nil
}

// Issuer returns the issuer tokens must come from.
func (v *Verifier) Issuer() string { return v.issuer }

// Resource returns the resource tokens must be meant for.
func (v *Verifier) Resource() string { return v.resource }

// TenantClaim returns the configured tenant claim, or "".
func (v *Verifier) TenantClaim() string { return v.tenantClaim }

// UserClaim returns the configured user claim, or "" for "sub".
func (v *Verifier) UserClaim() string { return v.userClaim }

// ClockSkew returns the tolerance applied to time claims.
func (v *Verifier) ClockSkew() time.Duration { return v.skew }

// Ready fetches the issuer's keys if none are held yet and reports whether
// tokens can be verified now.
func (v *Verifier) Ready(ctx context.Context) error {
	return v.keys.ready(ctx)
}

// Verify checks token and returns its principal. Every refusal is an
// *[Error]; its Kind says whether the token is bad (401) or could not be
// checked (503).
//
// The checks, in order: size and compact form; the protected header
// (strict JSON, "typ" at+jwt, "alg" in the allowlist, no "crit", no nested
// token); the form of the claims set (strict JSON; "exp", "nbf" and "iat"
// JSON numbers; "scope" scope tokens separated by single spaces, see
// [ParseScope]); the key (by "kid" from the issuer's keys, of the
// algorithm's type); the signature; the claims ("iss" equal to the issuer;
// "aud" naming the resource under [SameResource]; "exp", "iss", "aud" and
// "sub" present; "exp", "nbf" and "iat" within the clock skew; the tenant
// and user claims when configured); [Options.CheckPrincipal] when set;
// and last, when configured, introspection.
func (v *Verifier) Verify(ctx context.Context, token string) (*Principal, error) {
	p, err := v.verify(ctx, token)
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (v *Verifier) verify(ctx context.Context, token string) (*Principal, *Error) {
	if len(token) > v.maxToken {
		return nil, invalid(descTooLarge, nil)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 || !isBase64URL(parts[0]) || !isBase64URL(parts[1]) || !isBase64URL(parts[2]) {
		return nil, invalid(descMalformed, nil)
	}

	alg, kid, herr := v.checkHeader(parts[0])
	if herr != nil {
		return nil, herr
	}
	if parts[2] == "" {
		return nil, invalid(descSignature, nil)
	}
	// The claims set must be strict JSON too: with a duplicate claim, the
	// value checked here and the value another reader sees could differ.
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, invalid(descMalformed, err)
	}
	claims, err := schema.Decode(payload, &schema.DecodeOptions{MaxDepth: 16, MaxBytes: v.maxToken})
	if err != nil {
		return nil, invalid(descClaims, err)
	}
	if cerr := checkClaimForms(claims); cerr != nil {
		return nil, cerr
	}

	key, kerr := v.keys.lookup(ctx, kid, alg)
	if kerr != nil {
		if kerr.Kind == KindUnavailable {
			v.logger.Warn("cannot verify tokens: issuer keys unavailable", "error", kerr.cause)
		}
		return nil, kerr
	}
	sigAlg, ok := jwa.LookupSignatureAlgorithm(alg)
	if !ok {
		return nil, invalid(descAlgorithm, nil)
	}

	tok, err := jwt.ParseString(token,
		jwt.WithKey(sigAlg, key.pub),
		jwt.WithValidate(true),
		jwt.WithPedantic(false), // pedantic mode concerns nested tokens, refused above
		jwt.WithStrictStringClaims(true),
		jwt.WithClock(jwt.ClockFunc(v.now)),
		jwt.WithAcceptableSkew(v.skew),
		jwt.WithTruncation(0),
		jwt.WithContext(ctx),
		jwt.WithIssuer(v.issuer),
		jwt.WithValidator(requireClaim(jwt.ExpirationKey)),
		jwt.WithValidator(requireClaim(jwt.IssuerKey)),
		jwt.WithValidator(requireClaim(jwt.AudienceKey)),
		jwt.WithValidator(requireClaim(jwt.SubjectKey)),
		jwt.WithValidator(audienceValidator(v.resource)),
	)
	if err != nil {
		return nil, classify(err)
	}

	p, cerr := v.principal(tok)
	if cerr != nil {
		return nil, cerr
	}
	if v.check != nil {
		if err := v.check(p); err != nil {
			return nil, invalid(strings.NewReplacer(`"`, "", `\`, "").Replace(err.Error()), err)
		}
	}
	if v.introspect != nil {
		if ierr := v.introspect.check(ctx, token, p.Expiry); ierr != nil {
			if ierr.Kind == KindUnavailable {
				v.logger.Warn("cannot verify tokens: introspection unavailable", "error", ierr.cause)
			}
			return nil, ierr
		}
	}
	return p, nil
}

// checkHeader decodes the protected header strictly and applies the header
// rules. It returns the algorithm and key id.
func (v *Verifier) checkHeader(segment string) (alg, kid string, _ *Error) {
	raw, err := base64.RawURLEncoding.DecodeString(segment)
	if err != nil {
		return "", "", invalid(descHeader, err)
	}
	// Duplicate or case-variant members would let two parsers read two
	// different headers; refuse them.
	hv, err := schema.Decode(raw, &schema.DecodeOptions{MaxDepth: 8, CaseFold: true})
	if err != nil {
		return "", "", invalid(descHeader, err)
	}
	h, ok := hv.(map[string]any)
	if !ok {
		return "", "", invalid(descHeader, nil)
	}
	typ, ok := h["typ"].(string)
	if !ok || !isAccessTokenType(typ) {
		return "", "", invalid(descType, nil)
	}
	alg, ok = h["alg"].(string)
	if !ok || !slices.Contains(v.algs, alg) {
		return "", "", invalid(descAlgorithm, nil)
	}
	if _, ok := h["crit"]; ok {
		return "", "", invalid(descCritical, nil)
	}
	if _, ok := h["b64"]; ok {
		return "", "", invalid(descCritical, nil)
	}
	if _, ok := h["cty"]; ok {
		return "", "", invalid(descNested, nil)
	}
	if k, present := h["kid"]; present {
		if kid, ok = k.(string); !ok {
			return "", "", invalid(descHeader, nil)
		}
	}
	return alg, kid, nil
}

// checkClaimForms refuses claims in forms that RFC 7519 and RFC 9068 do
// not define but a lenient reader would take: "exp", "nbf" and "iat" must
// be JSON numbers (a NumericDate; the JWT library also takes a numeric
// string), and "scope" a string of scope tokens separated by single spaces
// ([ParseScope]; splitting on any whitespace would also take tabs and
// newlines).
func checkClaimForms(claims any) *Error {
	obj, ok := claims.(map[string]any)
	if !ok {
		return invalid(descClaims, nil)
	}
	for _, name := range []string{jwt.ExpirationKey, jwt.NotBeforeKey, jwt.IssuedAtKey} {
		if c, present := obj[name]; present {
			if _, ok := c.(json.Number); !ok {
				return invalid(descNumericDate, nil)
			}
		}
	}
	if c, present := obj["scope"]; present {
		s, ok := c.(string)
		if !ok {
			return invalid(descScope, nil)
		}
		if _, ok := ParseScope(s); !ok {
			return invalid(descScope, nil)
		}
	}
	return nil
}

// isAccessTokenType reports whether a "typ" header names an RFC 9068
// access token. Media types compare case-insensitively and the
// "application/" prefix may be omitted (RFC 7515 §4.1.9).
func isAccessTokenType(typ string) bool {
	return strings.EqualFold(typ, "at+jwt") || strings.EqualFold(typ, "application/at+jwt")
}

func isBase64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// principal reads the claims a Principal carries.
func (v *Verifier) principal(tok jwt.Token) (*Principal, *Error) {
	p := &Principal{Issuer: v.issuer}
	p.Subject, _ = tok.Subject()
	p.TokenID, _ = tok.JwtID()
	p.Expiry, _ = tok.Expiration()
	if p.Subject == "" {
		return nil, invalid((&missingClaim{jwt.SubjectKey}).Error(), nil)
	}
	if tok.Has("scope") {
		var scope string
		if err := tok.Get("scope", &scope); err != nil {
			return nil, invalid(descScope, err)
		}
		p.Scopes, _ = ParseScope(scope) // checked by checkClaimForms
	}
	for _, name := range []string{"client_id", "azp"} {
		if !tok.Has(name) {
			continue
		}
		if err := tok.Get(name, &p.ClientID); err != nil {
			return nil, invalid(descClaims, err)
		}
		break
	}
	if v.tenantClaim != "" {
		var tenant string
		if !tok.Has(v.tenantClaim) || tok.Get(v.tenantClaim, &tenant) != nil || tenant == "" {
			return nil, invalid(descTenant, nil)
		}
		p.Tenant = tenant
	}
	p.User = p.Subject
	if v.userClaim != "" && v.userClaim != jwt.SubjectKey {
		var user string
		if !tok.Has(v.userClaim) || tok.Get(v.userClaim, &user) != nil || user == "" {
			return nil, invalid(descUser, nil)
		}
		p.User = user
	}
	return p, nil
}

func requireClaim(name string) jwt.Validator {
	return jwt.ValidatorFunc(func(_ context.Context, t jwt.Token) error {
		if !t.Has(name) {
			return &missingClaim{name}
		}
		return nil
	})
}

func audienceValidator(resource string) jwt.Validator {
	return jwt.ValidatorFunc(func(_ context.Context, t jwt.Token) error {
		aud, _ := t.Audience()
		for _, a := range aud {
			if SameResource(a, resource) {
				return nil
			}
		}
		return errAudience
	})
}

// classify maps a jwx parse or validation error to a refusal.
func classify(err error) *Error {
	var mc *missingClaim
	switch {
	case errors.As(err, &mc):
		return invalid(mc.Error(), err)
	case errors.Is(err, errAudience):
		return invalid(descAudience, err)
	case errors.Is(err, jwt.TokenExpiredError()):
		return invalid(descExpired, err)
	case errors.Is(err, jwt.TokenNotYetValidError()):
		return invalid(descNotYetValid, err)
	case errors.Is(err, jwt.InvalidIssuedAtError()):
		return invalid(descIssuedInFuture, err)
	case errors.Is(err, jwt.InvalidIssuerError()):
		return invalid(descIssuer, err)
	case errors.Is(err, jwt.ValidateError()):
		return invalid(descClaims, err)
	case errors.Is(err, jws.VerifyError()):
		return invalid(descSignature, err)
	default:
		return invalid(descClaims, err)
	}
}
