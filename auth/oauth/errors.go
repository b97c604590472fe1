package oauth

import (
	"errors"
	"fmt"
	"strings"
)

// Kind classifies an [Error].
type Kind int

const (
	// KindAuthRequired: there is no usable token for the partition; a
	// person must log in (result class auth_required).
	KindAuthRequired Kind = iota + 1
	// KindInsufficientScope: the server wants scopes the token lacks and
	// they could not be obtained (no consent, or consent declined). A
	// person must log in for them (result class auth_required).
	KindInsufficientScope
	// KindRefused: the server's or the authorization server's metadata
	// fails a check (no PKCE S256, a resource or issuer mismatch, an
	// endpoint the egress guard refuses). Logging in again does not help;
	// the operator must look at the server.
	KindRefused
	// KindLogin: an interactive login did not complete (it expired, the
	// person or the authorization server refused, the callback was wrong).
	KindLogin
	// KindUnavailable: the authorization server or the secret store could
	// not be reached or used; a later attempt may succeed.
	KindUnavailable
)

// ErrAuthRequired is matched (errors.Is) by an [Error] of kind
// KindAuthRequired or KindInsufficientScope: a person has to log in.
var ErrAuthRequired = errors.New("authorization required")

// Error is the error of this package's operations. Its message is written
// for the person running Airlock: it says what to do, and never contains a
// token, a code or a secret.
type Error struct {
	Kind   Kind
	Server string
	// Scopes are the scopes the server asked for (KindInsufficientScope).
	Scopes []string
	msg    string
	cause  error
}

func (e *Error) Error() string {
	switch e.Kind {
	case KindAuthRequired:
		return fmt.Sprintf("server %s needs a login (%s): run airlock auth login %s", e.Server, e.msg, e.Server)
	case KindInsufficientScope:
		// A login asks for the configured scopes: those the server wants
		// must be among them first.
		return fmt.Sprintf("server %s needs the scopes %s (%s): add them to the server's scopes: in the configuration, then run airlock auth login %s",
			e.Server, strings.Join(e.Scopes, " "), e.msg, e.Server)
	}
	if e.cause != nil {
		return fmt.Sprintf("server %s: %s: %v", e.Server, e.msg, e.cause)
	}
	return fmt.Sprintf("server %s: %s", e.Server, e.msg)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.cause }

// Is makes errors.Is(err, ErrAuthRequired) true for the kinds that need a
// login.
func (e *Error) Is(target error) bool {
	return target == ErrAuthRequired && (e.Kind == KindAuthRequired || e.Kind == KindInsufficientScope)
}

func authRequired(server, why string) *Error {
	return &Error{Kind: KindAuthRequired, Server: server, msg: why}
}

func refused(server, msg string, cause error) *Error {
	return &Error{Kind: KindRefused, Server: server, msg: msg, cause: cause}
}

func loginFailed(server, msg string, cause error) *Error {
	return &Error{Kind: KindLogin, Server: server, msg: msg, cause: cause}
}

func unavailable(server, msg string, cause error) *Error {
	return &Error{Kind: KindUnavailable, Server: server, msg: msg, cause: cause}
}
