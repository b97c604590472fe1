package airlock

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/airlockhq/airlock/internal/upstream"
)

// Credential partitions of a remote OAuth server: a call goes out on a
// connection that carries the token of the principal it is made for, and
// on no other. The host's own principal uses the server's supervised
// connection (the one its tools were discovered on); a task that acts for
// another tenant or user gets a lane of its own on each of those servers,
// with its own connection and its own max_concurrency slots. Lanes are
// leased by the tasks (and the principals acting through SnapshotFor, and
// the subscriptions, subscribe.go) that use them, so that one ending
// cannot close a connection another still uses; the last lease closes it.

// A lane is one partition's connection to one remote server.
type lane struct {
	who   Principal
	slots chan struct{}

	dialMu sync.Mutex // one dial at a time
	link   atomic.Pointer[link]
	gen    uint64 // connections dialled, under dialMu
	leases int    // tasks and subscriptions using the lane, under server.lanesMu
	kept   bool   // a watcher dials it again for its subscriptions (keepLane), under Host.subs.mu
}

// partitioned reports whether a server keeps one connection per principal:
// a remote server with OAuth. Every other server is shared by all.
func (s *server) partitioned() bool { return s.cfg.Remote() && s.cfg.OAuth != nil }

// leaseLane takes a lease on the lane of who, creating it (unconnected).
func (s *server) leaseLane(who Principal) {
	s.lanesMu.Lock()
	defer s.lanesMu.Unlock()
	if s.lanes == nil {
		s.lanes = map[Principal]*lane{}
	}
	l := s.lanes[who]
	if l == nil {
		l = &lane{who: who, slots: make(chan struct{}, cap(s.slots))}
		s.lanes[who] = l
	}
	l.leases++
}

// releaseLane gives a lease back; the last one closes the lane's
// connection.
func (s *server) releaseLane(who Principal) {
	s.lanesMu.Lock()
	l := s.lanes[who]
	if l == nil {
		s.lanesMu.Unlock()
		return
	}
	l.leases--
	last := l.leases <= 0
	if last {
		delete(s.lanes, who)
	}
	s.lanesMu.Unlock()
	if last {
		l.dialMu.Lock()
		if cur := l.link.Load(); cur != nil {
			cur.conn.Close()
		}
		l.dialMu.Unlock()
	}
}

// laneOf returns the lane of who, or nil.
func (s *server) laneOf(who Principal) *lane {
	s.lanesMu.Lock()
	defer s.lanesMu.Unlock()
	return s.lanes[who]
}

// closeLanes closes every lane (the host is closing).
func (s *server) closeLanes() {
	s.lanesMu.Lock()
	lanes := s.lanes
	s.lanes = nil
	s.lanesMu.Unlock()
	for _, l := range lanes {
		if cur := l.link.Load(); cur != nil {
			cur.conn.Close()
		}
	}
}

// dialLane connects a lane unless another caller already replaced old (the
// connection that broke, or nil for "none yet").
func (h *Host) dialLane(ctx context.Context, rt route, old *link, tool string) (*link, *Error) {
	ln, s := rt.lane, rt.srv
	ln.dialMu.Lock()
	defer ln.dialMu.Unlock()
	if cur := ln.link.Load(); cur != nil && cur != old && cur.conn.Fault() == nil {
		return cur, nil
	}
	if h.life.Err() != nil {
		return nil, newError(Cancelled, s.cfg.ID, tool, h.life.Err(), "the host is closing")
	}
	if s.laneOf(ln.who) != ln {
		return nil, newError(Cancelled, s.cfg.ID, tool, nil, "the task acting for %s/%s was released", ln.who.Tenant, ln.who.User)
	}
	ctx, cancel := dialContext(ctx, s.cfg.StartTimeout())
	defer cancel()
	client, err := h.httpClientFor(&s.cfg, ln.who)
	if err == nil {
		var conn *upstream.Conn
		opts := h.upstreamOptions(s)
		who := ln.who
		opts.OnResourceUpdated = func(uri string) { h.resourceUpdated(s, who, uri) }
		conn, err = upstream.DialHTTP(ctx, &s.cfg, client, opts)
		if err == nil {
			prev := ln.link.Load()
			if prev != nil {
				prev.conn.Close()
			}
			ln.gen++
			next := &link{conn: conn, gen: ln.gen}
			ln.link.Store(next)
			if prev != nil {
				h.resubscribe(s, who, conn)
			}
			return next, nil
		}
	}
	if ae := authError(s.cfg.ID, tool, err); ae != nil {
		return nil, ae
	}
	return nil, newError(ConnectionError, s.cfg.ID, tool, err, "server %s: cannot connect for %s/%s: %v", s.cfg.ID, ln.who.Tenant, ln.who.User, err)
}
