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
// the sessions subscribed to it, under the URI each subscribed with. A
// subscription ends with resources/unsubscribe, with the listen stream, or
// with the session.

// updatesDepth bounds the updates waiting to be sent; past it, an update
// is dropped rather than hold up the server connection that said it.
const updatesDepth = 256

// sessionSubs are the subscriptions of the gateway's sessions.
type sessionSubs struct {
	mu   sync.Mutex
	subs map[*mcp.ServerSession]map[string]target // by the URI the session subscribed with
}

// forms returns the URIs sessions subscribed to at with.
func (s *sessionSubs) forms(at target) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, uris := range s.subs {
		for uri, t := range uris {
			if t == at && !seen[uri] {
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
	if !g.subs.reserve(req.Session, uri, at, g.unsubscribeAll) {
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

// reserve notes that ss subscribes to uri (at), unless it has already;
// ended is called once ss ends, for its first subscription.
func (s *sessionSubs) reserve(ss *mcp.ServerSession, uri string, at target, ended func(*mcp.ServerSession)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.subs[ss][uri]; ok {
		return false
	}
	if s.subs == nil {
		s.subs = map[*mcp.ServerSession]map[string]target{}
	}
	uris := s.subs[ss]
	if uris == nil {
		uris = map[string]target{}
		s.subs[ss] = uris
		// The session's subscriptions end with it.
		go func() {
			ss.Wait()
			ended(ss)
		}()
	}
	uris[uri] = at
	return true
}

// drop forgets ss's subscription to uri, and returns where it was.
func (s *sessionSubs) drop(ss *mcp.ServerSession, uri string) (target, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.subs[ss][uri]
	delete(s.subs[ss], uri)
	return at, ok
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
	if at, ok := g.subs.drop(req.Session, req.Params.URI); ok {
		g.host.Load().Unsubscribe(ctx, g.snap.Load(), airlock.Read{URI: at.uri, Server: at.server})
	}
	return nil
}

// unsubscribeAll ends the subscriptions of a session that ended.
func (g *Gateway) unsubscribeAll(ss *mcp.ServerSession) {
	g.subs.mu.Lock()
	uris := g.subs.subs[ss]
	delete(g.subs.subs, ss)
	g.subs.mu.Unlock()
	ctx := context.Background()
	for _, at := range uris {
		g.host.Load().Unsubscribe(ctx, g.snap.Load(), airlock.Read{URI: at.uri, Server: at.server})
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
			for _, uri := range g.subs.forms(target{u.Server, u.URI}) {
				g.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
			}
		}
	}
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
