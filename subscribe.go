package airlock

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/catalog"
	"github.com/airlockhq/airlock/internal/upstream"
	"github.com/airlockhq/airlock/policy"
)

// A ResourceUpdate says that a resource someone subscribed to
// (Host.Subscribe) changed: read it again to see how.
type ResourceUpdate struct {
	Server string `json:"server"`
	URI    string `json:"uri"`
	// Principal is whom the subscription was made for when the server
	// keeps credentials per user (what changed is what that principal
	// sees, and only it should be told); zero when the server's resources
	// are the same for everyone.
	Principal Principal `json:"principal,omitzero"`
}

// subscriptions counts the subscribers of each resource, so that a
// server is asked to watch a resource once per connection, and told to
// stop when the last subscriber goes.
type subscriptions struct {
	mu    sync.Mutex
	count map[subscription]int
}

// A subscription is one resource watched on one connection: the server's
// own (who is zero, or the host's principal for a server that keeps
// credentials per user), or a principal's lane (partition.go).
type subscription struct {
	server, uri string
	who         Principal
}

// methodSubscribe is what a subscription stands under in errors.
const methodSubscribe = "resources/subscribe"

// subscriptionOf is the subscription of rd through snap on srv.
func subscriptionOf(srv *server, snap *Snapshot, uri string) subscription {
	k := subscription{server: srv.cfg.ID, uri: uri}
	if srv.partitioned() {
		k.who = snap.who
	}
	return k
}

// ownWho is the principal of the subscriptions made on s's own
// connection: the host's for a server that keeps credentials per user,
// nobody's otherwise.
func (h *Host) ownWho(s *server) Principal {
	if s.partitioned() {
		return h.Principal()
	}
	return Principal{}
}

// Subscribe asks a resource's server to say when it changes
// (resources/subscribe); each change reaches Options.ResourceUpdated.
// The URI is resolved as a read's is (Read.Server may name the server),
// must be allowed, and policy must not deny reading it. Every Subscribe
// should be undone by an Unsubscribe through a snapshot of the same
// principal.
//
// A server that keeps credentials per user (a remote OAuth server) is
// subscribed on the connection of snap's principal: for a principal other
// than the host's, its lane, which the subscription keeps leased until
// Unsubscribe, and dials again if it breaks; its updates name the
// principal (ResourceUpdate.Principal).
func (h *Host) Subscribe(ctx context.Context, snap *Snapshot, rd Read) *Error {
	srv, e := h.resolveResource(snap, rd)
	if e != nil {
		return e
	}
	d := h.gov.policy.Decide(policy.Request{Kind: policy.KindResource, Resource: rd.URI, Server: srv.cfg.ID,
		Tool: methodRead, RemoteTool: methodRead, Principal: snap.who})
	if d.Verdict == Deny {
		return newError(Denied, srv.cfg.ID, methodRead, nil, "subscription refused: %s", d.Reason)
	}
	key := subscriptionOf(srv, snap, rd.URI)
	// The connection first: dialling a lane must not hold up the word
	// of other subscriptions' updates.
	l, ln, e := h.subscriptionLink(ctx, srv, key.who)
	if e != nil {
		return e
	}
	h.subs.mu.Lock()
	defer h.subs.mu.Unlock()
	if h.subs.count[key] > 0 {
		h.unleaseSubscription(srv, ln) // the first subscription holds one
		h.subs.count[key]++
		return nil
	}
	conn := l.conn
	if caps := conn.Session().InitializeResult().Capabilities; caps == nil || caps.Resources == nil || !caps.Resources.Subscribe {
		h.unleaseSubscription(srv, ln)
		return newError(InvalidArguments, srv.cfg.ID, methodRead, nil, "server %s does not offer resource subscriptions", srv.cfg.ID)
	}
	if err := subscribe(ctx, srv, conn, rd.URI); err != nil {
		h.unleaseSubscription(srv, ln)
		q := &request{srv: srv, tool: &catalog.Tool{Name: methodSubscribe, Server: srv.cfg.ID}, link: l}
		return h.accessError(ctx, q, err)
	}
	if h.subs.count == nil {
		h.subs.count = map[subscription]int{}
	}
	h.subs.count[key] = 1
	if ln != nil {
		h.keepLane(srv, ln)
	}
	return nil
}

// subscriptionLink returns the connection a subscription for who to s's
// resources goes out on: the server's own, or who's lane, which it leases
// (the lane is then returned too; unleaseSubscription gives the lease
// back).
func (h *Host) subscriptionLink(ctx context.Context, s *server, who Principal) (*link, *lane, *Error) {
	if who == (Principal{}) || who == h.Principal() {
		l := s.currentLink()
		if l == nil || l.conn.Fault() != nil {
			return nil, nil, newError(ConnectionError, s.cfg.ID, methodRead, nil, "server %s is not connected", s.cfg.ID)
		}
		return l, nil, nil
	}
	s.leaseLane(who)
	ln := s.laneOf(who)
	l, e := h.linkFor(ctx, route{srv: s, lane: ln}, &catalog.Tool{Name: methodSubscribe, Server: s.cfg.ID})
	if e != nil {
		s.releaseLane(who)
		return nil, nil, e
	}
	return l, ln, nil
}

// unleaseSubscription gives back the lease a subscription took on ln (nil:
// none).
func (h *Host) unleaseSubscription(s *server, ln *lane) {
	if ln != nil {
		s.releaseLane(ln.who)
	}
}

// subscribe sends resources/subscribe on conn. A 2026-07-28 subscription
// is a subscriptions/listen stream that lasts until Unsubscribe (or the
// connection) ends it; the SDK's Subscribe returns once it has recorded
// the stream and sent its request, without waiting for the stream, and
// must have done so before an Unsubscribe comes: one that came first
// would find nothing to end, and the stream would stay open upstream.
func subscribe(ctx context.Context, srv *server, conn *upstream.Conn, uri string) error {
	params := &mcp.SubscribeParams{URI: uri}
	if conn.ProtocolVersion() >= "2026-07-28" {
		return conn.Session().Subscribe(conn.Live(), params)
	}
	ctx, cancel := context.WithTimeout(ctx, srv.cfg.RequestTimeout)
	defer cancel()
	return conn.Session().Subscribe(ctx, params)
}

// resubscribe asks a new connection of s, for who (ownWho for the
// server's own, a lane's principal), to watch what the connection it
// replaced was asked to: a server started again, or a new session, knows
// nothing of it.
func (h *Host) resubscribe(s *server, who Principal, conn *upstream.Conn) {
	// In a goroutine of its own: a lane is dialled again while Subscribe
	// holds the subscriptions' lock.
	// The lock is held while subscribing, so that an Unsubscribe meanwhile
	// comes after, and ends what was subscribed again.
	go func() {
		h.subs.mu.Lock()
		defer h.subs.mu.Unlock()
		for k := range h.subs.count {
			if k.server != s.cfg.ID || k.who != who {
				continue
			}
			if err := subscribe(conn.Live(), s, conn, k.uri); err != nil {
				h.log.Warn("subscribing again on a new connection", "server", s.cfg.ID, "error", err)
			}
		}
	}()
}

// keepLane dials ln again when its connection breaks while subscriptions
// hold it (dialLane subscribes the new one again), with the supervisor's
// backoff, until the lane's last subscription ends or the server's life
// does. Its caller holds the subscriptions' lock.
func (h *Host) keepLane(s *server, ln *lane) {
	if ln.kept {
		return
	}
	ln.kept = true
	s.watchers.Go(func() {
		attempt := 0
		for {
			l := ln.link.Load()
			if l != nil && l.conn.Fault() == nil {
				select {
				case <-s.life.Done():
					return
				case <-l.conn.Broken():
				}
			}
			if !h.stillKept(s, ln) {
				return
			}
			attempt++
			if attempt > maxRestarts {
				h.log.Warn("subscriptions lost: cannot connect again", "server", s.cfg.ID, "tenant", ln.who.Tenant, "user", ln.who.User)
				h.subs.mu.Lock()
				ln.kept = false
				h.subs.mu.Unlock()
				return
			}
			select {
			case <-s.life.Done():
				return
			case <-time.After(backoff(attempt)):
			}
			if _, e := h.dialLane(s.life, route{srv: s, lane: ln}, l, methodSubscribe); e == nil {
				attempt = 0
			}
		}
	})
}

// stillKept reports whether subscriptions still hold ln; when none do, it
// lets keepLane's watcher go.
func (h *Host) stillKept(s *server, ln *lane) bool {
	h.subs.mu.Lock()
	defer h.subs.mu.Unlock()
	for k := range h.subs.count {
		if k.server == s.cfg.ID && k.who == ln.who && s.laneOf(ln.who) == ln {
			return true
		}
	}
	ln.kept = false
	return false
}

// Unsubscribe undoes one Subscribe of the same resource, through a
// snapshot of the same principal.
func (h *Host) Unsubscribe(ctx context.Context, snap *Snapshot, rd Read) *Error {
	srv, e := h.resolveResource(snap, rd)
	if e != nil {
		return e
	}
	key := subscriptionOf(srv, snap, rd.URI)
	h.subs.mu.Lock()
	defer h.subs.mu.Unlock()
	switch n := h.subs.count[key]; {
	case n == 0:
		return nil
	case n > 1:
		h.subs.count[key]--
		return nil
	}
	delete(h.subs.count, key)
	l := srv.currentLink()
	var ln *lane
	if key.who != (Principal{}) && key.who != h.Principal() {
		ln = srv.laneOf(key.who)
		l = nil
		if ln != nil {
			l = ln.link.Load()
		}
	}
	if l != nil && l.conn.Fault() == nil {
		ctx, cancel := context.WithTimeout(ctx, srv.cfg.RequestTimeout)
		defer cancel()
		l.conn.Session().Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: rd.URI}) // the server may stop sending; nothing else to do
	}
	h.unleaseSubscription(srv, ln)
	return nil
}

// resourceUpdated passes on a server's word, on its connection for who
// (ownWho, or a lane's principal), that a resource changed, when someone
// subscribed to it there and it is still allowed.
func (h *Host) resourceUpdated(s *server, who Principal, uri string) {
	h.subs.mu.Lock()
	n := h.subs.count[subscription{s.cfg.ID, uri, who}]
	h.subs.mu.Unlock()
	if n == 0 || !s.cfg.AllowsResource(uri) || h.opts.ResourceUpdated == nil {
		return
	}
	h.opts.ResourceUpdated(ResourceUpdate{Server: s.cfg.ID, URI: uri, Principal: who})
}
