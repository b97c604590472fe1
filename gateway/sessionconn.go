//lint:file-ignore SA1019 a 2025-11-25 session's logging level is part of the state its copies share; protocol version 2026-07-28 deprecates the logging API (SEP-2577).

package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxAnnouncement bounds what one announcement carries: PostgreSQL's
// NOTIFY takes payloads under 8000 bytes.
const maxAnnouncement = 7900

// sessionTransport connects a session's copy through its SDK transport,
// with the connection wrapped (sessionConn).
type sessionTransport struct{ sess *session }

func (t sessionTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	inner, err := t.sess.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.sess.conn.inner = inner
	return t.sess.conn, nil
}

// A sessionConn is the connection of a session's copy, between the SDK's
// session and its transport. It keeps what the other replicas need to open
// copies of the session (the initialize parameters, the negotiated version,
// the logging level), and passes among the replicas what one copy cannot
// take alone:
//
//   - the ids of this replica's requests to the client (questions during a
//     call) name the replica, "REPLICA.N", so that an answer that reaches
//     another replica is passed on to this one;
//   - a message for the client that goes out on the session's GET stream
//     (a resource update, a question asked outside the client's request),
//     when another replica holds that stream, goes to that replica.
type sessionConn struct {
	s     *sessions
	sess  *session
	inner mcp.Connection

	mu         sync.Mutex
	initID     jsonrpc.ID // the client's initialize, until answered
	initialize *mcp.InitializeParams
	negotiated string
	level      mcp.LoggingLevel
	// beforeAnswer, when set, runs before the answer to the initialize
	// goes out; an error fails the initialize.
	beforeAnswer func() error
}

func (c *sessionConn) SessionID() string { return c.inner.SessionID() }
func (c *sessionConn) Close() error      { return c.inner.Close() }

// Read takes the client's next message for the session: an answer to
// another replica's question is passed on to it, and the next is read.
func (c *sessionConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.inner.Read(ctx)
		if err != nil {
			return nil, err
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			switch m.Method {
			case "initialize":
				c.noteInitialize(m)
			case "notifications/cancelled", "resources/unsubscribe":
				c.s.relay(c.sess, m)
			}
		case *jsonrpc.Response:
			replica, id, ok := c.s.askedBy(m.ID)
			if !ok {
				return msg, nil // not a question of ours: the SDK ignores it
			}
			if replica != c.s.replica {
				c.s.passAnswer(c.sess, replica, m)
				continue
			}
			answer := *m
			answer.ID = id
			return &answer, nil
		}
		return msg, nil
	}
}

// Write sends a message of the session to the client.
func (c *sessionConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if m.IsCall() {
			q := *m
			q.ID = c.s.questionID(m.ID)
			msg = &q
		}
		err := c.inner.Write(ctx, msg)
		if err != nil && c.sess.gets.Load() == 0 && !strings.HasSuffix(m.Method, "/list_changed") && c.s.passOn(c.sess, msg.(*jsonrpc.Request)) {
			return nil
		}
		return err
	case *jsonrpc.Response:
		if failed := c.answered(m); failed != nil {
			msg = failed
		}
	}
	return c.inner.Write(ctx, msg)
}

// noteInitialize keeps the client's initialize parameters.
func (c *sessionConn) noteInitialize(req *jsonrpc.Request) {
	var p mcp.InitializeParams
	if json.Unmarshal(req.Params, &p) != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.initialize == nil {
		c.initID, c.initialize = req.ID, &p
	}
}

// answered takes the answer to the client's initialize: it notes the
// version negotiated and runs beforeAnswer. If that fails, it returns the
// error the client gets instead.
func (c *sessionConn) answered(resp *jsonrpc.Response) *jsonrpc.Response {
	c.mu.Lock()
	if !c.initID.IsValid() || resp.ID != c.initID {
		c.mu.Unlock()
		return nil
	}
	c.initID = jsonrpc.ID{}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if resp.Error == nil && json.Unmarshal(resp.Result, &res) == nil {
		c.negotiated = res.ProtocolVersion
	}
	before := c.beforeAnswer
	c.beforeAnswer = nil
	c.mu.Unlock()
	if before == nil || resp.Error != nil {
		return nil
	}
	if err := before(); err != nil {
		c.s.g.log.Warn("cannot record the session in the store", "session", fingerprint(c.sess.id), "error", err)
		c.sess.refused.Store(true)
		return &jsonrpc.Response{ID: resp.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "the session could not be recorded for the other replicas: the store cannot be reached; try again"}}
	}
	return nil
}

func (c *sessionConn) setLevel(level mcp.LoggingLevel) {
	c.mu.Lock()
	c.level = level
	c.mu.Unlock()
}

// state is the session's state as the SDK keeps it, in JSON, for the
// copies other replicas open.
func (c *sessionConn) state() []byte {
	c.mu.Lock()
	st := mcp.ServerSessionState{InitializeParams: c.initialize, NegotiatedProtocolVersion: c.negotiated, LogLevel: c.level}
	c.mu.Unlock()
	data, _ := json.Marshal(st)
	return data
}

// questionID is the id the client sees for this replica's request id.
func (s *sessions) questionID(id jsonrpc.ID) jsonrpc.ID {
	q, _ := jsonrpc.MakeID(s.replica + "." + fmt.Sprint(id.Raw()))
	return q
}

// askedBy reads an answer's id: the replica that asked, and the id of its
// request. ok is false for an id no replica made.
func (s *sessions) askedBy(id jsonrpc.ID) (replica string, orig jsonrpc.ID, ok bool) {
	v, isString := id.Raw().(string)
	if !isString {
		return "", jsonrpc.ID{}, false
	}
	replica, n, found := strings.Cut(v, ".")
	if !found || len(replica) != len(s.replica) {
		return "", jsonrpc.ID{}, false
	}
	if i, err := strconv.ParseInt(n, 10, 64); err == nil {
		orig, _ = jsonrpc.MakeID(float64(i)) // the SDK numbers its requests
	} else {
		orig, _ = jsonrpc.MakeID(n)
	}
	return replica, orig, true
}

// passAnswer passes the client's answer to a question another replica
// asked on to it.
func (s *sessions) passAnswer(sess *session, replica string, resp *jsonrpc.Response) {
	data, err := jsonrpc.EncodeMessage(resp)
	if err != nil || s.ann == nil {
		return
	}
	payload := "answer " + replica + " " + sess.tag + " " + string(data)
	if len(payload) <= maxAnnouncement {
		s.announce(payload)
		return
	}
	// Too large to announce (a sampled message, say): left in the
	// mailbox, and the box announced.
	mail := s.g.relays.mail
	box := "answer." + rand.Text()
	if mail != nil {
		err = s.g.storeDo(context.Background(), func(ctx context.Context) error { return mail.Post(ctx, box, data, answerWithin) })
	}
	if mail == nil || err != nil {
		s.g.log.Warn("an answer to another replica's question cannot be passed on: that question goes unanswered",
			"session", fingerprint(sess.id), "bytes", len(data), "error", err)
		return
	}
	s.announce("answer " + replica + " " + sess.tag + " @" + box)
}

// heardAnswer takes an answer another replica passed on: if the question
// is this replica's, the answer is put to its copy of the session as if
// the client had sent it here.
func (s *sessions) heardAnswer(rest string) {
	replica, tag, data := fields3(rest)
	if replica != s.replica {
		return
	}
	sess := s.byTag(tag)
	if sess == nil {
		return
	}
	if box, ok := strings.CutPrefix(data, "@"); ok {
		go s.collectAnswer(sess, box)
		return
	}
	s.inject(sess, []byte(data))
}

// collectAnswer takes an answer another replica left in the mailbox.
func (s *sessions) collectAnswer(sess *session, box string) {
	mail := s.g.relays.mail
	if mail == nil {
		return
	}
	var data []byte
	err := s.g.storeDo(context.Background(), func(ctx context.Context) (err error) { data, err = mail.Collect(ctx, box); return err })
	if err != nil {
		s.g.log.Warn("an answer another replica passed on cannot be collected", "session", fingerprint(sess.id), "error", err)
		return
	}
	s.inject(sess, data)
}

// passOn passes a message for the client that this replica cannot send
// (it goes out on the session's GET stream, which another replica holds)
// to the other replicas, and reports whether one sent it: a notification
// is taken to be sent; a question, once the replica that holds the stream
// says so, within passWithin. Lists that changed are not passed on: each
// replica tells the streams it holds of its own.
func (s *sessions) passOn(sess *session, msg *jsonrpc.Request) bool {
	if s.ann == nil {
		return false
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil || len(data)+len(sess.tag)+8 > maxAnnouncement {
		return false
	}
	var sent chan struct{}
	var key string
	if msg.IsCall() {
		key = sess.tag + " " + fmt.Sprint(msg.ID.Raw())
		sent = make(chan struct{}, 1)
		defer keep(&s.mu, s.sending, key, sent)()
	}
	s.announce("send " + sess.tag + " " + string(data))
	if sent == nil {
		return true
	}
	select {
	case <-sent:
		return true
	case <-time.After(passWithin):
		return false
	}
}

// passWithin is how long a question passed on waits for the replica that
// holds the client's GET stream to say it sent it.
const passWithin = 2 * time.Second

// heardSend sends a message another replica passed on, if this replica
// holds the session's GET stream, and says so of a question.
func (s *sessions) heardSend(rest string) {
	tag, data, _ := strings.Cut(rest, " ")
	sess := s.byTag(tag)
	if sess == nil || sess.gets.Load() == 0 {
		return
	}
	msg, err := jsonrpc.DecodeMessage([]byte(data))
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok {
		return
	}
	if sess.conn.inner.Write(context.Background(), msg) != nil || !req.IsCall() {
		return
	}
	s.announce("sent " + tag + " " + fmt.Sprint(req.ID.Raw()))
}

// heardSent takes another replica's word that it sent a question passed
// on.
func (s *sessions) heardSent(key string) {
	wakeKept(&s.mu, s.sending, key)
}

// relay passes a client's cancellation of one of its requests, or the end
// of one of its subscriptions, to the other replicas' copies of the
// session: the request may run, or the subscription be held, on any of
// them. What another replica relayed here is not relayed again.
func (s *sessions) relay(sess *session, m *jsonrpc.Request) {
	if s.ann == nil {
		return
	}
	data, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return
	}
	if s.relayed(sess.tag, data, false) {
		return
	}
	payload := "relay " + s.replica + " " + sess.tag + " " + string(data)
	if len(payload) > maxAnnouncement {
		return
	}
	go s.announce(payload)
}

// heardRelay puts a message another replica relayed to this replica's
// copy of the session, if it holds one.
func (s *sessions) heardRelay(rest string) {
	replica, tag, data := fields3(rest)
	if replica == s.replica {
		return
	}
	sess := s.byTag(tag)
	if sess == nil {
		return
	}
	// Noted as this replica's copy will read it, encoded again.
	msg, err := jsonrpc.DecodeMessage([]byte(data))
	if err != nil {
		return
	}
	again, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return
	}
	s.relayed(tag, again, true)
	s.inject(sess, again)
}

// relayed notes (mark) or takes the note that the message data of the
// session tag came from another replica.
func (s *sessions) relayed(tag string, data []byte, mark bool) bool {
	key := tag + " " + string(data)
	s.mu.Lock()
	defer s.mu.Unlock()
	if mark {
		if len(s.fromOthers) < 1000 {
			s.fromOthers[key] = true
		}
		return true
	}
	if s.fromOthers[key] {
		delete(s.fromOthers, key)
		return true
	}
	return false
}

// inject puts a client's message to this replica's copy of its session,
// as if the client had sent it here.
func (s *sessions) inject(sess *session, data []byte) {
	req, err := http.NewRequest(http.MethodPost, Endpoint, bytes.NewReader(data))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(sessionHeader, sess.id)
	w := &discard{header: http.Header{}}
	sess.t.ServeHTTP(w, req)
	if w.status >= 300 {
		s.g.log.Warn("a message passed on by another replica was refused", "session", fingerprint(sess.id), "status", w.status)
	}
}

// fields3 splits an announcement's "REPLICA TAG DATA".
func fields3(s string) (replica, tag, data string) {
	replica, rest, _ := strings.Cut(s, " ")
	tag, data, _ = strings.Cut(rest, " ")
	return replica, tag, data
}

// discard is a ResponseWriter that keeps only the status.
type discard struct {
	header http.Header
	status int
}

func (d *discard) Header() http.Header { return d.header }
func (d *discard) Write(b []byte) (int, error) {
	if d.status == 0 {
		d.status = http.StatusOK
	}
	return len(b), nil
}
func (d *discard) WriteHeader(status int) { d.status = status }

// accepts reports whether Accept values take JSON and event streams.
func accepts(values []string) (jsonOK, streamOK bool) {
	for _, value := range values {
		for raw := range strings.SplitSeq(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}

func baseMediaType(value string) string {
	t, _, err := mime.ParseMediaType(value)
	if err != nil {
		return ""
	}
	return t
}

// isBatch reports whether a body is a JSON array.
func isBatch(body []byte) bool {
	b := bytes.TrimLeft(body, " \t\r\n")
	return len(b) > 0 && b[0] == '['
}
