package airlock

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/catalog"
	"github.com/airlockhq/airlock/internal/upstream"
	"github.com/airlockhq/airlock/store"
)

// Which connection a call uses, and how a connection is replaced.
//
// A server has one live connection at a time (a link, counted by its
// generation); install is the one way a connection becomes live, whether
// the server has just started, its supervisor restarted it, or a person
// logged in. A call's route is its server and, for a partitioned server
// acting for another principal, that principal's lane (partition.go):
// linkFor gives the route's live connection, and replaced the one that
// took the place of a connection that broke.

// A link is one connection of a server, and which one it is: the
// generation counts the connections the server has had.
type link struct {
	conn *upstream.Conn
	gen  uint64
}

func (s *server) current() *upstream.Conn {
	if l := s.link.Load(); l != nil {
		return l.conn
	}
	return nil
}

// currentLink returns the server's connection and its generation, or nil.
func (s *server) currentLink() *link { return s.link.Load() }

// install makes conn, with the tools discovered on it, the live connection
// of s, one generation on: the connection it replaces is closed, the
// status says ready and the audit trail records server_ready. restart is
// the supervisor's attempt, 0 for a first start or a login.
func (h *Host) install(ctx context.Context, s *server, conn *upstream.Conn, tools []*catalog.Tool, began time.Time, restart int) ServerStatus {
	old := s.link.Load()
	var gen uint64
	if old != nil {
		gen = old.gen
	}
	s.link.Store(&link{conn: conn, gen: gen + 1})
	if old != nil && old.conn != conn {
		old.conn.Close()
		h.resubscribe(s, h.ownWho(s), conn)
	}
	s.setTools(tools)
	took := time.Since(began)
	st := s.setStatus(func(st *ServerStatus) {
		st.Status, st.Err, st.ProtocolVersion, st.Tools, st.LastOK = StatusReady, nil, conn.ProtocolVersion(), len(tools), time.Now()
		if restart > 0 {
			st.Restarts++
		} else {
			st.Took = took
		}
	})
	fields := map[string]any{"protocol_version": st.ProtocolVersion, "tools": len(tools)}
	if restart > 0 {
		fields["restart"] = restart
	}
	h.audit(ctx, store.Event{Event: store.EventServerReady, Server: s.cfg.ID, DurationMS: took.Milliseconds(), Fields: fields})
	return st
}

// setFailed records that s cannot be used now, and why: its status, and a
// server_failed event.
func (h *Host) setFailed(ctx context.Context, s *server, status string, err *Error, took time.Duration) ServerStatus {
	st := s.setStatus(func(st *ServerStatus) {
		st.Status, st.Err = status, err
		if took > 0 {
			st.Took = took
		}
	})
	h.audit(ctx, store.Event{Event: store.EventServerFailed, Server: s.cfg.ID, Class: string(err.Kind),
		DurationMS: took.Milliseconds(), Fields: map[string]any{"error": err.Msg}})
	return st
}

// watch starts those watchers of s that are not running, until its life
// ends: the supervisor, which replaces a connection that breaks, and the
// health check when one is configured. A supervisor that stops for good
// (the server gave up, or its life ended) leaves supervised set; one that
// stops because the server needs a login clears it first, so that the
// login that connects the server again (relogin) starts a new one.
func (h *Host) watch(s *server) {
	if s.supervised.CompareAndSwap(false, true) {
		s.watchers.Go(func() { h.supervise(s) })
	}
	if s.cfg.HealthCheck.Interval > 0 && s.checked.CompareAndSwap(false, true) {
		s.watchers.Go(func() { h.checkHealth(s) })
	}
}

// Restart policy: exponential backoff with jitter, and a server that keeps
// dying is given up on after maxRestarts attempts in a row.
const (
	restartBase = 250 * time.Millisecond
	restartMax  = 30 * time.Second
	maxRestarts = 5
)

func backoff(attempt int) time.Duration {
	d := restartBase << min(attempt-1, 16)
	if d > restartMax || d <= 0 {
		d = restartMax
	}
	// Full jitter on half the delay: restarts of many servers spread out.
	return d/2 + rand.N(d/2+1)
}

// supervise restarts a server whose connection breaks (the process exited,
// its pipe broke, it broke the contract) until its life ends. Calls in
// flight on the broken connection have failed already; nothing is
// replayed. The restarted server's tools are discovered again and reach
// the catalog at the next safe point.
func (h *Host) supervise(s *server) {
	life := s.life
	for {
		conn := s.current()
		select {
		case <-life.Done():
			return
		case <-conn.Broken():
		}
		f := conn.Fault()
		if life.Err() != nil || f.Kind == upstream.FaultClosed {
			return
		}
		conn.Close() // reap it and whatever it left in its process group
		// A remote server that forgot the session gets a new one: a new
		// transport and handshake, never initialize again on the old one.
		rebuild := f.Kind == upstream.FaultSessionExpired
		h.log.Warn("server stopped working; reconnecting", "server", s.cfg.ID, "reason", f.Msg, "session_rebuild", rebuild)
		h.audit(life, store.Event{Event: store.EventServerFailed, Server: s.cfg.ID, Class: string(ConnectionError),
			Fields: map[string]any{"error": f.Msg, "restart": true, "session_rebuild": rebuild}})
		s.setStatus(func(st *ServerStatus) {
			st.Status, st.Err = StatusStarting, newError(ConnectionError, s.cfg.ID, "", f, "%s; restarting", f.Msg)
		})
		if !h.restart(s, f, rebuild) {
			return
		}
	}
}

// restart connects s again after its connection broke with f, with
// backoff, and reports whether s has a live connection again.
func (h *Host) restart(s *server, f *upstream.Fault, rebuild bool) bool {
	life := s.life
	for attempt := 1; attempt <= maxRestarts; attempt++ {
		wait := backoff(attempt)
		if rebuild && attempt == 1 {
			wait = 0 // the server is there; only the session is gone
		}
		select {
		case <-life.Done():
			return false
		case <-time.After(wait):
		}
		// The last attempt's server, if it still runs, is gone before the
		// next one starts.
		s.abandoned.settle()
		ctx, cancel := context.WithTimeout(life, s.cfg.StartTimeout())
		began := time.Now()
		next, tools, err := h.connect(ctx, s)
		cancel()
		switch {
		case err != nil && err.Kind == AuthRequired:
			// Retrying will not help until someone logs in; a call tries
			// again then (relogin), and watches the server from there.
			h.log.Warn("server needs a login", "server", s.cfg.ID, "error", err.Msg)
			s.supervised.Store(false)
			h.setFailed(life, s, StatusAuthRequired, err, 0)
			return false
		case err != nil:
			h.log.Warn("restart failed", "server", s.cfg.ID, "attempt", attempt, "error", err.Msg)
			continue
		case life.Err() != nil:
			next.Close()
			return false
		}
		h.install(life, s, next, tools, began, attempt)
		h.catalogChanged()
		return true
	}
	h.setFailed(life, s, StatusFailed, newError(ConnectionError, s.cfg.ID, "", f,
		"server %s: gave up after %d restarts (%s)", s.cfg.ID, maxRestarts, f.Msg), 0)
	return false
}

// A route is where one call goes: a server, and for a partitioned server
// acting for someone other than the host, that principal's lane.
type route struct {
	srv  *server
	lane *lane // nil: the server's own connection
}

// routeCall finds q's route, and the live connection it goes out on.
func (h *Host) routeCall(ctx context.Context, q *request) *Error {
	rt := route{srv: q.srv}
	if q.srv.partitioned() && q.snap.who != h.Principal() {
		if rt.lane = q.srv.laneOf(q.snap.who); rt.lane == nil {
			// Only tasks lease lanes; a snapshot whose task let go of
			// its lanes makes no more calls.
			return newError(Cancelled, q.srv.cfg.ID, q.tool.Name, nil, "the task acting for %s/%s was released", q.snap.who.Tenant, q.snap.who.User)
		}
	}
	l, err := h.linkFor(ctx, rt, q.tool)
	if err != nil {
		return err
	}
	q.route, q.link = rt, l
	return nil
}

// linkFor returns the live connection of a route. A lane without a working
// connection is dialled. A server still starting (warm start) is waited
// for; one that needed a login is tried again, since someone may have
// logged in meanwhile; one whose session is being rebuilt is waited for.
func (h *Host) linkFor(ctx context.Context, rt route, tool *catalog.Tool) (*link, *Error) {
	if rt.lane != nil {
		if l := rt.lane.link.Load(); l != nil && l.conn.Fault() == nil {
			return l, nil
		}
		return h.dialLane(ctx, rt, nil, tool.Name)
	}
	srv := rt.srv
	l := srv.currentLink()
	if l == nil {
		select {
		case <-srv.ready:
		case <-ctx.Done():
			return nil, newError(Cancelled, tool.Server, tool.Name, ctx.Err(), "%s: cancelled while server %s was starting", tool.Name, tool.Server)
		case <-time.After(srv.cfg.StartTimeout()):
		}
		l = srv.currentLink()
	}
	if srv.getStatus().Status == StatusAuthRequired {
		return h.relogin(ctx, srv, tool.Name)
	}
	if l == nil {
		if st := srv.getStatus(); st.Err != nil {
			return nil, newError(ConnectionError, tool.Server, tool.Name, nil, "server %s is not connected (%s); see airlock status", tool.Server, st.Err.Msg)
		}
		return nil, newError(ConnectionError, tool.Server, tool.Name, nil, "server %s is not connected", tool.Server)
	}
	if f := l.conn.Fault(); f != nil {
		if f.Kind == upstream.FaultSessionExpired {
			// The server is there and only the session is gone: the
			// call waits for the new session rather than failing.
			if next, err := h.replaced(ctx, rt, l); err == nil {
				return next, nil
			}
		}
		return nil, newError(ConnectionError, tool.Server, tool.Name, f, "server %s is not available: %s", tool.Server, f.Msg)
	}
	return l, nil
}

// resendOn moves q to the connection it is sent again on: after the
// server forgot the session, the one that replaced it; otherwise the same
// one while it works. It reports whether there is one.
func (h *Host) resendOn(ctx context.Context, q *request, sessionGone bool) bool {
	if !sessionGone && q.link.conn.Fault() == nil {
		return true
	}
	next, err := h.replaced(ctx, q.route, q.link)
	if err != nil {
		return false
	}
	q.link = next
	return true
}

// replaced returns the connection that took the place of old, which broke:
// a lane's is dialled now; the server's own is its supervisor's, waited for
// at most the server's start timeout.
func (h *Host) replaced(ctx context.Context, rt route, old *link) (*link, error) {
	if rt.lane != nil {
		l, err := h.dialLane(ctx, rt, old, "")
		if err != nil {
			return nil, err
		}
		return l, nil
	}
	s := rt.srv
	deadline := time.Now().Add(s.cfg.StartTimeout())
	for {
		if l := s.currentLink(); l != nil && l != old && l.conn.Fault() == nil {
			return l, nil
		}
		switch s.getStatus().Status {
		case StatusFailed, StatusAuthRequired, StatusStopped:
			return nil, errors.New("the server did not come back")
		}
		if time.Now().After(deadline) {
			return nil, errors.New("the server did not come back in time")
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// relogin connects a server that needed a login, one caller at a time.
func (h *Host) relogin(ctx context.Context, s *server, tool string) (*link, *Error) {
	s.reloginMu.Lock()
	defer s.reloginMu.Unlock()
	if st := s.getStatus(); st.Status != StatusAuthRequired {
		if l := s.currentLink(); l != nil && l.conn.Fault() == nil {
			return l, nil
		}
		return nil, newError(ConnectionError, s.cfg.ID, tool, st.Err, "server %s is not available", s.cfg.ID)
	}
	if s.life.Err() != nil {
		return nil, newError(Cancelled, s.cfg.ID, tool, s.life.Err(), "the host is closing")
	}
	ctx, cancel := dialContext(ctx, s.cfg.StartTimeout())
	defer cancel()
	began := time.Now()
	conn, tools, err := h.connect(ctx, s)
	if err != nil {
		// The status says what stands in the way now: another login, or
		// a failure that logging in will not mend.
		s.setStatus(func(st *ServerStatus) { st.Status, st.Err = statusOf(err), err })
		err.Tool = tool
		return nil, err
	}
	h.install(ctx, s, conn, tools, began, 0)
	h.watch(s)
	h.catalogChanged()
	return s.currentLink(), nil
}

// dialContext bounds a connection made during a request: it ends with
// ctx, or after d, but takes none of ctx's values. A gateway request's
// context carries what the SDK put there for the gateway's own client
// (the protocol version that client spoke), which the SDK's client
// transport would otherwise send to the server in the handshake.
func dialContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	dctx, cancel := context.WithTimeout(context.Background(), d)
	stop := context.AfterFunc(ctx, cancel)
	return dctx, func() {
		stop()
		cancel()
	}
}

// loginPending returns the server whose tools' local names name would be
// one of (it starts with the server's prefix, SERVER__ by default) when
// that server still waits for a login, or nil. Of several such servers,
// the one with the longest prefix, then the first by id, is named.
func (s *Snapshot) loginPending(name string) *server {
	return s.serverOf(name, func(srv *server, _ string) bool { return srv.getStatus().Status == StatusAuthRequired })
}

// notRunning returns the failed server that would offer the tool name (it
// starts with the server's prefix, and allowed_tools has the rest), or
// nil: its tools are out of the catalog while it is down.
func (s *Snapshot) notRunning(name string) *server {
	return s.serverOf(name, func(srv *server, tool string) bool {
		return srv.getStatus().Status == StatusFailed && srv.cfg.Allows(tool)
	})
}

// promptNotRunning is notRunning for a prompt's local name.
func (s *Snapshot) promptNotRunning(name string) *server {
	return s.serverOf(name, func(srv *server, prompt string) bool {
		return srv.getStatus().Status == StatusFailed && srv.cfg.AllowsPrompt(prompt)
	})
}

// downError says that what the local name name stands for is out of the
// catalog because srv, its server, is down; what is "tools" or "prompts".
func downError(srv *server, name, what string) *Error {
	why := "it failed"
	if st := srv.getStatus(); st.Err != nil {
		why = st.Err.Msg
	}
	return newError(ConnectionError, srv.cfg.ID, name, nil,
		"%s: server %s is not running, so its %s are not in the catalog (%s); see airlock status", name, srv.cfg.ID, what, why)
}

// serverOf returns the server whose tools' local names name would be one
// of, for which ok holds (given the rest of name), or nil. Of several, the
// one with the longest prefix, then the first by id, is named.
func (s *Snapshot) serverOf(name string, ok func(srv *server, tool string) bool) *server {
	var found *server
	for _, srv := range s.servers {
		prefix := srv.cfg.LocalPrefix()
		if !strings.HasPrefix(name, prefix) || len(name) == len(prefix) || !ok(srv, name[len(prefix):]) {
			continue
		}
		if found == nil || len(prefix) > len(found.cfg.LocalPrefix()) ||
			len(prefix) == len(found.cfg.LocalPrefix()) && srv.cfg.ID < found.cfg.ID {
			found = srv
		}
	}
	return found
}
