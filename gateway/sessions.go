//lint:file-ignore SA1019 a 2025-11-25 session's logging level is part of the state its copies share; protocol version 2026-07-28 deprecates the logging API (SEP-2577).

package gateway

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/airlockhq/airlock/metrics"
	"github.com/airlockhq/airlock/store"
)

// The gateway keeps the sessions of 2025-11-25 clients itself, rather than
// in the SDK's handler, so that with a store that shares them
// (store.Sessions: PostgreSQL) a request that a load balancer sends to
// another replica than the one that opened its session is taken there: that
// replica finds the session in the store and opens a copy of it (the SDK's
// session state: the client's initialize parameters, the negotiated
// version, the logging level), which serves the request as the first
// replica's copy would have. A copy is the replica's own: calls, questions
// and subscriptions made through it run there.
//
// What one copy cannot do alone is passed among the replicas as the
// store's announcements (store.Announcer, topic "gateway"; sessionconn.go):
// a session ended (DELETE) through one replica ends every copy; a client's
// answer to a question a replica put to it (elicitation, sampling, roots)
// reaches the replica that asked; a message that goes out on the session's
// GET stream (a resource update, a question asked outside the client's
// request), when another replica holds the stream, goes out there.
//
// A session id is random and signed with the gateway's state key, which
// replicas share: an id that no gateway made is refused without a look in
// the store. The store keeps a hash of the id, never the id.

// gatewayTopic is the store's announcements among the gateway's
// replicas: about their copies of sessions (here) and the rounds of
// parked calls (rounds.go).
const gatewayTopic = "gateway"

// versionHeader is the header in which a client names its protocol
// version after the initialize.
const versionHeader = "Mcp-Protocol-Version"

// sessionVersions are the protocol versions of sessions.
var sessionVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// storeTimeout bounds a look in the store on a request's behalf.
const storeTimeout = 5 * time.Second

// sessions are the gateway's 2025-11-25 sessions in this process: those it
// opened, and its copies of those other replicas opened.
type sessions struct {
	g      *Gateway
	idle   time.Duration
	shared store.Sessions  // nil: sessions live in this process only
	ann    store.Announcer // nil: copies learn of an end at their next touch
	// replica names this process in the ids of its requests to clients,
	// so that an answer that reaches another replica finds its way here.
	replica string

	mu      sync.Mutex
	open    map[string]*session
	sending map[string]chan struct{} // questions passed on, until sent (sessionconn.go)
	// fromOthers are client messages other replicas relayed here, until
	// this replica's copy reads them (sessionconn.go).
	fromOthers map[string]bool

	unshared rate.Sometimes // warns that the store cannot be reached
}

// A session is this process's copy of one session.
type session struct {
	id    string
	tag   string // names the session in announcements: a hash of its id
	owner string // the user id of the access token that opened it
	ss    *mcp.ServerSession
	t     *mcp.StreamableServerTransport
	conn  *sessionConn

	// The session ends after the idle timeout without a request; requests
	// in flight hold the timer.
	timerMu sync.Mutex
	refs    int
	timer   *time.Timer

	// life ends when the session does: the requests still running on it
	// are cancelled then, since nothing can take their answers.
	life    context.Context
	endLife context.CancelFunc

	// streams are the client's POST streams open on this replica, by the
	// token the gateway gave each; a stream's channel is closed when the
	// client left it before its end (streamGone).
	streamsMu sync.Mutex
	streams   map[string]chan struct{}

	touched atomic.Int64 // when the store last heard of it (Unix nanoseconds)
	gets    atomic.Int32 // GET streams open on this replica
	refused atomic.Bool  // the store could not record it: the initialize failed
}

func newSessions(g *Gateway) *sessions {
	b := make([]byte, 6)
	rand.Read(b)
	return &sessions{g: g, idle: g.opts.Serve.SessionIdleTimeout, replica: hex.EncodeToString(b),
		open: map[string]*session{}, sending: map[string]chan struct{}{}, fromOthers: map[string]bool{}, unshared: rate.Sometimes{First: 1, Interval: time.Minute}}
}

// share makes the sessions (and the rounds of parked calls) shared
// through st, if it shares them, and follows the other replicas'
// announcements until life ends.
func (s *sessions) share(life context.Context, st store.Store) {
	ann, announces := st.(store.Announcer)
	if mail, ok := st.(store.Mailbox); ok && announces {
		s.g.relays = relays{g: s.g, mail: mail, running: map[string]context.CancelFunc{}, waiting: map[string]chan struct{}{}}
	}
	if shared, ok := st.(store.Sessions); ok {
		s.shared = shared
	}
	if announces {
		s.ann = ann
	}
	if announces && (s.shared != nil || s.g.relays.on()) {
		go ann.Watch(life, gatewayTopic, s.heard, s.missed)
	}
}

// newID returns a new session id: 26 random characters of base32, then
// as many of their signature.
func (s *sessions) newID() string {
	r := rand.Text()
	return r + s.sign(r)
}

func (s *sessions) sign(r string) string {
	m := hmac.New(sha256.New, s.g.key)
	m.Write([]byte("airlock session id\x00" + r))
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(m.Sum(nil)[:16])
}

// signed reports whether id is one a gateway sharing the key made.
func (s *sessions) signed(id string) bool {
	if len(id) != 2*idHalf {
		return false
	}
	return hmac.Equal([]byte(id[idHalf:]), []byte(s.sign(id[:idHalf])))
}

// idHalf is the length of each half of a session id.
const idHalf = 26

// sessionTag names a session in announcements without giving its id away.
func sessionTag(id string) string {
	sum := sha256.Sum256([]byte("airlock session tag\x00" + id))
	return hex.EncodeToString(sum[:12])
}

// refuseBatch answers a batch in a protocol version that has none.
func refuseBatch(w http.ResponseWriter, version string) {
	http.Error(w, fmt.Sprintf("JSON-RPC batching is not supported in 2025-06-18 and later (protocol version: %s)", version), http.StatusBadRequest)
}

// serve takes a request of the session era: a POST (an initialize without
// a session id, or any message of a session), the GET stream of a session,
// or its DELETE.
func (s *sessions) serve(w http.ResponseWriter, r *http.Request, body []byte) {
	id := r.Header.Get(sessionHeader)
	version := r.Header.Get(versionHeader)
	switch {
	case version == "":
	case version >= "2026-07-28" && id == "":
		// An initialize, with the header of a version that has none.
		http.Error(w, fmt.Sprintf("Bad Request: protocol version %s has no initialize: send its requests (server/discover first) without one, or initialize with Mcp-Protocol-Version 2025-11-25 or none", version), http.StatusBadRequest)
		return
	case version >= "2026-07-28":
		http.Error(w, fmt.Sprintf("Bad Request: protocol version %s has no sessions: send its requests without Mcp-Session-Id", version), http.StatusBadRequest)
		return
	case !slices.Contains(sessionVersions, version):
		http.Error(w, fmt.Sprintf("Bad Request: Unsupported protocol version (supported versions: %s)", strings.Join(sessionVersions, ",")), http.StatusBadRequest)
		return
	}
	switch r.Method {
	case http.MethodPost:
		if isBatch(body) && version >= "2025-06-18" {
			refuseBatch(w, version)
			return
		}
		if baseMediaType(r.Header.Get("Content-Type")) != "application/json" {
			http.Error(w, "Content-Type must be 'application/json'", http.StatusUnsupportedMediaType)
			return
		}
		if json, stream := accepts(r.Header.Values("Accept")); !json || !stream {
			http.Error(w, "Accept must contain both 'application/json' and 'text/event-stream'", http.StatusBadRequest)
			return
		}
		if id == "" {
			s.create(w, r)
			return
		}
		sess, ok := s.lookup(w, r, id)
		if !ok {
			return
		}
		if version == "" && isBatch(body) {
			// A client that leaves the header out still speaks the
			// version its session negotiated.
			sess.conn.mu.Lock()
			version = sess.conn.negotiated
			sess.conn.mu.Unlock()
			if version >= "2025-06-18" {
				refuseBatch(w, version)
				return
			}
		}
		sess.busy()
		defer sess.idleAgain(s.idle)
		defer s.keepAlive(sess)()
		token := s.newID()
		r.Header.Set(streamHeader, token) // the gateway's own: one a client sent is replaced
		sess.openStream(token)
		sess.t.ServeHTTP(&notHandled{ResponseWriter: w, body: body}, r)
		sess.closeStream(token, r.Context().Err() != nil)
	case http.MethodGet:
		if _, stream := accepts(r.Header.Values("Accept")); !stream {
			http.Error(w, "Accept must contain 'text/event-stream' for GET requests", http.StatusBadRequest)
			return
		}
		sess, ok := s.sessionOf(w, r, id)
		if !ok {
			return
		}
		sess.gets.Add(1)
		defer sess.gets.Add(-1)
		sess.t.ServeHTTP(w, r)
	case http.MethodDelete:
		sess, ok := s.sessionOf(w, r, id)
		if !ok {
			return
		}
		if err := s.end(r.Context(), sess); err != nil {
			s.g.log.Warn("cannot end the session in the store", "session", fingerprint(id), "error", err)
			http.Error(w, "the session could not be ended: the store that shares it with the other replicas cannot be reached; try again", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// sessionOf is lookup for a GET or a DELETE, which must name a session.
func (s *sessions) sessionOf(w http.ResponseWriter, r *http.Request, id string) (*session, bool) {
	if id == "" {
		http.Error(w, "Bad Request: "+r.Method+" requires an Mcp-Session-Id header", http.StatusBadRequest)
		return nil, false
	}
	return s.lookup(w, r, id)
}

// create opens a session for an initialize, records it in the shared
// store once the client has it, and closes it if the initialize failed.
func (s *sessions) create(w http.ResponseWriter, r *http.Request) {
	id := s.newID()
	sess, err := s.connect(r.Context(), id, owner(r), nil)
	if err != nil {
		s.g.log.Error("cannot open a session", "error", err)
		http.Error(w, "failed connection", http.StatusInternalServerError)
		return
	}
	sess.busy()
	defer sess.idleAgain(s.idle)
	if s.shared != nil {
		// Recorded before the answer goes out: the client's next request
		// may reach another replica at once.
		sess.conn.beforeAnswer = func() error {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), storeTimeout)
			defer cancel()
			err := s.shared.OpenSession(ctx, store.Session{ID: id, Owner: sess.owner, State: sess.conn.state()}, s.idle)
			if err == nil {
				sess.touched.Store(time.Now().UnixNano())
			}
			return err
		}
	}
	sess.t.ServeHTTP(w, r)
	if sess.ss.InitializeParams() == nil || sess.refused.Load() {
		sess.close()
		return
	}
	s.g.opts.Measures.SessionOpened(metrics.SessionInitialized)
}

// connect opens this process's copy of session id for owner, with state
// (nil: a new session, which the client initializes).
func (s *sessions) connect(ctx context.Context, id, owner string, state *mcp.ServerSessionState) (*session, error) {
	sess := &session{id: id, tag: sessionTag(id), owner: owner, t: &mcp.StreamableServerTransport{SessionID: id},
		streams: map[string]chan struct{}{}}
	sess.life, sess.endLife = context.WithCancel(context.WithoutCancel(ctx))
	sess.conn = &sessionConn{s: s, sess: sess}
	if state != nil {
		sess.conn.negotiated = state.NegotiatedProtocolVersion
		sess.conn.initialize = state.InitializeParams
	}
	ss, err := s.g.server.Connect(ctx, sessionTransport{sess}, &mcp.ServerSessionOptions{State: state})
	if err != nil {
		sess.endLife()
		return nil, err
	}
	sess.ss = ss
	s.mu.Lock()
	if prev := s.open[id]; prev != nil {
		// Two requests of a session this replica did not hold came at
		// once: the first copy serves both.
		s.mu.Unlock()
		sess.close()
		return prev, errTaken
	}
	sess.timer = time.AfterFunc(s.idle, sess.close)
	s.open[id] = sess
	s.mu.Unlock()
	go func() {
		ss.Wait()
		sess.endLife()
		sess.stopTimer()
		s.mu.Lock()
		if s.open[id] == sess {
			delete(s.open, id)
		}
		s.mu.Unlock()
	}()
	return sess, nil
}

// lookup returns this process's copy of session id, opening one from the
// shared store if there is none yet, or answers the request itself (404:
// no such session; 403: another's; 503: the store cannot say).
func (s *sessions) lookup(w http.ResponseWriter, r *http.Request, id string) (*session, bool) {
	notFound := func() {
		http.Error(w, "session not found: it ended, expired or never existed; initialize a new session (a POST without Mcp-Session-Id)", http.StatusNotFound)
	}
	if !s.signed(id) {
		notFound()
		return nil, false
	}
	s.mu.Lock()
	sess := s.open[id]
	s.mu.Unlock()
	if sess == nil {
		var err error
		var tooMany *tooManyError
		if sess, err = s.adopt(r.Context(), id, owner(r)); err != nil {
			switch {
			case errors.Is(err, store.ErrNotFound):
				notFound()
			case errors.Is(err, errNotYours):
				http.Error(w, notYours, http.StatusForbidden)
			case errors.As(err, &tooMany):
				w.Header().Set("Retry-After", "5")
				http.Error(w, s.g.tooMany(tooMany.limit), http.StatusServiceUnavailable)
			default:
				s.g.log.Warn("cannot read a session from the store", "session", fingerprint(id), "error", err)
				w.Header().Set("Retry-After", "5")
				http.Error(w, "the session cannot be taken here now: the store that shares it with the other replicas cannot be reached; try again", http.StatusServiceUnavailable)
			}
			return nil, false
		}
	}
	if sess.owner != owner(r) {
		http.Error(w, notYours, http.StatusForbidden)
		return nil, false
	}
	if !s.touch(r.Context(), sess, nil) {
		notFound()
		return nil, false
	}
	return sess, true
}

// notYours refuses a request of another's session.
const notYours = "session user mismatch: the session belongs to the user whose access token opened it; initialize a session of your own"

// adopt opens a copy of a session another replica opened for who, from
// the shared store.
func (s *sessions) adopt(ctx context.Context, id, who string) (*session, error) {
	if s.shared == nil {
		return nil, store.ErrNotFound
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	rec, err := s.shared.Session(ctx, id, s.idle)
	if err != nil {
		return nil, err
	}
	if rec.Owner != who {
		return nil, errNotYours
	}
	var state mcp.ServerSessionState
	if err := json.Unmarshal(rec.State, &state); err != nil || state.InitializeParams == nil {
		return nil, fmt.Errorf("the store holds a session state that cannot be read: %w", store.ErrNotFound)
	}
	if limit := s.g.admit(who); limit != "" {
		return nil, &tooManyError{limit}
	}
	defer s.g.admitted(who)
	sess, err := s.connect(context.WithoutCancel(ctx), id, rec.Owner, &state)
	if errors.Is(err, errTaken) {
		return sess, nil
	}
	if err != nil {
		return nil, err
	}
	sess.touched.Store(time.Now().UnixNano())
	if state.LogLevel != "" {
		s.g.levels.set(sess.ss, state.LogLevel, s.g.server.Sessions())
	}
	s.g.log.Info("session taken from another replica", "session", fingerprint(id))
	s.g.opts.Measures.SessionOpened(metrics.SessionTaken)
	return sess, nil
}

// A tooManyError refuses a session past a limit (admit's).
type tooManyError struct{ limit string }

func (e *tooManyError) Error() string { return "too many sessions: " + e.limit }

// held counts the sessions of this replica whose initialize was answered:
// all of them, and those of who.
func (s *sessions) held(who string) (all, theirs int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sess := range s.open {
		sess.conn.mu.Lock()
		answered := sess.conn.negotiated != ""
		sess.conn.mu.Unlock()
		if !answered {
			continue
		}
		all++
		if sess.owner == who {
			theirs++
		}
	}
	return all, theirs
}

var (
	errTaken    = errors.New("a copy of the session is open already")
	errNotYours = errors.New("another's session")
)

// touch tells the shared store that sess is in use, at most every tenth
// of the idle timeout (and a minute), and with a state, that its state
// changed. It reports false when the store says the session ended or
// expired: the copy is closed. A store that cannot be reached leaves the
// session to this replica meanwhile.
func (s *sessions) touch(ctx context.Context, sess *session, state []byte) bool {
	if s.shared == nil {
		return true
	}
	every := min(s.idle/10, time.Minute)
	if state == nil && time.Since(time.Unix(0, sess.touched.Load())) < every {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	err := s.shared.TouchSession(ctx, sess.id, state, s.idle)
	switch {
	case err == nil:
		sess.touched.Store(time.Now().UnixNano())
	case errors.Is(err, store.ErrNotFound):
		sess.close()
		return false
	default:
		s.unshared.Do(func() {
			s.g.log.Warn("sessions are not shared now: the store cannot be reached", "error", err)
		})
	}
	return true
}

// end ends sess everywhere: in the shared store, on the other replicas
// (announced), and here.
func (s *sessions) end(ctx context.Context, sess *session) error {
	if s.shared != nil {
		ctx, cancel := context.WithTimeout(ctx, storeTimeout)
		defer cancel()
		if err := s.shared.EndSession(ctx, sess.id); err != nil {
			return err
		}
		s.announce("end " + sess.tag)
	}
	sess.close()
	return nil
}

// announce tells the other replicas; a failure is logged: copies learn
// of an end at their next touch anyway.
func (s *sessions) announce(payload string) {
	if s.ann == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	what, _, _ := strings.Cut(payload, " ")
	switch what {
	case "answer", "relay":
		s.g.opts.Measures.Handoff(what)
	case "send":
		s.g.opts.Measures.Handoff("message")
	case "resume":
		s.g.opts.Measures.Handoff("round")
	}
	if err := s.ann.Announce(ctx, gatewayTopic, payload); err != nil {
		s.g.log.Warn("cannot tell the other replicas", "error", err)
	}
}

// count is how many sessions this process holds.
func (s *sessions) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

// byTag returns this process's copy of the session tag names, if any.
func (s *sessions) byTag(tag string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sess := range s.open {
		if sess.tag == tag {
			return sess
		}
	}
	return nil
}

// heard takes another replica's announcement about sessions.
func (s *sessions) heard(payload string) {
	verb, rest, _ := strings.Cut(payload, " ")
	switch verb {
	case "end":
		if sess := s.byTag(rest); sess != nil {
			sess.close()
		}
	case "answer":
		s.heardAnswer(rest)
	case "send":
		s.heardSend(rest)
	case "sent":
		s.heardSent(rest)
	case "relay":
		s.heardRelay(rest)
	default:
		s.g.relays.heard(verb, rest)
	}
}

// missed is called when announcements may have been missed: every copy
// asks the store whether its session still is.
func (s *sessions) missed() {
	s.mu.Lock()
	open := make([]*session, 0, len(s.open))
	for _, sess := range s.open {
		open = append(open, sess)
	}
	s.mu.Unlock()
	for _, sess := range open {
		sess.touched.Store(0)
		s.touch(context.Background(), sess, nil)
	}
	// A missed "round" costs its waiter a poll; a missed "resume" its
	// retry's deadline; a missed "gone" a call that runs on.
}

// setLevel records the logging level a session set, for the copies that
// other replicas open later.
func (s *sessions) setLevel(ctx context.Context, ss *mcp.ServerSession, level mcp.LoggingLevel) {
	if s.shared == nil || ss.ID() == "" {
		return
	}
	s.mu.Lock()
	sess := s.open[ss.ID()]
	s.mu.Unlock()
	if sess == nil {
		return
	}
	sess.conn.setLevel(level)
	s.touch(ctx, sess, sess.conn.state())
}

// close ends this copy of the session: the requests still running on it
// are cancelled, since no answer of theirs can reach the client any
// more, and the SDK's session is closed once they have returned.
func (sess *session) close() {
	sess.endLife()
	sess.ss.Close()
}

// streamHeader carries, on each POST of a session, the token of its
// stream, which the gateway sets; a request's handler finds it in the
// request's headers (RequestExtra.Header).
const streamHeader = "Airlock-Stream"

func (sess *session) openStream(token string) {
	sess.streamsMu.Lock()
	defer sess.streamsMu.Unlock()
	sess.streams[token] = make(chan struct{})
}

// closeStream forgets the stream token names; gone says the client left
// it before its end, which closes its channel.
func (sess *session) closeStream(token string, gone bool) {
	sess.streamsMu.Lock()
	defer sess.streamsMu.Unlock()
	if gone {
		close(sess.streams[token])
	}
	delete(sess.streams, token)
}

// streamGone returns the channel that is closed if the client leaves the
// stream token names, or nil for a stream this copy does not serve.
func (sess *session) streamGone(token string) <-chan struct{} {
	sess.streamsMu.Lock()
	defer sess.streamsMu.Unlock()
	return sess.streams[token]
}

// keepAlive tells the shared store, while a request of sess runs, that
// the session is in use, as the idle timer here is held: a call that runs
// longer than the idle timeout does not let the session's record expire
// under it. It returns the function that stops.
func (s *sessions) keepAlive(sess *session) (stop func()) {
	if s.shared == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(max(s.idle/3, 100*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.touch(sess.life, sess, nil)
			}
		}
	}()
	return func() { close(done) }
}

// byID returns this process's copy of session id, if any.
func (s *sessions) byID(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open[id]
}

// bound is receiving middleware: a request on a session this process
// holds runs in a context that ends with the session (DELETE, the idle
// timeout, an end another replica announced), and a question it asks
// learns if the client leaves its stream (streamGoneOf).
func (s *sessions) bound(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if ss == nil || ss.ID() == "" {
			return next(ctx, method, req)
		}
		sess := s.byID(ss.ID())
		if sess == nil {
			return next(ctx, method, req)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(sess.life, cancel)()
		if ex := req.GetExtra(); ex != nil && ex.Header != nil {
			if gone := sess.streamGone(ex.Header.Get(streamHeader)); gone != nil {
				ctx = context.WithValue(ctx, streamGoneKey{}, gone)
			}
		}
		return next(ctx, method, req)
	}
}

type streamGoneKey struct{}

// streamGoneOf returns the channel closed when the client leaves the
// stream of ctx's request, or nil.
func streamGoneOf(ctx context.Context) <-chan struct{} {
	gone, _ := ctx.Value(streamGoneKey{}).(<-chan struct{})
	return gone
}

// busy holds the idle timer while a request of the session runs.
func (sess *session) busy() {
	sess.timerMu.Lock()
	defer sess.timerMu.Unlock()
	if sess.timer == nil {
		return
	}
	if sess.refs == 0 {
		sess.timer.Stop()
	}
	sess.refs++
}

// idleAgain starts the idle timer again once no request of the session
// runs.
func (sess *session) idleAgain(idle time.Duration) {
	sess.timerMu.Lock()
	defer sess.timerMu.Unlock()
	if sess.timer == nil {
		return
	}
	if sess.refs--; sess.refs == 0 {
		sess.timer.Reset(idle)
	}
}

func (sess *session) stopTimer() {
	sess.timerMu.Lock()
	defer sess.timerMu.Unlock()
	if sess.timer != nil {
		sess.timer.Stop()
		sess.timer = nil
	}
}

// owner is whom a request's access token names ("" without inbound
// authentication).
func owner(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return ti.UserID
	}
	return ""
}

// notHandled passes a session's answers on, but for the SDK's refusal of a
// request for a method nobody serves (HTTP 400, text/plain "JSON RPC not
// handled: …"): a JSON-RPC request is answered with JSON-RPC, so that one
// becomes error -32601 (method not found) for the request's id, as
// application/json.
type notHandled struct {
	http.ResponseWriter
	body []byte
	held bool // a 400 in plain text: its body decides
}

func (n *notHandled) WriteHeader(code int) {
	if code == http.StatusBadRequest && strings.HasPrefix(n.Header().Get("Content-Type"), "text/plain") {
		n.held = true
		return
	}
	n.ResponseWriter.WriteHeader(code)
}

func (n *notHandled) Write(p []byte) (int, error) {
	if !n.held {
		return n.ResponseWriter.Write(p)
	}
	n.held = false
	msg, _ := jsonrpc.DecodeMessage(n.body)
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() || !bytes.HasPrefix(p, []byte("JSON RPC not handled")) {
		n.ResponseWriter.WriteHeader(http.StatusBadRequest)
		return n.ResponseWriter.Write(p)
	}
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
		Message: fmt.Sprintf("Method not found: %q", req.Method)}})
	if err != nil {
		return 0, err
	}
	n.Header().Set("Content-Type", "application/json")
	n.Header().Del("X-Content-Type-Options")
	n.ResponseWriter.WriteHeader(http.StatusOK)
	n.ResponseWriter.Write(data)
	return len(p), nil
}

func (n *notHandled) Flush() {
	if f, ok := n.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (n *notHandled) Unwrap() http.ResponseWriter { return n.ResponseWriter }
