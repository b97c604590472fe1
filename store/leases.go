package store

import (
	"context"
	"errors"
	"time"
)

// ErrBusy reports that a key already has as many unexpired leases as its
// limit allows.
var ErrBusy = errors.New("busy")

// A Lease is one place under a key's limit, taken by Leases.Acquire.
type Lease struct {
	ID     string // unique; Release names the lease by it
	Key    string
	Holder string
}

// Leases counts places under limits that several processes share: the
// calls in flight to a server (max_concurrency) or of a tenant, across
// every replica of a host on one database. A backend that implements it,
// besides Store, makes those limits hold across the processes that share
// it; a host checks for it with a type assertion, and one whose store
// does not implement it counts in its own process only.
//
// A lease lives until it is released or its time to live passes without a
// renewal: a process that dies gives its places back within one ttl. Time
// is the backend's own clock, never the caller's, so that replicas whose
// clocks disagree still agree on which leases have expired. A backend
// that can tell a holder's process has ended (PostgreSQL: its connection
// is gone) frees its places at once instead; one that took a live
// holder for dead (it lost the holder's connection) may have given its
// places away, which Renew does not bring back, and Release then reports
// as ErrNotFound.
//
// Implementations are safe for concurrent use by several goroutines and
// by several processes sharing one database.
type Leases interface {
	// Acquire takes a place under key for holder, valid for ttl, if fewer
	// than limit unexpired leases hold key, and returns at once: a key at
	// its limit is ErrBusy, without waiting. Of any number of concurrent
	// callers, in any number of processes, no more than limit hold key at
	// a time. A limit below 1 or a ttl below a millisecond is an error.
	Acquire(ctx context.Context, key string, limit int, holder string, ttl time.Duration) (Lease, error)
	// Release gives the place back at once. A lease that is no longer held
	// (released, or expired and taken by another) is ErrNotFound.
	Release(ctx context.Context, l Lease) error
	// Renew extends every unexpired lease of holder to ttl from now, and
	// returns how many it extended. A lease that has expired stays
	// expired: its place may already be another's. A backend may drop
	// expired leases, and those of ended processes, of any holder
	// meanwhile.
	Renew(ctx context.Context, holder string, ttl time.Duration) (int, error)
}
