package gateway

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
)

// Subscriptions: a client subscribes to a listed resource (a 2025-11-25
// session with resources/subscribe, a 2026-07-28 client in its
// subscriptions/listen stream) and the gateway subscribes the host
// (Host.Subscribe, which counts subscribers per server and URI); the
// host's word that the resource changed (Options.ResourceUpdated) reaches
// the sessions subscribed to it, under the URI each subscribed with; an
// update that names a principal (a server that keeps credentials per
// user) reaches only that principal's sessions. A subscription ends with
// resources/unsubscribe, with the listen stream, or with the session, and
// is undone for the principal it was made for.

// updatesDepth bounds the updates waiting to be sent; past it, an update
// is dropped rather than hold up the server connection that said it.
const updatesDepth = 256

// sessionSubs are the subscriptions of the gateway's sessions.
type sessionSubs struct {
	mu   sync.Mutex
	subs map[*mcp.ServerSession]map[string]held // by the URI the session subscribed with
}

// A held subscription is what a session subscribed to, and for whom.
type held struct {
	at  target
	who caller
}

// forms returns the URIs sessions subscribed to at with; sessions of who
// only, unless who is zero.
func (s *sessionSubs) forms(at target, who airlock.Principal) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, uris := range s.subs {
		for uri, h := range uris {
			if h.at == at && (who == airlock.Principal{} || h.who.who == who) && !seen[uri] {
				seen[uri] = true
				out = append(out, uri)
			}
		}
	}
	return out
}

// subscribe is the SDK's SubscribeHandler: the host subscribes to the
// resource, once for each session.
func (g *Gateway) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	ix := g.content.Load()
	if err := ix.clashOf(uri); err != nil {
		return err
	}
	at, ok := ix.resolve(uri)
	if !ok {
		return mcp.ResourceNotFoundError(uri)
	}
	who, snap, release, err := g.callerSnapshot(extraOf(ctx, req.Extra))
	if err != nil {
		return err
	}
	defer release()
	if !g.subs.reserve(req.Session, uri, held{at, who}, g.unsubscribeAll) {
		return nil // subscribed already
	}
	if e := g.host.Load().Subscribe(ctx, snap, airlock.Read{URI: at.uri, Server: at.server}); e != nil {
		g.subs.drop(req.Session, uri)
		return g.refused(ctx, who, &airlock.Result{Status: e.Kind, Err: e, Content: e.Msg}, uri)
	}
	if !g.subs.holds(req.Session, uri) {
		// Unsubscribed, or the session ended, while the host subscribed.
		g.host.Load().Unsubscribe(ctx, snap, airlock.Read{URI: at.uri, Server: at.server})
	}
	return nil
}

// reserve notes that ss subscribes to uri (h), unless it has already;
// ended is called once ss ends, for its first subscription.
func (s *sessionSubs) reserve(ss *mcp.ServerSession, uri string, h held, ended func(*mcp.ServerSession)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.subs[ss][uri]; ok {
		return false
	}
	if s.subs == nil {
		s.subs = map[*mcp.ServerSession]map[string]held{}
	}
	uris := s.subs[ss]
	if uris == nil {
		uris = map[string]held{}
		s.subs[ss] = uris
		// The session's subscriptions end with it.
		go func() {
			ss.Wait()
			ended(ss)
		}()
	}
	uris[uri] = h
	return true
}

// drop forgets ss's subscription to uri, and returns what it was.
func (s *sessionSubs) drop(ss *mcp.ServerSession, uri string) (held, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.subs[ss][uri]
	delete(s.subs[ss], uri)
	return h, ok
}

// holds reports whether ss is subscribed to uri.
func (s *sessionSubs) holds(ss *mcp.ServerSession, uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.subs[ss][uri]
	return ok
}

// unsubscribe is the SDK's UnsubscribeHandler.
func (g *Gateway) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	if h, ok := g.subs.drop(req.Session, req.Params.URI); ok {
		g.undo(ctx, h)
	}
	return nil
}

// undo unsubscribes the host from what h subscribed to, for whom it was
// subscribed.
func (g *Gateway) undo(ctx context.Context, h held) {
	snap, release, err := g.snapshot(h.who)
	if err != nil {
		return // the caller was acted for when it subscribed; nothing better to do
	}
	defer release()
	g.host.Load().Unsubscribe(ctx, snap, airlock.Read{URI: h.at.uri, Server: h.at.server})
}

// unsubscribeAll ends the subscriptions of a session that ended.
func (g *Gateway) unsubscribeAll(ss *mcp.ServerSession) {
	g.subs.mu.Lock()
	uris := g.subs.subs[ss]
	delete(g.subs.subs, ss)
	g.subs.mu.Unlock()
	ctx := context.Background()
	for _, h := range uris {
		g.undo(ctx, h)
	}
}

// ResourceUpdated is the Host's Options.ResourceUpdated: a resource
// someone subscribed to changed. It never blocks.
func (g *Gateway) ResourceUpdated(u airlock.ResourceUpdate) {
	select {
	case g.updates <- u:
	default:
		g.log.Warn("resource update dropped: too many waiting", "server", u.Server)
	}
}

// notify passes the host's resource updates on to the sessions subscribed
// to them, until ctx ends.
func (g *Gateway) notify(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-g.updates:
			g.sending.Store(&u)
			for _, uri := range g.subs.forms(target{u.Server, u.URI}, u.Principal) {
				g.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
			}
			g.sending.Store(nil)
		}
	}
}

// onlyTheirs is a sending middleware: the SDK tells every session
// subscribed to a URI that it changed (Server.ResourceUpdated), and an
// update that names a principal is for that principal's sessions only, so
// it keeps the notification from a session that did not subscribe to the
// update's resource for that principal.
func (g *Gateway) onlyTheirs(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "notifications/resources/updated" {
			return next(ctx, method, req)
		}
		u := g.sending.Load()
		ss, _ := req.GetSession().(*mcp.ServerSession)
		p, _ := req.GetParams().(*mcp.ResourceUpdatedNotificationParams)
		if u != nil && ss != nil && p != nil && !g.subs.heard(ss, p.URI, *u) {
			return nil, nil
		}
		return next(ctx, method, req)
	}
}

// heard reports whether ss subscribed with uri to u's resource, for u's
// principal when it names one.
func (s *sessionSubs) heard(ss *mcp.ServerSession, uri string, u airlock.ResourceUpdate) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.subs[ss][uri]
	return ok && h.at == target{u.Server, u.URI} && (u.Principal == airlock.Principal{} || h.who.who == u.Principal)
}

type extraKey struct{}

// extraOf is the request's extra, or, for a subscription a 2026-07-28
// client made in its subscriptions/listen stream (which the SDK subscribes
// without one), the stream's (screen puts it in ctx): whom it is made for.
func extraOf(ctx context.Context, extra *mcp.RequestExtra) *mcp.RequestExtra {
	if extra != nil {
		return extra
	}
	e, _ := ctx.Value(extraKey{}).(*mcp.RequestExtra)
	return e
}
