package store

import (
	"context"
	"time"
)

// A Session is a 2025-11-25 session of the gateway, as the replicas that
// share a store keep it: what any of them needs to take a request of the
// session that another one opened.
type Session struct {
	ID string // the Mcp-Session-Id the client sends
	// Owner is whom the session belongs to: the user id of the access
	// token that opened it, "" without inbound authentication. A request
	// with another's token is refused.
	Owner string
	// State is the session's state as the MCP SDK keeps it (the client's
	// initialize parameters, its logging level), in JSON.
	State []byte
	// SeenAt is when a request of the session last reached a replica
	// that recorded it; by the backend's clock.
	SeenAt time.Time
}

// Sessions keeps the gateway's 2025-11-25 sessions where every replica
// sharing the store finds them: a request that a load balancer sends to
// another replica than the one that opened its session is taken there.
// A backend that implements it, besides Store, lets sessions move among
// the replicas; the gateway checks for it with a type assertion, and one
// whose store does not implement it keeps its sessions in its own process.
//
// A session lives until it is ended or until it is not seen for idle:
// the backend's clock decides, so that replicas whose clocks disagree
// agree on which sessions have expired.
//
// Implementations are safe for concurrent use by several goroutines and
// by several processes sharing one database.
type Sessions interface {
	// OpenSession records a new session, seen now. An id that is taken is
	// ErrConflict. Sessions not seen for idle may be dropped meanwhile.
	OpenSession(ctx context.Context, s Session, idle time.Duration) error
	// Session returns the session id if it was seen within idle, else
	// ErrNotFound (never opened, ended, or expired).
	Session(ctx context.Context, id string, idle time.Duration) (Session, error)
	// TouchSession records that the session was seen now and, with a
	// state, that its state is now state. A session that has ended or was
	// not seen within idle is ErrNotFound, and stays so.
	TouchSession(ctx context.Context, id string, state []byte, idle time.Duration) error
	// EndSession ends the session id. Ending a session that is not there
	// is not an error.
	EndSession(ctx context.Context, id string) error
}
