package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
)

// A question is one call's approval as the person at the client can be
// asked about it. The host's pipeline meets it through Approve, with the
// call's context: on the first round Approve notes the request the
// pipeline made (asked) and leaves it pending, so the call ends
// approval_required and the gateway asks; on the retry, which carries the
// person's answer, Approve gives that answer for exactly the request it was
// given for, and the pipeline records it and runs the call, or refuses it.
//
// A question belongs to one call and is used by one goroutine at a time.
type question struct {
	tool   string // the tool, prompt or URI, for the person and the log
	what   string // what is approved: "tool call", "prompt", "resource read"
	again  string // what a person does once it is approved: "call again with the same arguments", …
	subj   string // what the request is for (exchange.subject)
	caller string // whom the call is made for (caller.key)
	// canAsk reports whether the client declared form elicitation. It is
	// called only when the pipeline wants an approval: a 2026-07-28
	// client's capabilities are decoded from the request's _meta, a cost
	// most calls need not pay.
	canAsk func() bool
	answer *answer                  // the person's answer, on the retry; nil on the first round
	asked  *airlock.ApprovalRequest // the request the pipeline made, on the first round, if the client can be asked
}

// An answer is what the person said about one approval request: Allow,
// Deny, or "" (they dismissed the question, or the answer could not be
// trusted), which leaves the request pending.
type answer struct {
	approval string
	verdict  airlock.Verdict
}

type questionKey struct{}

func withQuestion(ctx context.Context, q *question) context.Context {
	return context.WithValue(ctx, questionKey{}, q)
}

// Approve implements airlock.Approver for the host a gateway serves: it
// answers for the call in ctx, when that call came through the gateway and
// its client was asked (see question), and otherwise leaves the request
// pending (airlock approvals approve ID).
func (g *Gateway) Approve(ctx context.Context, req airlock.ApprovalRequest) (airlock.Verdict, error) {
	q, _ := ctx.Value(questionKey{}).(*question)
	switch {
	case q == nil:
		return "", nil
	case q.answer != nil:
		if q.answer.approval == req.ID {
			return q.answer.verdict, nil
		}
		return "", nil
	case q.canAsk():
		q.asked = &req
	}
	return "", nil
}

var _ airlock.Approver = (*Gateway)(nil)

// A round is what became of a request's approval question, for the
// middleware around it (unasked).
type round struct {
	tool     string
	again    string
	asked    string // the approval request the question was about
	answered bool   // the call came back with an answer
}

type roundKey struct{}

// unasked turns the failure to ask a 2025-11-25 client (its elicitation
// failed, so the SDK's multi-round-trip middleware returns an error) into
// the answer a client that cannot be asked gets: the approval id, and how a
// person approves it; for a tool call as a tool result, for a prompts/get
// or resources/read as the JSON-RPC error of approval_required (access.go).
// The request stays pending.
func (g *Gateway) unasked(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call", "prompts/get", "resources/read":
		default:
			return next(ctx, method, req)
		}
		r := &round{}
		res, err := next(context.WithValue(ctx, roundKey{}, r), method, req)
		if err == nil || r.asked == "" || r.answered || ctx.Err() != nil {
			return res, err
		}
		msg := fmt.Sprintf("%s needs a person's approval, and the client could not ask (%s): run airlock approvals approve %s, then %s",
			r.tool, clip(err.Error()), r.asked, r.again)
		if who, cerr := g.callerOf(req.GetExtra()); cerr == nil {
			msg += g.hint(who, airlock.ApprovalRequired, "", r.asked)
		}
		if method != "tools/call" {
			return nil, refusal(airlock.ApprovalRequired, msg, r.asked, "")
		}
		return &mcp.CallToolResult{IsError: true, Content: text(msg),
			Meta: mcp.Meta{"airlock/status": string(airlock.ApprovalRequired), "airlock/approval_id": r.asked}}, nil
	}
}

// askedOf ends a round of the request ex: it records what the request did
// with its question q, and, when the pipeline wants an approval the
// client can be asked for, returns the question to end the request with.
func (g *Gateway) askedOf(ctx context.Context, ex *exchange, q *question, r *airlock.Result) (mcp.Result, bool) {
	noteRound(ctx, q)
	if r.Status == airlock.ApprovalRequired && q.answer == nil && q.asked != nil {
		return g.ask(ex, q), true
	}
	return nil, false
}

// noteRound records in ctx's round what call did with its question.
func noteRound(ctx context.Context, q *question) {
	r, _ := ctx.Value(roundKey{}).(*round)
	if r == nil {
		return
	}
	r.tool, r.again = q.tool, q.again
	if q.answer != nil {
		r.answered = true
	} else if q.asked != nil {
		r.asked = q.asked.ID
	}
}

// questionInput names the one input request of an approval question.
const questionInput = "airlock_approval"

// What an approval question is about, for the person asked.
const (
	whatCall   = "tool call"
	whatPrompt = "prompt"
	whatRead   = "resource read"
)

// question is the approval question of ex, made for who, about name (the
// tool, prompt or URI) and what (whatCall, whatPrompt, whatRead):
// whether its client can be asked, and, on a retry, the answer it carries.
// An answer is taken only with request state this gateway signed for this
// request's subject and this caller; any retry is the last round, whatever
// it carries, so a client is never asked twice about one request.
func (g *Gateway) question(ex *exchange, who caller, name, what string) *question {
	q := &question{tool: name, what: what, subj: ex.subject, caller: who.key(), canAsk: func() bool { return formElicitation(ex.caps()) }}
	switch what {
	case whatRead:
		q.again = "read " + clip(name) + " again"
	case whatPrompt:
		q.again = "get the prompt again with the same arguments"
	default:
		q.again = "call again with the same arguments"
	}
	if !ex.answered() {
		return q
	}
	q.answer = &answer{}
	id, ok := g.openState(ex.state, q.subj, q.caller)
	if !ok {
		g.log.Warn("approval answer refused: its request state is not the gateway's", "tool", clip(name))
		return q
	}
	q.answer.approval = id
	if res, ok := ex.responses[questionInput].(*mcp.ElicitResult); ok {
		// Only the form's own answer decides: approve true or false, or
		// declining the form. An accept without a yes or a no (approve
		// missing, or not a boolean) answers nothing, and the request
		// stays pending for a person, as when the form is dismissed.
		approve, answered := res.Content["approve"].(bool)
		switch {
		case res.Action == "accept" && answered && approve:
			q.answer.verdict = airlock.Allow
		case res.Action == "accept" && answered, res.Action == "decline":
			q.answer.verdict = airlock.Deny
		case res.Action == "accept":
			g.log.Warn("approval answer ignored: the form's approve is not true or false", "tool", clip(name), "approval", id)
		}
	}
	return q
}

// formElicitation reports whether a client declared form elicitation (a
// client that declared elicitation with neither mode takes forms).
func formElicitation(c *mcp.ClientCapabilities) bool {
	if c == nil || c.Elicitation == nil {
		return false
	}
	return c.Elicitation.Form != nil || c.Elicitation.URL == nil
}

// ask is the first round's answer to a request that needs approval, as
// ex's method answers: an input request, a form with the approval summary
// and where the request goes, and the signed state the retry must carry
// back.
func (g *Gateway) ask(ex *exchange, q *question) mcp.Result {
	a := q.asked
	msg := fmt.Sprintf("Approve this %s? (Airlock approval %s)\n\n%s\n\nIt runs on: %s\nThe approval is for this one call, with these arguments; it expires at %s.",
		q.what, a.ID, a.Summary, a.Target, a.ExpiresAt.UTC().Format(time.RFC3339))
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"approve": map[string]any{"type": "boolean", "title": "Approve this call",
				"description": "Yes runs the call once; no refuses it."},
		},
		"required": []string{"approve"},
	}
	return ex.needs(mcp.InputRequestMap{questionInput: &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: schema}},
		g.sealState(a.ID, q.subj, q.caller, a.ExpiresAt))
}

// The request state of a question names the approval request, for one
// request subject (a tool, a prompt, a URI read) and one caller, until the request expires, signed with the
// gateway's key: a client can neither forge an answer for another request
// nor replay one later, nor hand its question to another user to answer.
type questionState struct {
	Approval string `json:"a"`
	Tool     string `json:"t"`
	Caller   string `json:"c"`
	Expires  int64  `json:"e"`
}

func (g *Gateway) sealState(approval, tool, caller string, expires time.Time) string {
	body, _ := json.Marshal(questionState{Approval: approval, Tool: tool, Caller: caller, Expires: expires.Unix()})
	enc := base64.RawURLEncoding
	return enc.EncodeToString(body) + "." + enc.EncodeToString(g.mac(body))
}

// openState returns the approval request a state names, if the gateway
// signed it for the subject tool and caller and it has not expired.
func (g *Gateway) openState(state, tool, caller string) (string, bool) {
	enc := base64.RawURLEncoding
	b, s, ok := strings.Cut(state, ".")
	if !ok || len(state) > 1024 {
		return "", false
	}
	body, err1 := enc.DecodeString(b)
	sum, err2 := enc.DecodeString(s)
	if err1 != nil || err2 != nil || !hmac.Equal(sum, g.mac(body)) {
		return "", false
	}
	var st questionState
	if json.Unmarshal(body, &st) != nil || st.Tool != tool || st.Caller != caller || time.Now().Unix() > st.Expires {
		return "", false
	}
	return st.Approval, true
}

// checkState refuses a retry that answers a server's questions (answers
// under keys other than the approval question's) with a request state
// that is neither a waiting call's (parked.go checks those) nor an
// approval question's that this gateway signed for ex's subject and for
// who: run as a new request, it would hand answers meant for another
// request to a new one, and leave that one waiting. A retry that answers
// only the approval question goes on: a state not the gateway's approves
// nothing (question).
func (g *Gateway) checkState(ex *exchange, who caller) error {
	if ex.state == "" || ex.parked() {
		return nil
	}
	for key := range ex.responses {
		if key == questionInput {
			continue
		}
		if _, ok := g.openState(ex.state, ex.subject, who.key()); !ok {
			return noParkedCall
		}
		break
	}
	return nil
}

func (g *Gateway) mac(body []byte) []byte {
	m := hmac.New(sha256.New, g.key)
	m.Write(body)
	return m.Sum(nil)
}
