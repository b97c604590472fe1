package airlock

import (
	"errors"
	"testing"
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
