package airlock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock/config"
)

// tenantLimit bounds the calls in flight per tenant
// (limits.max_concurrent_per_tenant): one tenant cannot take every slot of
// a shared host.
type tenantLimit struct {
	limit    int
	mu       sync.Mutex
	inflight map[string]int
}

// enter counts a call of tenant in, or says why it may not run now: the
// tenant is at its limit, which the call does not wait for (it is busy).
func (l *tenantLimit) enter(tenant string) (leave func(), err error) {
	if l.limit <= 0 {
		return func() {}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inflight[tenant] >= l.limit {
		return nil, fmt.Errorf("tenant %s already has %d calls in flight (limits.max_concurrent_per_tenant); the call was not sent, try again when one has finished", tenant, l.limit)
	}
	if l.inflight == nil {
		l.inflight = map[string]int{}
	}
	l.inflight[tenant]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.inflight[tenant]--; l.inflight[tenant] == 0 {
			delete(l.inflight, tenant)
		}
	}, nil
}

// usage reports the calls holding a tenant's place, all tenants together,
// and how many tenants have no place left.
func (l *tenantLimit) usage() (inflight, atLimit int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.inflight {
		inflight += n
		if n >= l.limit {
			atLimit++
		}
	}
	return inflight, atLimit
}

// errBusy: no slot for the call within queue_timeout.
type errBusy struct {
	server string
	limit  int
	wait   time.Duration
}

func (e *errBusy) Error() string {
	return fmt.Sprintf("server %s is busy: %d calls in flight (max_concurrency), none finished within %s (queue_timeout); the call was not sent, try again later",
		e.server, e.limit, e.wait)
}

// acquireSlot waits for one of a server's call slots, at most its
// queue_timeout, counted in queued while it waits. It returns how long it
// waited and the function that gives the slot back.
func acquireSlot(ctx context.Context, slots chan struct{}, queued *atomic.Int64, cfg *config.Server) (time.Duration, func(), error) {
	release := func() { <-slots }
	select {
	case slots <- struct{}{}:
		return 0, release, nil
	default:
	}
	queued.Add(1)
	defer queued.Add(-1)
	began := time.Now()
	wait := cfg.QueueTimeout
	if wait <= 0 {
		wait = config.DefaultQueueTimeout
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case slots <- struct{}{}:
		return time.Since(began), release, nil
	case <-ctx.Done():
		return time.Since(began), nil, ctx.Err()
	case <-timer.C:
		return time.Since(began), nil, &errBusy{server: cfg.ID, limit: cap(slots), wait: wait}
	}
}

// acquire waits for one of the route's call slots (max_concurrency, per
// partition), at most queue_timeout.
func (rt route) acquire(ctx context.Context) (time.Duration, func(), error) {
	if rt.lane == nil {
		return acquireSlot(ctx, rt.srv.slots, &rt.srv.queued, &rt.srv.cfg)
	}
	return acquireSlot(ctx, rt.lane.slots, &rt.srv.queued, &rt.srv.cfg)
}
