//lint:file-ignore SA1019 a server may still ask for a sample or its client's roots, which protocol version 2026-07-28 deprecates (SEP-2577); the gateway relays them to its client.

package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
)

// A 2026-07-28 client cannot be sent a request: when a server asks a
// question during its call, the host's call is parked, the client's
// tools/call ends with an input_required result that carries the
// question and a request state the gateway signed, and the client's
// retry, carrying the answer and the state, finds the parked call, hands
// it the answer and waits for what comes next: another question, or the
// result. Parked calls live in the gateway process that made them; a
// retry that reaches another replica is handed to it (rounds.go).
//
// A question keeps the name its server gave it (InputRequest.Key), so
// that the client answers under the server's own key; the client's
// responses under other keys are ignored. The questions of one
// input_required round of the server reach the client in one round too:
// the host puts them at once (Call.AskAtOnce), and the round takes as many
// as InputRequest.Together says, waiting a moment at most for the last. A client may send answers with
// its first request, before it was asked (SEP-2322 lets a client that
// knows the tool do so): an answer there under a question's key, of the
// kind the question takes, answers it when it is first asked, checked as
// any answer is. Each round's request state is new: it names the call and
// the round, so a state answers only the question it came with.

// inputKey names an input request that has no key of its server's (a
// 2025-11-25 server's own request, a sampling request put to a person).
const inputKey = "airlock_input"

// parkedPrefix starts the request state of a parked call; an approval
// question's state never does (it is base64 of a JSON object).
const parkedPrefix = "in."

// answerWithin is how long a parked call waits for its client's answer;
// then the question is cancelled and the call goes on without it.
const answerWithin = 10 * time.Minute

// maxParked bounds the calls in one gateway that wait for their clients'
// answers; past it, a question is declined.
const maxParked = 1000

// A parkedCall is a call of a 2026-07-28 client that the host runs in the
// background while its questions travel to the client.
type parkedCall struct {
	id              string
	subject, caller string       // exchange.subject, caller.key
	reg             *parkedCalls // where it is found once it has asked
	cancel          context.CancelFunc
	finish          finisher
	needs           func(reqs mcp.InputRequestMap, state string) mcp.Result // exchange.needs

	asks chan *parkedAsk // the host's questions, to the round that relays them
	done chan struct{}   // closed when the host's call has returned
	res  *airlock.Result // set before done is closed

	mu      sync.Mutex
	pending map[string]*parkedAsk // the questions the client was asked, by key, until it answers
	round   int                   // the rounds that asked the client, which a request state names
	given   mcp.InputResponseMap  // answers the client sent before it was asked, until it is
	early   int                   // questions answered from given
	poke    chan struct{}         // told when a question is answered from given
}

// A parkedAsk is one question of a parked call: what the client is asked,
// and where its answer goes.
type parkedAsk struct {
	key      string
	together int // the questions put with it at once, itself included
	params   mcp.InputRequest
	answer   chan mcp.InputResponse // buffered: one answer
}

// parkedCalls are a gateway's parked calls, by id.
type parkedCalls struct{ byID[*parkedCall] }

// add keeps c, unless it would be one too many; a call kept already
// stays.
func (p *parkedCalls) add(c *parkedCall) bool { return p.put(c.id, c, maxParked) }

// byID is a map of V by id, safe for concurrent use; the zero value is
// empty.
type byID[V comparable] struct {
	mu sync.Mutex
	m  map[string]V
}

// put keeps v under id, unless that would make more than max (max 0: no
// bound); v kept under id already stays.
func (b *byID[V]) put(id string, v V, max int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if old, ok := b.m[id]; ok && old == v {
		return true
	}
	if max > 0 && len(b.m) >= max {
		return false
	}
	if b.m == nil {
		b.m = map[string]V{}
	}
	b.m[id] = v
	return true
}

func (b *byID[V]) get(id string) V {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m[id]
}

func (b *byID[V]) remove(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, id)
}

// values returns what is kept now.
func (b *byID[V]) values() []V {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Collect(maps.Values(b.m))
}

// park runs the request ex in the background, with its server's
// questions sent to the client as input_required rounds, and returns the
// first round's answer. run makes the host's call (or get) with the
// askers it is given (and then ends its hold on the snapshot); it is given
// a context of the gateway's, since the request's ends with this round,
// which carries only the request's trace context (trace.go). finish turns the host's result into the answer of the round that takes
// it.
func (g *Gateway) park(ctx context.Context, ex *exchange, who caller, a asking,
	run func(ctx context.Context, k askers) *airlock.Result, finish finisher) (mcp.Result, error) {
	p, err := g.startParked(ctx, ex, who, a, run, finish)
	if err != nil {
		return nil, err
	}
	return g.round(ctx, p)
}

// startParked starts the request ex in the background as park does, and
// returns its parked call. A client that can be asked nothing has every
// question declined at once.
func (g *Gateway) startParked(ctx context.Context, ex *exchange, who caller, a asking,
	run func(ctx context.Context, k askers) *airlock.Result, finish finisher) (*parkedCall, error) {
	life, stop, ok := g.calls.enter(traceOnly(ctx))
	if !ok {
		return nil, shuttingDown
	}
	life, cancel := context.WithCancel(life)
	p := &parkedCall{id: rand.Text(), subject: ex.subject, caller: who.key(), cancel: cancel, finish: finish, needs: ex.needs,
		reg: &g.parked, asks: make(chan *parkedAsk), done: make(chan struct{}), given: maps.Clone(ex.responses), poke: make(chan struct{}, 1)}
	k := a.decline()
	if a.any() {
		k = a.via(p.ask)
	}
	k.atOnce = true
	go func() {
		p.res = run(life, k)
		cancel()
		stop()
		g.calls.leave()
		close(p.done)
		// A call that asked waits with its result for the client's next
		// round, if one is coming.
		if id, reg := p.id, p.reg; reg.get(id) != nil {
			time.AfterFunc(answerWithin, func() { reg.remove(id) })
		}
	}()
	return p, nil
}

// ask puts a question to the client through the next round, under key,
// with together-1 others, and waits for the answer: a cancelled question
// when none comes in time. A question the client answered in its first
// request is not put again.
func (p *parkedCall) ask(ctx context.Context, key string, together int, params mcp.InputRequest) (mcp.InputResponse, error) {
	if resp := p.answered(key, params); resp != nil {
		return resp, nil
	}
	if !p.reg.add(p) {
		return nil, fmt.Errorf("%d calls wait for their clients' answers already, as many as the gateway keeps", maxParked)
	}
	a := &parkedAsk{key: key, together: together, params: params, answer: make(chan mcp.InputResponse, 1)}
	timer := time.NewTimer(answerWithin)
	defer timer.Stop()
	select {
	case p.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
		return &mcp.ElicitResult{Action: airlock.AnswerCancel}, nil
	}
	select {
	case resp := <-a.answer:
		return resp, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
		return &mcp.ElicitResult{Action: airlock.AnswerCancel}, nil
	}
}

// answered is the answer the client gave with its first request to the
// question of key, if it is of the kind the question takes; nil if none.
// Each is used once, and only until the client is first asked.
func (p *parkedCall) answered(key string, params mcp.InputRequest) mcp.InputResponse {
	p.mu.Lock()
	defer p.mu.Unlock()
	resp := p.given[key]
	if resp == nil {
		return nil
	}
	delete(p.given, key)
	fits := false
	switch resp.(type) {
	case *mcp.ElicitResult:
		_, fits = params.(*mcp.ElicitParams)
	case *mcp.CreateMessageResult, *mcp.CreateMessageWithToolsResult:
		_, fits = params.(*mcp.CreateMessageParams)
	case *mcp.ListRootsResult:
		_, fits = params.(*mcp.ListRootsParams)
	}
	if !fits {
		return nil
	}
	p.early++
	wake(p.poke)
	return resp
}

// gatherWithin bounds how long a round waits for the rest of the
// questions the host puts at once with its first: they come at once, and
// one that does not come goes in a later round.
const gatherWithin = time.Second

// gather returns first and the questions put with it, keyed as the
// client is to answer them (a key given twice gets a suffix).
func (p *parkedCall) gather(first *parkedAsk) map[string]*parkedAsk {
	batch := map[string]*parkedAsk{}
	add := func(a *parkedAsk) {
		for key, n := a.key, 2; ; n++ {
			if batch[key] == nil {
				a.key, batch[key] = key, a
				return
			}
			key = fmt.Sprintf("%s.%d", a.key, n)
		}
	}
	add(first)
	wait := time.NewTimer(gatherWithin)
	defer wait.Stop()
	for {
		p.mu.Lock()
		have := len(batch) + p.early
		p.mu.Unlock()
		if have >= first.together {
			return batch
		}
		select {
		case a := <-p.asks:
			add(a)
		case <-p.poke:
		case <-wait.C:
			return batch
		case <-p.done:
			return batch
		}
	}
}

// round waits for what the parked call does next: a question, which ends
// the round with an input_required result, or the call's result. A
// client that goes away (its request ends) cancels the call.
func (g *Gateway) round(ctx context.Context, p *parkedCall) (mcp.Result, error) {
	select {
	case a := <-p.asks:
		return g.askRound(p, a), nil
	case <-p.done:
		g.parked.remove(p.id)
		return p.finish(ctx, p.res)
	case <-ctx.Done():
		p.cancel()
		g.parked.remove(p.id)
		return nil, ctx.Err()
	}
}

// askRound ends a round of p with the question a and those put with it.
func (g *Gateway) askRound(p *parkedCall, a *parkedAsk) mcp.Result {
	batch := p.gather(a)
	p.mu.Lock()
	p.pending, p.given, p.early = batch, nil, 0
	p.round++
	round := p.round
	p.mu.Unlock()
	reqs := mcp.InputRequestMap{}
	for key, a := range batch {
		reqs[key] = a.params
	}
	return p.needs(reqs, g.sealParked(p, round))
}

// resume is a round of a parked call: the retry of a 2026-07-28 client,
// whose request state names the call. The answer goes to the question the
// client was asked; then the round waits for what comes next.
func (g *Gateway) resume(ctx context.Context, ex *exchange, who caller) (mcp.Result, error) {
	p := g.openParked(ex.state, ex.subject, who.key())
	if p == nil {
		if st, ok := g.parkedState(ex.state, ex.subject, who.key()); ok && st.Replica != g.sessions.replica && g.relays.on() {
			return g.relayRound(ctx, ex, who, st)
		}
		return nil, noParkedCall
	}
	if err := p.take(ex.responses); err != nil {
		return nil, err
	}
	return g.round(ctx, p)
}

// noParkedCall answers a retry whose request state names no call.
var noParkedCall = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
	Message: "the request state names no call waiting for an answer here: it expired, was answered already, or is not this gateway's; make the call again"}

// take hands the client's answers to the questions it was asked.
func (p *parkedCall) take(responses mcp.InputResponseMap) error {
	p.mu.Lock()
	pending := p.pending
	p.pending = nil
	p.mu.Unlock()
	if len(pending) == 0 {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "this call's question was answered already; make the call again"}
	}
	for key, a := range pending {
		resp := responses[key] // and nothing else the client sent
		if resp == nil {
			resp = &mcp.ElicitResult{Action: airlock.AnswerCancel} // the client left the question unanswered
		}
		a.answer <- resp
	}
	return nil
}

// parkedState is what a parked call's request state says, signed with
// the gateway's key: the call and its round, for one tool and one caller,
// until it expires. A client can neither answer another's call nor replay
// a state, not even one of an earlier round of its own call.
type parkedState struct {
	Replica string `json:"g"` // the gateway process where the call waits
	Call    string `json:"p"`
	Round   int    `json:"r"`
	Tool    string `json:"t"`
	Caller  string `json:"c"`
	Expires int64  `json:"e"`
}

func (g *Gateway) sealParked(p *parkedCall, round int) string {
	body, _ := json.Marshal(parkedState{Replica: g.sessions.replica, Call: p.id, Round: round, Tool: p.subject, Caller: p.caller, Expires: time.Now().Add(answerWithin).Unix()})
	enc := base64.RawURLEncoding
	b := parkedPrefix + enc.EncodeToString(body)
	return b + "." + enc.EncodeToString(g.mac([]byte(b)))
}

// openParked returns the parked call a state names, if the gateway signed
// it for the subject tool and caller, it has not expired, and the call is still here,
// in the round the state was made for.
func (g *Gateway) openParked(state, tool, caller string) *parkedCall {
	st, ok := g.parkedState(state, tool, caller)
	if !ok {
		return nil
	}
	p := g.parked.get(st.Call)
	if p == nil || p.subject != tool || p.caller != caller {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.round != st.Round {
		return nil
	}
	return p
}

// parkedState reads a parked call's request state, if a gateway sharing
// the key signed it for the subject tool and caller and it has not
// expired.
func (g *Gateway) parkedState(state, tool, caller string) (parkedState, bool) {
	var st parkedState
	if !strings.HasPrefix(state, parkedPrefix) || len(state) > 1024 {
		return st, false
	}
	i := strings.LastIndexByte(state, '.')
	enc := base64.RawURLEncoding
	sum, err := enc.DecodeString(state[i+1:])
	if err != nil || !hmac.Equal(sum, g.mac([]byte(state[:i]))) {
		return st, false
	}
	body, err := enc.DecodeString(strings.TrimPrefix(state[:i], parkedPrefix))
	if err != nil {
		return st, false
	}
	if json.Unmarshal(body, &st) != nil || st.Tool != tool || st.Caller != caller || time.Now().Unix() > st.Expires {
		return st, false
	}
	return st, true
}

// parked reports whether ex is a round of a parked call.
func (ex *exchange) parked() bool {
	return strings.HasPrefix(ex.state, parkedPrefix)
}

// sampledMessage is a client's answer to a sampling request as the host
// takes it: one message. The SDK's clients answer with the form that may
// carry several content blocks.
func sampledMessage(resp mcp.InputResponse) (*mcp.CreateMessageResult, error) {
	switch r := resp.(type) {
	case *mcp.CreateMessageResult:
		return r, nil
	case *mcp.CreateMessageWithToolsResult:
		if len(r.Content) != 1 {
			return nil, fmt.Errorf("the gateway's client answered the sampling request with %d content blocks; one is taken", len(r.Content))
		}
		return &mcp.CreateMessageResult{Meta: r.Meta, Content: r.Content[0], Model: r.Model, Role: r.Role, StopReason: r.StopReason}, nil
	case *mcp.ElicitResult:
		if r.Action == airlock.AnswerCancel {
			return nil, errors.New("the gateway's client did not answer the sampling request in time")
		}
	}
	return nil, errors.New("the gateway's client did not answer the sampling request with a message")
}
