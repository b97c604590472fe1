package audit

import "time"

// SetLinger sets how long writers started from now on wait for more
// events before writing a batch, until the test ends (restore).
func SetLinger(d time.Duration) (restore func()) {
	old := linger
	linger = d
	return func() { linger = old }
}

// FlushAt is how many queued events end the linger.
const FlushAt = flushAt
