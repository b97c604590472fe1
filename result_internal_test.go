package airlock

import (
	"errors"
	"testing"

	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/redact"
)

// A remote session's id, which the SDK quotes in its errors, stays out of
// the message of an Error.
func TestErrorLeavesOutSessionIDs(t *testing.T) {
	cause := errors.New(`calling "tools/call": failed to reconnect (session ID: 4f9a)c-2!x): connection failed after 5 attempts`)
	e := newError(ConnectionError, "web", "web__wait", cause, "web__wait: %v", cause)
	want := `web__wait: calling "tools/call": failed to reconnect: connection failed after 5 attempts`
	if e.Msg != want {
		t.Errorf("Msg = %q, want %q", e.Msg, want)
	}
	if !errors.Is(e, cause) {
		t.Error("the cause is not kept")
	}
}

// So do the other ways errors quote one: a response that named another
// session, and a malformed header line.
func TestErrorLeavesOutQuotedSessionIDs(t *testing.T) {
	for _, tt := range []struct{ cause, want string }{
		{`calling "tools/call": mismatching session IDs "62BOJFMM" and "SECRET\"SID-changed"`, `sf__write: malformed result: calling "tools/call": mismatching session IDs`},
		{`net/http: malformed MIME header line: "Mcp-Session-Id: bad id\x01"`, `sf__write: malformed result: net/http: malformed MIME header line: "Mcp-Session-Id: …"`},
	} {
		cause := errors.New(tt.cause)
		if e := newError(ContractError, "sf", "sf__write", cause, "sf__write: malformed result: %v", cause); e.Msg != tt.want {
			t.Errorf("Msg = %q, want %q", e.Msg, tt.want)
		}
	}
}

// TestShortestRedactedSecret: the configuration warns of the secrets that
// redaction passes over, so both agree on how short that is.
func TestShortestRedactedSecret(t *testing.T) {
	if config.MinRedactedSecret != redact.MinSecretLen {
		t.Errorf("config.MinRedactedSecret = %d, redact.MinSecretLen = %d", config.MinRedactedSecret, redact.MinSecretLen)
	}
}
