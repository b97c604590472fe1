package testenv

import (
	"testing"
	"time"
)

// Returns runs wait, which waits for something the test started, and fails
// the test if it has not returned within 10 s: what is then said not to
// have happened.
func Returns(t testing.TB, what string, wait func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not within 10 s", what)
	}
}
