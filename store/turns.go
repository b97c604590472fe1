package store

import (
	"context"
	"time"
)

// Turns counts the calls of agent turns that several processes share:
// limits.max_calls_per_turn for the gateway's clients, whose calls of one
// turn a load balancer may send to different replicas. A backend that
// implements it, besides Store, makes that limit hold across the
// processes that share it; a host checks for it with a type assertion,
// and one whose store does not implement it counts in its own process
// only.
//
// A turn is a key the caller chooses (the host uses a hash of the
// principal and the turn's name, so that no user name is stored). It
// lives until ttl passes without a call: time is the backend's own clock,
// never the caller's, so that replicas whose clocks disagree still agree
// on which turns have expired; the backend drops expired turns.
//
// Implementations are safe for concurrent use by several goroutines and
// by several processes sharing one database.
type Turns interface {
	// CountTurnCall counts one call in the turn key and returns its calls,
	// this one included, when that is at most limit. A turn that already
	// has limit calls counts no more: n is limit+1, and the call is to be
	// refused. Every call, counted or not, makes the turn live ttl from
	// now; an expired turn starts again from zero. Of any number of
	// concurrent callers, in any number of processes, no more than limit
	// are counted in one turn. A limit below 1 or a ttl below a
	// millisecond is an error.
	CountTurnCall(ctx context.Context, key string, limit int, ttl time.Duration) (n int, err error)
}
