package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/store"
)

// A parked call (parked.go) waits in the gateway process that made it.
// With a store that lets the replicas hand each other messages
// (store.Mailbox and store.Announcer: PostgreSQL), a client's retry that
// a load balancer sends to another replica is handed to the one where the
// call waits: the retry's replica leaves the client's answers in the
// mailbox and announces "resume REPLICA BOX"; that replica takes them,
// runs the round as if the retry had reached it, leaves the round's answer
// (the next question, or the result) and announces "round BOX"; the
// retry's replica collects it and answers its client. A client that goes
// away is announced ("gone REPLICA BOX"), which cancels the call as a
// client of the replica itself would. The request state, signed with the
// key the replicas share, says which replica the call waits on.

// relayPoll is how often a relayed round looks in the mailbox without
// being told: an announcement that was missed costs at most this.
const relayPoll = 2 * time.Second

// pickupWithin bounds how long a round handed to another replica may wait
// to be taken: a live replica takes it as soon as it hears of it.
var pickupWithin = 15 * time.Second

// relays hands rounds of parked calls among the replicas.
type relays struct {
	g    *Gateway
	mail store.Mailbox // nil: rounds stay where they are (announced through g.sessions)

	mu      sync.Mutex
	waiting map[string]chan struct{}      // the boxes of this replica's retries, until answered
	running map[string]context.CancelFunc // the rounds this replica runs for another's retries
}

// on reports whether rounds can be handed among replicas.
func (r *relays) on() bool { return r.mail != nil }

// A relayedRound is a client's retry, as the replica that took it hands it
// to the replica where the call waits.
type relayedRound struct {
	State     string               `json:"state"`
	Subject   string               `json:"subject"`
	Caller    string               `json:"caller"`
	Responses mcp.InputResponseMap `json:"responses,omitempty"`
}

// A relayedAnswer is the round's answer: the method's result, or the
// JSON-RPC error its handler returned.
type relayedAnswer struct {
	Result  json.RawMessage `json:"result,omitempty"`
	Code    int64           `json:"code,omitempty"`
	Message string          `json:"message,omitempty"`
}

// relayRound hands the client's retry ex to the replica st names and
// returns the round's answer from there.
func (g *Gateway) relayRound(ctx context.Context, ex *exchange, who caller, st parkedState) (mcp.Result, error) {
	r := &g.relays
	box := rand.Text()
	in, err := json.Marshal(relayedRound{State: ex.state, Subject: ex.subject, Caller: who.key(), Responses: ex.responses})
	if err != nil {
		return nil, err
	}
	wake := make(chan struct{}, 1)
	defer keep(&r.mu, r.waiting, box, wake)()
	if err := g.storeDo(ctx, func(ctx context.Context) error { return r.mail.Post(ctx, "in."+box, in, answerWithin) }); err != nil {
		g.log.Warn("cannot hand a round to the replica where its call waits", "error", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "the call waits on another replica, which cannot be reached now (the store does not answer); send the answer again"}
	}
	r.announce("resume " + st.Replica + " " + box)
	poll := time.NewTicker(relayPoll)
	defer poll.Stop()
	deadline := time.NewTimer(answerWithin + time.Minute)
	defer deadline.Stop()
	pickup := time.NewTimer(pickupWithin)
	defer pickup.Stop()
	for {
		select {
		case <-wake:
		case <-poll.C:
		case <-pickup.C:
			// A live replica takes the round at once; one that has not
			// is gone (or never heard). Taking it back, if it is still
			// there, settles which: it is then never run.
			err := g.storeDo(ctx, func(ctx context.Context) error { _, err := r.mail.Collect(ctx, "in."+box); return err })
			if err == nil {
				g.log.Warn("a round handed to another replica was not taken; that replica is gone or cannot be reached", "replica", st.Replica)
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
					Message: fmt.Sprintf("the call waits on another replica, which did not take the answer within %s: it has stopped, or cannot be reached; send the answer again, or make the call again if it has stopped", pickupWithin)}
			}
		case <-deadline.C:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: "the replica where the call waits did not answer; make the call again"}
		case <-ctx.Done():
			r.announce("gone " + st.Replica + " " + box)
			return nil, ctx.Err()
		}
		var out []byte
		err := g.storeDo(ctx, func(ctx context.Context) (err error) { out, err = r.mail.Collect(ctx, "out."+box); return err })
		if err != nil {
			continue // not yet, or the store does not answer now
		}
		var a relayedAnswer
		if err := json.Unmarshal(out, &a); err != nil {
			return nil, fmt.Errorf("the replica where the call waits answered what cannot be read: %w", err)
		}
		if a.Code != 0 {
			return nil, &jsonrpc.Error{Code: a.Code, Message: a.Message}
		}
		res := ex.blank()
		if err := json.Unmarshal(a.Result, res); err != nil {
			return nil, fmt.Errorf("the replica where the call waits answered what cannot be read: %w", err)
		}
		return res, nil
	}
}

// runRound runs, for another replica, the round of a retry it took for a
// call that waits here, and leaves the answer for it.
func (g *Gateway) runRound(box string) {
	r := &g.relays
	ctx, cancel := context.WithTimeout(context.Background(), answerWithin)
	defer cancel()
	defer keep(&r.mu, r.running, box, cancel)()
	var a relayedAnswer
	res, err := g.roundFor(ctx, box)
	if err == nil {
		a.Result, err = json.Marshal(res)
	}
	if err != nil {
		var jerr *jsonrpc.Error
		if !errors.As(err, &jerr) {
			jerr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		a.Code, a.Message = jerr.Code, jerr.Message
	}
	out, _ := json.Marshal(a)
	if err := g.storeDo(context.Background(), func(ctx context.Context) error { return r.mail.Post(ctx, "out."+box, out, answerWithin) }); err != nil {
		g.log.Warn("cannot hand a round's answer to the replica that took the retry", "error", err)
		return
	}
	r.announce("round " + box)
}

// roundFor takes the retry left under box and runs its round.
func (g *Gateway) roundFor(ctx context.Context, box string) (mcp.Result, error) {
	var in []byte
	// What went wrong goes to the log: the store's error may name its
	// address, and the client only needs to know to try again.
	var rq relayedRound
	err := g.storeDo(ctx, func(ctx context.Context) (err error) { in, err = g.relays.mail.Collect(ctx, "in."+box); return err })
	if err == nil {
		err = json.Unmarshal(in, &rq)
	}
	if err != nil {
		g.log.Warn("cannot read a retry another replica handed over", "error", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "the answer reached another replica than the one where the call waits, and could not be handed over; send it again"}
	}
	p := g.openParked(rq.State, rq.Subject, rq.Caller)
	if p == nil {
		return nil, noParkedCall
	}
	if err := p.take(rq.Responses); err != nil {
		return nil, err
	}
	return g.round(ctx, p)
}

// heard takes the replicas' announcements about rounds.
func (r *relays) heard(verb, rest string) {
	switch verb {
	case "resume":
		replica, box, _ := strings.Cut(rest, " ")
		if replica == r.g.sessions.replica && box != "" {
			go r.g.runRound(box)
		}
	case "round":
		wakeKept(&r.mu, r.waiting, rest)
	case "answers":
		go r.g.heardAnswers(rest)
	case "gone":
		replica, box, _ := strings.Cut(rest, " ")
		if replica != r.g.sessions.replica {
			return
		}
		r.mu.Lock()
		cancel := r.running[box]
		r.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	}
}

func (r *relays) announce(payload string) { r.g.sessions.announce(payload) }

// keep puts v under key in m, guarded by mu, and returns what takes it
// out.
func keep[V any](mu *sync.Mutex, m map[string]V, key string, v V) (drop func()) {
	mu.Lock()
	m[key] = v
	mu.Unlock()
	return func() {
		mu.Lock()
		delete(m, key)
		mu.Unlock()
	}
}

// wakeKept wakes the channel that keep put under key in m, guarded by mu,
// if there is one.
func wakeKept(mu *sync.Mutex, m map[string]chan struct{}, key string) {
	mu.Lock()
	ch := m[key]
	mu.Unlock()
	if ch != nil {
		wake(ch)
	}
}

// wake sends ch, a channel with room for one, a wake-up unless one waits
// there already. It never blocks, and a burst of wake-ups costs its
// receiver one turn.
func wake(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// storeDo runs f with a context bounded by storeTimeout.
func (g *Gateway) storeDo(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	return f(ctx)
}
