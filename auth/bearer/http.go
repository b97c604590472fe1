package bearer

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// MiddlewareOptions configures [Verifier.Middleware]. A nil
// *MiddlewareOptions gives the defaults.
type MiddlewareOptions struct {
	// ResourceMetadataURL is sent as resource_metadata in challenges.
	// Empty means [MetadataURL] of the verifier's resource.
	ResourceMetadataURL string

	// Scopes are sent as scope in 401 challenges: what a client should ask
	// the authorization server for to use this resource. Empty sends no
	// scope parameter.
	Scopes []string

	// Required are scopes every request must hold: a token that lacks one
	// gets 403 with error="insufficient_scope" naming the ones it lacks
	// ([Challenge.WriteInsufficientScope]). Empty requires none; scopes
	// that depend on the operation are the handler's to check.
	Required []string
}

// Middleware returns middleware that lets a request through only with a
// valid bearer token in its Authorization header.
//
// A request without a token gets 401 with
// `WWW-Authenticate: Bearer resource_metadata="…", scope="…"`; a request
// whose token is refused gets the same plus error="invalid_token" and an
// error_description; a request with a malformed Authorization header
// (several headers, an empty token) gets 400 error="invalid_request"; a
// token that cannot be checked because the issuer is unreachable gets 503;
// a token without one of the Required scopes gets 403
// error="insufficient_scope".
// Tokens in the query string or the body are ignored (RFC 6750 allows them;
// this server does not accept them).
//
// An accepted request continues with its [Principal] in the context
// ([PrincipalFrom]) and, through the SDK's [auth.RequireBearerToken], with
// the SDK's [auth.TokenInfo] (so that the SDK binds stateful sessions to
// the principal), and without its Authorization header, so that nothing
// downstream can forward the caller's token.
func (v *Verifier) Middleware(opts *MiddlewareOptions) func(http.Handler) http.Handler {
	var o MiddlewareOptions
	if opts != nil {
		o = *opts
	}
	if o.ResourceMetadataURL == "" {
		// The resource was checked to be an absolute URL in NewVerifier.
		o.ResourceMetadataURL, _ = MetadataURL(v.resource)
	}
	challenge := Challenge{ResourceMetadata: o.ResourceMetadataURL, Scopes: o.Scopes}
	return func(next http.Handler) http.Handler {
		stripped := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header = r.Header.Clone()
			r.Header.Del("Authorization")
			next.ServeHTTP(w, r)
		})
		// The SDK's middleware puts TokenInfo where the SDK's handlers look
		// for it; it gets the principal verified below, not the raw token.
		sdk := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
			p := PrincipalFrom(ctx)
			if p == nil {
				return nil, auth.ErrInvalidToken
			}
			return p.TokenInfo(), nil
		}, &auth.RequireBearerTokenOptions{
			ResourceMetadataURL: o.ResourceMetadataURL,
			Scopes:              nil, // per-operation scopes are the handler's decision
			ClockSkew:           v.skew,
		})(stripped)

		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token, problem := bearerToken(r)
			switch {
			case problem != "":
				challenge.write(w, http.StatusBadRequest, "invalid_request", problem)
				return
			case token == "":
				challenge.write(w, http.StatusUnauthorized, "", "")
				return
			}
			p, err := v.Verify(r.Context(), token)
			if err != nil {
				var e *Error
				if errors.As(err, &e) && e.Kind == KindUnavailable {
					w.Header().Set("Retry-After", "5")
					http.Error(w, e.Description, http.StatusServiceUnavailable)
					return
				}
				v.logger.Info("token refused", "reason", err.Error(), "remote", r.RemoteAddr, "path", r.URL.Path)
				challenge.write(w, http.StatusUnauthorized, "invalid_token", err.Error())
				return
			}
			if missing := slices.DeleteFunc(slices.Clone(o.Required), p.HasScope); len(missing) > 0 {
				v.logger.Info("token lacks a required scope", "missing", strings.Join(missing, " "), "remote", r.RemoteAddr, "path", r.URL.Path)
				challenge.WriteInsufficientScope(w, missing, "the token lacks the scope "+strings.Join(missing, " "), "", nil)
				return
			}
			sdk.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
		})
	}
}

// bearerToken returns the token of a request's Authorization header, "" if
// there is none (or it is not a Bearer credential), or a problem for a
// malformed header.
func bearerToken(r *http.Request) (token, problem string) {
	values := r.Header.Values("Authorization")
	switch len(values) {
	case 0:
		return "", ""
	case 1:
	default:
		return "", "send one Authorization header"
	}
	scheme, rest, _ := strings.Cut(values[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", ""
	}
	token = strings.TrimSpace(rest)
	if token == "" || strings.ContainsAny(token, " \t") {
		return "", "the Bearer credential must be one token"
	}
	return token, ""
}

// Challenge builds RFC 6750 WWW-Authenticate challenges for one resource.
type Challenge struct {
	// ResourceMetadata is the RFC 9728 metadata URL.
	ResourceMetadata string
	// Scopes go into the scope parameter of 401 challenges.
	Scopes []string
}

// Header returns a Bearer challenge. errCode ("invalid_token",
// "insufficient_scope", "invalid_request") and description are left out
// when empty; scopes, when given, replace c.Scopes.
func (c Challenge) Header(errCode, description string, scopes []string) string {
	if scopes == nil {
		scopes = c.Scopes
	}
	var params []string
	if c.ResourceMetadata != "" {
		params = append(params, "resource_metadata="+quote(c.ResourceMetadata))
	}
	if len(scopes) > 0 {
		params = append(params, "scope="+quote(strings.Join(scopes, " ")))
	}
	if errCode != "" {
		params = append(params, "error="+quote(errCode))
	}
	if description != "" {
		params = append(params, "error_description="+quote(description))
	}
	if len(params) == 0 {
		return "Bearer"
	}
	return "Bearer " + strings.Join(params, ", ")
}

func (c Challenge) write(w http.ResponseWriter, status int, errCode, description string) {
	w.Header().Set("WWW-Authenticate", c.Header(errCode, description, nil))
	msg := description
	if msg == "" {
		msg = "a bearer token is required"
	}
	http.Error(w, msg, status)
}

// WriteInsufficientScope answers 403 with
// `WWW-Authenticate: Bearer resource_metadata="…", scope="…",
// error="insufficient_scope"` naming the scopes the operation needs, so
// that a client can ask for them (step-up authorization). body, if not
// empty, is written as the response with contentType; otherwise a plain
// text description is.
func (c Challenge) WriteInsufficientScope(w http.ResponseWriter, scopes []string, description, contentType string, body []byte) {
	if description == "" {
		description = "the token lacks a scope this operation needs"
	}
	w.Header().Set("WWW-Authenticate", c.Header("insufficient_scope", description, scopes))
	if len(body) == 0 {
		http.Error(w, description, http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusForbidden)
	w.Write(body)
}

// quote makes an RFC 9110 quoted-string.
func quote(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `"`, `\"`)
	return `"` + s + `"`
}

// Metadata returns the RFC 9728 protected resource metadata for the
// verifier's resource: the resource, its issuer as the one authorization
// server, the scopes, and header-only bearer tokens. Serve it with the
// SDK's [auth.ProtectedResourceMetadataHandler].
func (v *Verifier) Metadata(name string, scopes []string) *oauthex.ProtectedResourceMetadata {
	return &oauthex.ProtectedResourceMetadata{
		Resource:               v.resource,
		AuthorizationServers:   []string{v.issuer},
		ScopesSupported:        scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           name,
	}
}

// TokenVerifier adapts the verifier to the SDK's [auth.TokenVerifier], for
// use with [auth.RequireBearerToken] directly. Refused tokens wrap
// [auth.ErrInvalidToken]. Prefer [Verifier.Middleware], which also writes
// error="invalid_token" and hides the Authorization header downstream.
func (v *Verifier) TokenVerifier() auth.TokenVerifier {
	return func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		p, err := v.Verify(ctx, token)
		if err != nil {
			return nil, err
		}
		return p.TokenInfo(), nil
	}
}
