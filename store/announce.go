package store

import "context"

// An Announcer lets the processes that share a store (replicas of a host
// on one database) tell one another that something changed that each of
// them must look at again: a login to a server, a server's catalog. A
// backend that implements it delivers each Announce to the Watch of every
// process sharing the store, its own included, soon, and at most once;
// a Watch that lost its way to the store may miss some, and is told so
// when it is back (missed). The store.Store of one host alone need not
// implement it.
type Announcer interface {
	// Announce tells every watcher of topic. A payload is at most a few
	// hundred bytes, and never holds a secret.
	Announce(ctx context.Context, topic, payload string) error
	// Watch calls heard with the payload of each announcement on topic,
	// one at a time, and missed when announcements may have been lost (the
	// connection to the store broke and was made again), until ctx ends.
	Watch(ctx context.Context, topic string, heard func(payload string), missed func())
}
