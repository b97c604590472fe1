package console

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/store"
)

// consoleSessions keeps the signed-in people's sessions, by the value of
// their cookie: in the store, when it keeps sessions for replicas
// (store.Sessions: PostgreSQL), so that any replica of a gateway takes a
// session another one opened and a sign-out ends it on all of them; in
// this process otherwise. A session ends when it is signed out, when it
// has not been used for idle, or ttl after the sign-in.
type consoleSessions struct {
	shared    store.Sessions // nil: in this process
	idle, ttl time.Duration

	mu    sync.Mutex
	local map[string]localSession
}

type localSession struct {
	actor           airlock.Actor
	expires, usedAt time.Time
}

// ended reports whether the session is over at now: past its ttl, or
// unused for idle.
func (se localSession) ended(now time.Time, idle time.Duration) bool {
	return now.After(se.expires) || now.Sub(se.usedAt) > idle
}

// sessionRecord is a session as the store keeps it (store.Session.State).
type sessionRecord struct {
	Tenant   string    `json:"tenant"`
	User     string    `json:"user"`
	Operator bool      `json:"operator"`
	Expires  time.Time `json:"expires"`
}

// sessionOwner marks the console's sessions in the store: no access token
// names it, so the gateway never takes an MCP request on one.
const sessionOwner = "airlock console"

// maxSessions bounds the sessions one process keeps.
const maxSessions = 10000

func newConsoleSessions(st store.Store, idle, ttl time.Duration) *consoleSessions {
	s := &consoleSessions{idle: idle, ttl: ttl, local: map[string]localSession{}}
	s.shared, _ = st.(store.Sessions)
	return s
}

func storeID(id string) string { return "console." + id }

// open records a new session id for as. It reports false when this
// process holds as many as it may.
func (s *consoleSessions) open(ctx context.Context, id string, as airlock.Actor) (bool, error) {
	now := time.Now()
	if s.shared != nil {
		state, _ := json.Marshal(sessionRecord{Tenant: as.Principal.Tenant, User: as.Principal.User,
			Operator: as.AllPrincipals, Expires: now.Add(s.ttl)})
		return true, s.shared.OpenSession(ctx, store.Session{ID: storeID(id), Owner: sessionOwner, State: state}, s.idle)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, se := range s.local {
		if se.ended(now, s.idle) {
			delete(s.local, k)
		}
	}
	if len(s.local) >= maxSessions {
		return false, nil
	}
	s.local[id] = localSession{actor: as, expires: now.Add(s.ttl), usedAt: now}
	return true, nil
}

// use returns whom the session id acts for, and records that it was used
// now; false: no such session, or it has ended.
func (s *consoleSessions) use(ctx context.Context, id string) (airlock.Actor, bool) {
	now := time.Now()
	if s.shared != nil {
		got, err := s.shared.Session(ctx, storeID(id), s.idle)
		var rec sessionRecord
		if err != nil || got.Owner != sessionOwner || json.Unmarshal(got.State, &rec) != nil {
			return airlock.Actor{}, false
		}
		if now.After(rec.Expires) {
			s.shared.EndSession(ctx, storeID(id))
			return airlock.Actor{}, false
		}
		if s.shared.TouchSession(ctx, storeID(id), nil, s.idle) != nil {
			return airlock.Actor{}, false
		}
		return airlock.Actor{Principal: airlock.Principal{Tenant: rec.Tenant, User: rec.User}, By: rec.User,
			AllPrincipals: rec.Operator, Source: "console"}, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.local[id]
	if !ok {
		return airlock.Actor{}, false
	}
	if se.ended(now, s.idle) {
		delete(s.local, id)
		return airlock.Actor{}, false
	}
	se.usedAt = now
	s.local[id] = se
	return se.actor, true
}

// end ends the session id, everywhere it is kept.
func (s *consoleSessions) end(ctx context.Context, id string) error {
	if s.shared != nil {
		return s.shared.EndSession(ctx, storeID(id))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.local, id)
	return nil
}
