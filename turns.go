package airlock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/airlockhq/airlock/policy"
	"github.com/airlockhq/airlock/store"
)

// Named turns. A caller that cannot hold one BeginTurn snapshot through
// the calls of a turn (the gateway, whose clients' calls of one turn may
// reach different replicas) names the turn in each call instead
// (Call.Turn). The calls that name the same turn for the same principal
// count together against limits.max_calls_per_turn: in the store, when it
// counts turns for every replica on it (store.Turns: PostgreSQL), else in
// this process. A turn is forgotten namedTurnIdle after its last call.
// Calls that name no turn, and have no BeginTurn snapshot, are counted in
// no turn.

const (
	// namedTurnIdle is how long a named turn is remembered after its last
	// call, counted or refused.
	namedTurnIdle = time.Hour
	// maxLocalTurns bounds the turns a process counts by itself; beyond
	// it, the one called least recently is forgotten.
	maxLocalTurns = 10000
)

// namedTurns counts the calls of named turns.
type namedTurns struct {
	shared store.Turns // nil: turns are this process's only

	mu    sync.Mutex
	local map[string]*localTurn // by turnKey
}

// A localTurn is a named turn this process counts.
type localTurn struct {
	calls int
	last  time.Time // its last call
}

// openNamedTurns counts named turns in st when st counts turns.
func openNamedTurns(st store.Store) *namedTurns {
	shared, _ := st.(store.Turns)
	return &namedTurns{shared: shared, local: map[string]*localTurn{}}
}

// turnKey is the key of the turn name of who: a hash, so that the store
// holds no user name in the clear.
func turnKey(who Principal, name string) string {
	sum := sha256.Sum256([]byte(who.Tenant + "\x00" + who.User + "\x00" + name))
	return hex.EncodeToString(sum[:])
}

// countNamedTurn counts q in the turn it names. A call beyond
// limits.max_calls_per_turn is denied before anything is sent. One that
// the store cannot count is denied too, unless it is a read: a read is
// counted in this process's turns until the store answers, as room lets
// reads run within one replica's limits. A result means q ends there.
func (h *Host) countNamedTurn(ctx context.Context, q *request) *Result {
	limit, name := h.cfg.Limits.MaxCallsPerTurn, q.call.Name
	key := turnKey(q.snap.who, q.call.Turn)
	n, err := h.turns.count(ctx, key, limit, true)
	if errors.As(err, new(*errUncounted)) && h.reads(q) && ctx.Err() == nil {
		h.uncounted.Do(func() {
			h.log.Warn("the store cannot count the calls of turns across replicas: reads are counted in this replica's turns until it answers", "error", err)
		})
		n, err = h.turns.count(ctx, key, limit, false)
	}
	switch {
	case err == nil && n <= limit:
		return nil
	case err == nil:
		return q.r.fail(newError(Denied, "", name, nil,
			"refused: turn %q already made %d calls (limits.max_calls_per_turn); end the turn, and name the next turn anew", q.call.Turn, limit))
	case ctx.Err() != nil:
		return q.r.fail(newError(Cancelled, "", name, err, "%s: cancelled while counting its turn", name))
	}
	return q.r.fail(newError(Denied, "", name, err, "%s refused: %v", name, err))
}

// reads reports whether q's tool only reads, as policy classifies it: what
// countNamedTurn may count in this process when the store does not answer.
func (h *Host) reads(q *request) bool {
	tool, ok := q.snap.snap.Lookup(q.call.Name)
	if !ok {
		return false
	}
	effect, _ := h.gov.policy.Classify(tool.Server, tool.Remote)
	return effect == policy.Read
}

// count counts one call in the turn key and returns the turn's calls, this
// one included, or limit+1 when it already has limit calls: in the store
// when shared and the store counts turns (a store that fails is an
// *errUncounted), else in this process.
func (t *namedTurns) count(ctx context.Context, key string, limit int, shared bool) (int, error) {
	if !shared || t.shared == nil {
		return t.countLocal(key, limit, time.Now()), nil
	}
	n, err := t.shared.CountTurnCall(ctx, key, limit, namedTurnIdle)
	switch {
	case err == nil:
		return n, nil
	case ctx.Err() != nil:
		return 0, ctx.Err()
	}
	return 0, &errUncounted{what: "limits.max_calls_per_turn", err: err}
}

// countLocal is count in this process, at now.
func (t *namedTurns) countLocal(key string, limit int, now time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.local[key]
	if e == nil || now.Sub(e.last) >= namedTurnIdle {
		if e == nil && len(t.local) >= maxLocalTurns {
			t.forget(now)
		}
		e = &localTurn{}
		t.local[key] = e
	}
	e.last = now
	if e.calls >= limit {
		return limit + 1
	}
	e.calls++
	return e.calls
}

// forget drops the turns idle for namedTurnIdle at now and, when none
// is, the one called least recently. t.mu is held.
func (t *namedTurns) forget(now time.Time) {
	var oldest string
	for k, e := range t.local {
		switch {
		case now.Sub(e.last) >= namedTurnIdle:
			delete(t.local, k)
		case oldest == "" || e.last.Before(t.local[oldest].last):
			oldest = k
		}
	}
	if len(t.local) >= maxLocalTurns {
		delete(t.local, oldest)
	}
}
