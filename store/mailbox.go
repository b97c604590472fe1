package store

import (
	"context"
	"time"
)

// A Mailbox passes messages among the processes that share a store that
// are too large for an announcement (store.Announcer): a message is left
// under a box that only its sender and its receiver know, the receiver is
// told by an announcement, and it collects the message once.
//
// A backend that implements it, besides Store, lets the replicas of a
// gateway hand each other a call's rounds (a client's answer to a question
// reaching another replica than the one where its call waits); the
// gateway checks for it with a type assertion.
//
// Implementations are safe for concurrent use by several goroutines and
// by several processes sharing one database.
type Mailbox interface {
	// Post leaves data under box for ttl (by the backend's clock). A box
	// that holds a message already is ErrConflict. Expired messages of
	// any box may be dropped meanwhile.
	Post(ctx context.Context, box string, data []byte, ttl time.Duration) error
	// Collect takes the message left under box, which is then gone; a box
	// with none, or with an expired one, is ErrNotFound.
	Collect(ctx context.Context, box string) ([]byte, error)
}
