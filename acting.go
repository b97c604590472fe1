package airlock

import (
	"fmt"
	"sync"
	"time"

	"github.com/airlockhq/airlock/config"
)

// A host acts for its own principal, and a task for the principal it was
// opened for. A caller that serves several people at once (the gateway,
// each of whose requests carries its own caller) asks for the host's
// catalog as one principal sees it (SnapshotFor): that snapshot's calls
// are made for the principal, so policy, approvals, the journal, the audit
// trail and the tenant cap see it, and they reach each OAuth server on the
// principal's own lane (partition.go), with the principal's own token. A
// principal's lanes are leased while its calls use them, and for laneIdle
// after the last one, so that its next call finds its connections open;
// then they are given back. The host's closing gives back the rest.

// laneIdle is how long a principal's lanes stay leased after the last
// caller released them.
var laneIdle = 5 * time.Minute

// acting holds the leases of the principals the host acts for through
// SnapshotFor.
type acting struct {
	mu     sync.Mutex
	by     map[Principal]*actor
	closed bool // the host is closing: nothing more is leased
}

// An actor is one principal's hold on its lanes.
type actor struct {
	users int         // callers holding the snapshot
	idle  *time.Timer // gives the lanes back; nil while in use
	gen   uint64      // which timer is the current one
}

// SnapshotFor returns snap as p sees it: the same catalog, whose calls are
// made for p. Empty fields of p are the host's principal's; a name that
// tenancy: would refuse is an error. snap must be the host's, not a task's
// (a task acts for its own principal).
//
// Until release is called, p's lanes to the host's OAuth servers stay
// leased, so a call made with the snapshot reaches them; call release once
// the calls made with it have ended. For the host's own principal the
// snapshot is snap itself.
func (h *Host) SnapshotFor(snap *Snapshot, p Principal) (s *Snapshot, release func(), err error) {
	if snap.task != nil {
		return nil, nil, fmt.Errorf("SnapshotFor: the snapshot is task %s's, which acts for the task's principal", snap.task.info.ID)
	}
	own := h.Principal()
	if p.Tenant == "" {
		p.Tenant = own.Tenant
	}
	if p.User == "" {
		p.User = own.User
	}
	for _, f := range []struct{ what, name string }{{"tenant", p.Tenant}, {"user", p.User}} {
		if err := config.CheckPrincipal(f.what, f.name); err != nil {
			return nil, nil, fmt.Errorf("SnapshotFor: %w", err)
		}
	}
	if p == snap.who {
		return snap, func() {}, nil
	}
	c := *snap
	c.who = p
	if p == own {
		return &c, func() {}, nil
	}
	return &c, h.acting.lease(h, p), nil
}

// lease takes a hold on p's lanes, leasing them on every partitioned
// server of the host if p has none yet, and returns its release.
func (a *acting) lease(h *Host, p Principal) func() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || h.life.Err() != nil {
		// Calls are refused from now on anyway.
		return func() {}
	}
	if a.by == nil {
		a.by = map[Principal]*actor{}
	}
	act := a.by[p]
	if act == nil {
		act = &actor{}
		a.by[p] = act
		for _, s := range h.servers {
			if s.partitioned() {
				s.leaseLane(p)
			}
		}
	}
	if act.idle != nil {
		act.idle.Stop()
		act.idle = nil
	}
	act.users++
	var once sync.Once
	return func() { once.Do(func() { a.unlease(h, p, act) }) }
}

// unlease gives back one hold; the last starts the idle timer.
func (a *acting) unlease(h *Host, p Principal, act *actor) {
	a.mu.Lock()
	defer a.mu.Unlock()
	act.users--
	if act.users > 0 || a.closed {
		return
	}
	act.gen++
	gen := act.gen
	act.idle = time.AfterFunc(laneIdle, func() { a.expire(h, p, act, gen) })
}

// expire gives p's lanes back, unless p was leased again meanwhile.
func (a *acting) expire(h *Host, p Principal, act *actor, gen uint64) {
	a.mu.Lock()
	if a.closed || a.by[p] != act || act.users > 0 || act.gen != gen {
		a.mu.Unlock()
		return
	}
	delete(a.by, p)
	a.mu.Unlock()
	h.releaseLanes(p)
}

// close gives back every principal's lanes: the host is closing (Close).
func (a *acting) close(h *Host) {
	a.mu.Lock()
	a.closed = true
	held := a.by
	a.by = nil
	for _, act := range held {
		if act.idle != nil {
			act.idle.Stop()
		}
	}
	a.mu.Unlock()
	for p := range held {
		h.releaseLanes(p)
	}
}

// releaseLanes gives back one lease of p's lane on every partitioned
// server of the host.
func (h *Host) releaseLanes(p Principal) {
	for _, s := range h.servers {
		if s.partitioned() {
			s.releaseLane(p)
		}
	}
}
