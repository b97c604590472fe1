package store

import (
	"context"
	"encoding/json"
	"time"
)

// A ToolList is a server's tools/list as it was last received, kept so that
// a host starting again can show tools before the server has answered.
type ToolList struct {
	// Key names the server and everything that shapes its catalog: its
	// configuration and, for a list the server marked private, the tenant
	// and user it was fetched for.
	Key string
	// Tools is the JSON array of the server's tools, as received.
	Tools json.RawMessage
	// Hash is the SHA-256 of Tools, to tell a changed list at a glance.
	Hash      string
	FetchedAt time.Time
	// ExpiresAt is when the server's ttlMs runs out; zero means the list
	// holds until the server says its tools changed or they differ.
	ExpiresAt time.Time
}

// ToolLists caches tool lists. A host uses it at start and writes it after
// every discovery; it is never the authority on what a server offers.
type ToolLists interface {
	// Get returns the list for key, ErrNotFound when there is none or it
	// has expired by now.
	Get(ctx context.Context, key string, now time.Time) (ToolList, error)
	// Put stores l, replacing any list for l.Key.
	Put(ctx context.Context, l ToolList) error
	// Delete removes the list for key, if any.
	Delete(ctx context.Context, key string) error
}
