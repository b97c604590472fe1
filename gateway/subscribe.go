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
	who, err := g.callerOf(extraOf(ctx, req.Extra))
	if err != nil {
		return err
	}
	snap, release, err := g.snapshot(who)
	if err != nil {
		return err
	}
	defer release()
	g.subs.mu.Lock()
	defer g.subs.mu.Unlock()
	if _, ok := g.subs.subs[req.Session][uri]; ok {
		return nil
	}
	if e := g.host.Load().Subscribe(ctx, snap, airlock.Read{URI: at.uri, Server: at.server}); e != nil {
		return g.refused(ctx, who, &airlock.Result{Status: e.Kind, Err: e, Content: e.Msg}, uri)
	}
	if g.subs.subs == nil {
		g.subs.subs = map[*mcp.ServerSession]map[string]target{}
	}
	uris := g.subs.subs[req.Session]
	if uris == nil {
		uris = map[string]target{}
		g.subs.subs[req.Session] = uris
		// The session's subscriptions end with it.
		go func(ss *mcp.ServerSession) {
			ss.Wait()
			g.unsubscribeAll(ss)
		}(req.Session)
	}
	uris[uri] = at
	return nil
}

// unsubscribe is the SDK's UnsubscribeHandler.
func (g *Gateway) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	g.subs.mu.Lock()
	at, ok := g.subs.subs[req.Session][req.Params.URI]
	delete(g.subs.subs[req.Session], req.Params.URI)
	g.subs.mu.Unlock()
	if ok {
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
