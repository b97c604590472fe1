package airlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
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
		return nil, l.busy(tenant)
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

// busy says that tenant has no place left.
func (l *tenantLimit) busy(tenant string) error {
	return fmt.Errorf("tenant %s already has %d calls in flight (limits.max_concurrent_per_tenant); the call was not sent, try again when one has finished", tenant, l.limit)
}

// enterTenant counts a call of tenant in, in this process and, on a store
// that shares leases, across replicas (cluster), without waiting.
func (h *Host) enterTenant(ctx context.Context, tenant string, shared bool) (func(), error) {
	leave, err := h.tenants.enter(tenant)
	if err != nil || h.tenants.limit <= 0 || !shared || !h.cluster.shared() {
		return leave, err
	}
	release, err := h.cluster.take(ctx, "tenant/"+tenant, h.tenants.limit, "limits.max_concurrent_per_tenant")
	if err != nil {
		leave()
		if errors.Is(err, store.ErrBusy) {
			err = h.tenants.busy(tenant)
		}
		return nil, err
	}
	return func() { release(); leave() }, nil
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

// acquireSlot waits for one of a server's call slots, at most wait,
// counted in queued while it waits. It returns how long it waited and the
// function that gives the slot back.
func acquireSlot(ctx context.Context, slots chan struct{}, queued *atomic.Int64, id string, wait time.Duration) (time.Duration, func(), error) {
	release := func() { <-slots }
	select {
	case slots <- struct{}{}:
		return 0, release, nil
	default:
	}
	queued.Add(1)
	defer queued.Add(-1)
	began := time.Now()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case slots <- struct{}{}:
		return time.Since(began), release, nil
	case <-ctx.Done():
		return time.Since(began), nil, ctx.Err()
	case <-timer.C:
		return time.Since(began), nil, &errBusy{server: id, limit: cap(slots), wait: wait}
	}
}

// acquire waits for one of the route's call slots (max_concurrency, per
// partition), at most queue_timeout in all: one of this process's, then,
// on a store that shares leases, a place among every replica's (cluster).
// It returns how long it waited and the function that gives both back.
func (h *Host) acquire(ctx context.Context, rt route, shared bool) (time.Duration, func(), error) {
	cfg, slots := &rt.srv.cfg, rt.srv.slots
	if rt.lane != nil {
		slots = rt.lane.slots
	}
	wait := cfg.QueueTimeout
	if wait <= 0 {
		wait = config.DefaultQueueTimeout
	}
	began := time.Now()
	waited, releaseSlot, err := acquireSlot(ctx, slots, &rt.srv.queued, cfg.ID, wait)
	key := h.slotKey(rt)
	if err != nil || key == "" || !shared {
		return waited, releaseSlot, err
	}
	releaseLease, err := h.cluster.wait(ctx, key, cap(slots), "max_concurrency of server "+cfg.ID, began.Add(wait), &rt.srv.queued)
	if err != nil {
		releaseSlot()
		if errors.Is(err, store.ErrBusy) {
			err = &errBusy{server: cfg.ID, limit: cap(slots), wait: wait}
		}
		return time.Since(began), nil, err
	}
	return time.Since(began), func() { releaseLease(); releaseSlot() }, nil
}

// slotKey is the lease key of the route's slots across replicas:
// server/ID, and for a partitioned server the partition's principal,
// server/ID/TENANT/USER (the host's own, on the server's own connection).
// It is "" when the slots are this process's only: the store shares no
// leases, or the server is a task's, which runs on one replica.
func (h *Host) slotKey(rt route) string {
	s := rt.srv
	switch {
	case !h.cluster.shared() || s.cfg.TaskScoped():
		return ""
	case !s.partitioned():
		return "server/" + s.cfg.ID
	}
	who := h.Principal()
	if rt.lane != nil {
		who = rt.lane.who
	}
	return "server/" + s.cfg.ID + "/" + who.Tenant + "/" + who.User
}
