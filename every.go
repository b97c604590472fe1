package airlock

import (
	"context"
	"time"
)

// every calls f every d until ctx ends or f returns false: the loop of the
// host's watchers (a started call's job, the leases' heartbeat, a
// server's health checks), which each stop with the context that owns
// them.
func every(ctx context.Context, d time.Duration, f func() bool) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !f() {
			return
		}
	}
}
