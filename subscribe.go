package airlock

import (
	"context"
	"sync"

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
}

// subscriptions counts the subscribers of each resource, so that a
// server is asked to watch a resource once, and told to stop when the
// last subscriber goes.
type subscriptions struct {
	mu    sync.Mutex
	count map[subscription]int
}

type subscription struct{ server, uri string }

// Subscribe asks a resource's server to say when it changes
// (resources/subscribe); each change reaches Options.ResourceUpdated.
// The URI is resolved as a read's is (Read.Server may name the server),
// must be allowed, and policy must not deny reading it. Every Subscribe
// should be undone by an Unsubscribe.
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
	if srv.partitioned() && snap.who != h.Principal() {
		// Its connection for that principal is leased for a while; a
		// subscription would outlive it.
		return newError(InvalidArguments, srv.cfg.ID, methodRead, nil,
			"server %s keeps credentials per user; subscriptions to its resources are made only for %s/%s, the host's own principal",
			srv.cfg.ID, h.Principal().Tenant, h.Principal().User)
	}
	conn := srv.current()
	if conn == nil || conn.Fault() != nil {
		return newError(ConnectionError, srv.cfg.ID, methodRead, nil, "server %s is not connected", srv.cfg.ID)
	}
	if caps := conn.Session().InitializeResult().Capabilities; caps == nil || caps.Resources == nil || !caps.Resources.Subscribe {
		return newError(InvalidArguments, srv.cfg.ID, methodRead, nil, "server %s does not offer resource subscriptions", srv.cfg.ID)
	}
	key := subscription{srv.cfg.ID, rd.URI}
	h.subs.mu.Lock()
	defer h.subs.mu.Unlock()
	if h.subs.count == nil {
		h.subs.count = map[subscription]int{}
	}
	if h.subs.count[key] > 0 {
		h.subs.count[key]++
		return nil
	}
	if err := subscribe(ctx, srv, conn, rd.URI); err != nil {
		q := &request{srv: srv, tool: &catalog.Tool{Name: "resources/subscribe", Server: srv.cfg.ID}, link: srv.currentLink()}
		return h.accessError(ctx, q, err)
	}
	h.subs.count[key] = 1
	return nil
}

// subscribe sends resources/subscribe on conn. A 2026-07-28 subscription
// is a stream that lasts until Unsubscribe (or the connection) ends it.
func subscribe(ctx context.Context, srv *server, conn *upstream.Conn, uri string) error {
	params := &mcp.SubscribeParams{URI: uri}
	if conn.ProtocolVersion() >= "2026-07-28" {
		go conn.Session().Subscribe(conn.Live(), params)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, srv.cfg.RequestTimeout)
	defer cancel()
	return conn.Session().Subscribe(ctx, params)
}

// resubscribe asks a server's new connection to watch what its last one
// was asked to: a server started again knows nothing of it.
func (h *Host) resubscribe(s *server, conn *upstream.Conn) {
	h.subs.mu.Lock()
	var uris []string
	for k := range h.subs.count {
		if k.server == s.cfg.ID {
			uris = append(uris, k.uri)
		}
	}
	h.subs.mu.Unlock()
	if len(uris) == 0 {
		return
	}
	go func() {
		for _, uri := range uris {
			if err := subscribe(conn.Live(), s, conn, uri); err != nil {
				h.log.Warn("subscribing again after a restart", "server", s.cfg.ID, "error", err)
			}
		}
	}()
}

// Unsubscribe undoes one Subscribe of the same resource.
func (h *Host) Unsubscribe(ctx context.Context, snap *Snapshot, rd Read) *Error {
	srv, e := h.resolveResource(snap, rd)
	if e != nil {
		return e
	}
	key := subscription{srv.cfg.ID, rd.URI}
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
	if conn := srv.current(); conn != nil && conn.Fault() == nil {
		ctx, cancel := context.WithTimeout(ctx, srv.cfg.RequestTimeout)
		defer cancel()
		conn.Session().Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: rd.URI}) // the server may stop sending; nothing else to do
	}
	return nil
}

// resourceUpdated passes on a server's word that a resource changed, when
// someone subscribed to it and it is still allowed.
func (h *Host) resourceUpdated(s *server, uri string) {
	h.subs.mu.Lock()
	n := h.subs.count[subscription{s.cfg.ID, uri}]
	h.subs.mu.Unlock()
	if n == 0 || !s.cfg.AllowsResource(uri) || h.opts.ResourceUpdated == nil {
		return
	}
	h.opts.ResourceUpdated(ResourceUpdate{Server: s.cfg.ID, URI: uri})
}
