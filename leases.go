package airlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock/store"
)

// Limits across replicas. A host whose store shares leases with other
// processes (store.Leases: PostgreSQL) counts every call against the
// limits of all the replicas on that database, besides its own process's:
// a server's max_concurrency (per partition, for a partitioned server) and
// limits.max_concurrent_per_tenant. Each place is a lease in the store,
// held by the host (one random holder id per Host) and renewed by one
// heartbeat every ttl/3. A replica that dies gives its places back as soon
// as the store sees its process gone (PostgreSQL: its connection closed),
// and within one ttl if it only stops renewing (hung, or cut off). A
// host whose connection the store lost while it lives takes its places
// up again at its next renewal: those another replica took meanwhile stay
// lost, and their calls run on without them. Task-scoped servers run in
// one task on one replica, and keep their limit in that process.

// defaultLeaseTTL is how long a lease outlives its host's last renewal.
const defaultLeaseTTL = 15 * time.Second

// leaseTTL is defaultLeaseTTL, which tests shorten (SetLeaseTTL).
var leaseTTL = defaultLeaseTTL

const (
	// A call that finds its key full tries again after leaseRetryFirst,
	// doubling to leaseRetryMax, each pause jittered, until its
	// queue_timeout.
	leaseRetryFirst = 10 * time.Millisecond
	leaseRetryMax   = 100 * time.Millisecond
	// leaseReleaseTimeout bounds giving a lease back, which happens after
	// the call's own context may have ended.
	leaseReleaseTimeout = 5 * time.Second
)

// A cluster is a host's share of the limits of every replica on its
// store. Its zero value (a store that shares nothing) counts nothing.
type cluster struct {
	leases store.Leases // nil: limits are this process's only
	holder string
	ttl    time.Duration
	log    *slog.Logger
	stop   context.CancelFunc // ends the heartbeat
	done   chan struct{}      // closed when the heartbeat has ended
}

// openCluster returns the cluster of a host on st, with its heartbeat
// running when st shares leases.
func openCluster(st store.Store, log *slog.Logger) *cluster {
	leases, ok := st.(store.Leases)
	if !ok {
		return &cluster{}
	}
	c := &cluster{leases: leases, holder: store.NewID("host_"), ttl: leaseTTL, log: log, done: make(chan struct{})}
	var ctx context.Context
	ctx, c.stop = context.WithCancel(context.Background())
	go c.heartbeat(ctx)
	return c
}

// shared reports whether limits are counted across replicas.
func (c *cluster) shared() bool { return c != nil && c.leases != nil }

// heartbeat renews the host's leases every ttl/3 until ctx ends. A
// renewal that fails is logged and tried again at the next beat: two
// more beats fit in a ttl.
func (c *cluster) heartbeat(ctx context.Context) {
	defer close(c.done)
	every(ctx, c.ttl/3, func() bool {
		rctx, cancel := context.WithTimeout(ctx, c.ttl/3)
		_, err := c.leases.Renew(rctx, c.holder, c.ttl)
		cancel()
		if err != nil && ctx.Err() == nil {
			c.log.Warn("cannot renew the host's leases of max_concurrency and max_concurrent_per_tenant places; they expire unless a later renewal succeeds",
				"ttl", c.ttl, "error", err)
		}
		return true
	})
}

// close stops the heartbeat. Leases still held are gone when the store
// closes, or expire within one ttl.
func (c *cluster) close() {
	if c.shared() {
		c.stop()
		<-c.done
	}
}

// take takes one place under key, without waiting: a full key is
// store.ErrBusy, a store that fails an *errUncounted.
func (c *cluster) take(ctx context.Context, key string, limit int, what string) (release func(), err error) {
	l, err := c.leases.Acquire(ctx, key, limit, c.holder, c.ttl)
	switch {
	case err == nil:
		return func() { c.release(l) }, nil
	case errors.Is(err, store.ErrBusy):
		return nil, err
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	return nil, &errUncounted{what: what, err: err}
}

// wait takes one place under key, trying again while the key is full
// until the time until (queue_timeout); the call is counted in queued
// while it waits. It fails as take does.
func (c *cluster) wait(ctx context.Context, key string, limit int, what string, until time.Time, queued *atomic.Int64) (func(), error) {
	pause := leaseRetryFirst
	for try := 0; ; try++ {
		release, err := c.take(ctx, key, limit, what)
		if !errors.Is(err, store.ErrBusy) {
			return release, err
		}
		left := time.Until(until)
		if left <= 0 {
			return nil, err
		}
		if try == 0 {
			queued.Add(1)
			defer queued.Add(-1)
		}
		sleep := min(pause/2+rand.N(pause/2+1), left)
		timer := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
		pause = min(2*pause, leaseRetryMax)
	}
}

// release gives l back. It cannot fail the call, which has ended: a lease
// that cannot be given back frees its place when it expires.
func (c *cluster) release(l store.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), leaseReleaseTimeout)
	defer cancel()
	err := c.leases.Release(ctx, l)
	switch {
	case errors.Is(err, store.ErrNotFound):
		c.log.Warn("a call outlived its lease (the host's renewals failed for longer than the ttl, or the store lost its connection): the limit may have been exceeded across replicas",
			"key", l.Key, "ttl", c.ttl)
	case err != nil:
		c.log.Warn("cannot give back a lease; its place comes free when it expires", "key", l.Key, "ttl", c.ttl, "error", err)
	}
}

// errUncounted: the store that counts a limit across replicas did not
// answer, so the call cannot be counted and is not sent.
type errUncounted struct {
	what string // the limit, as the configuration names it
	err  error
}

func (e *errUncounted) Error() string {
	return fmt.Sprintf("cannot count the call against %s across replicas: the store did not answer; the call was not sent, try again later", e.what)
}

func (e *errUncounted) Unwrap() error { return e.err }
