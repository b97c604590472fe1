package bearer

import (
	"errors"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Kind classifies why [Verifier.Verify] refused a token.
type Kind int

const (
	// KindInvalidToken: the token is malformed, not signed by the issuer,
	// expired, meant for another resource, revoked, or otherwise unusable.
	// The response is 401 with error="invalid_token".
	KindInvalidToken Kind = iota + 1
	// KindUnavailable: the token could not be checked because the issuer's
	// keys or its introspection endpoint could not be reached. The request
	// is refused (fail closed) with 503; a later retry may succeed.
	KindUnavailable
)

// Error is the error [Verifier.Verify] returns. Its message is the
// description sent to the client in the WWW-Authenticate error_description:
// it names the check that failed and never quotes the token.
type Error struct {
	Kind        Kind
	Description string
	cause       error // for the server's log only
}

// Error returns the client-facing description.
func (e *Error) Error() string { return e.Description }

// Unwrap returns the cause and, for [KindInvalidToken], the SDK's
// [auth.ErrInvalidToken], so that the SDK's middleware maps it to 401.
func (e *Error) Unwrap() []error {
	errs := []error{}
	if e.Kind == KindInvalidToken {
		errs = append(errs, auth.ErrInvalidToken)
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

// Cause returns the underlying error for logging, or nil. It never contains
// the token.
func (e *Error) Cause() error { return e.cause }

func invalid(description string, cause error) *Error {
	return &Error{Kind: KindInvalidToken, Description: description, cause: cause}
}

func unavailable(description string, cause error) *Error {
	return &Error{Kind: KindUnavailable, Description: description, cause: cause}
}

// Descriptions of refusals; they go to clients in error_description, so
// they stay within RFC 6750's character set (no quotes, no backslashes).
const (
	descMalformed      = "token is not a compact JWS"
	descTooLarge       = "token is too large"
	descHeader         = "token header is malformed"
	descType           = "token type must be at+jwt"
	descAlgorithm      = "token signing algorithm is not allowed"
	descCritical       = "token has critical header parameters this server does not understand"
	descNested         = "nested tokens are not accepted"
	descNoKeyID        = "token names no key id and the issuer has several keys"
	descUnknownKey     = "token signing key is not one of the issuer's keys"
	descSignature      = "token signature is invalid"
	descExpired        = "token has expired"
	descNotYetValid    = "token is not yet valid"
	descIssuedInFuture = "token was issued in the future"
	descIssuer         = "token issuer is not accepted"
	descAudience       = "token audience does not include this resource"
	descClaims         = "token claims are malformed"
	descScope          = "token scope claim must be a space-separated string"
	descNumericDate    = "token exp, nbf and iat claims must be numbers"
	descTenant         = "token has no tenant claim"
	descUser           = "token has no user claim"
	descInactive       = "token is not active"
	descKeysDown       = "the issuer's signing keys are unavailable"
	descIntrospectDown = "token introspection is unavailable"
)

// missingClaim reports a required claim that a token lacks.
type missingClaim struct{ name string }

func (e *missingClaim) Error() string { return "token lacks the required claim " + e.name }

var errAudience = errors.New("audience does not include the resource")
