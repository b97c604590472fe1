package airlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/airlockhq/airlock/internal/upstream"
	"github.com/airlockhq/airlock/store"
)

// A server's question put to the host's own person (Options.Elicit) is
// also kept in the store while it is asked, when the store keeps input
// requests (store.Inputs): the operator console shows it and may answer
// it, and the first answer, the person's at hand or the console's, is the
// one the server is sent. A question put to a caller's own Elicitor
// (Call.Elicit: the gateway's client, airlock shell --json) is that
// caller's alone and is not kept.

// ErrAnsweredElsewhere is the cause (context.Cause) of an Elicitor's
// context that ended because the request was answered elsewhere (in the
// operator console) while the person was asked: the Elicitor may say so
// and return.
var ErrAnsweredElsewhere = errors.New("the input request was answered elsewhere")

// relay is the store that keeps req while it is asked, or nil: req is a
// form or URL elicitation asked of the host's own person, and the store
// keeps input requests.
func (a *asking) relay(req *InputRequest) store.Inputs {
	if a.q.call.Elicit != nil || a.h.opts.Elicit == nil || req.Kind != InputElicitation {
		return nil
	}
	inputs, _ := a.h.gov.store.(store.Inputs)
	return inputs
}

// elicitOnce asks the person req once, with elicit: when inputs keeps
// req, the answer may come from elsewhere, and the first answer is taken;
// try numbers the asking (a second try is a new record, with its
// Problem).
func (a *asking) elicitOnce(ctx context.Context, elicit Elicitor, inputs store.Inputs, req *InputRequest, try int) (*InputAnswer, error) {
	if inputs == nil {
		return elicit(ctx, req)
	}
	id := req.ID
	if try > 1 {
		id = fmt.Sprintf("%s.%d", req.ID, try)
	}
	who := a.q.snap.who
	ask := store.InputAsk{ID: id, Call: a.q.r.CallID, Server: req.Server, Tool: req.Tool, Tenant: who.Tenant,
		User: who.User, Mode: req.Mode, Message: req.Message, Schema: req.Schema, URL: req.URL,
		Domain: req.Domain, Round: req.Round, Problem: req.Problem, Asker: asker()}
	if err := inputs.AskInput(ctx, ask); err != nil {
		a.h.log.Warn("the input request cannot be kept for the console; it is asked here only", "request", id, "error", err)
		return elicit(ctx, req)
	}
	askCtx, settled := watchElsewhere(ctx, ErrAnsweredElsewhere, func(ctx context.Context) (*InputAnswer, bool) {
		return a.answeredElsewhere(ctx, inputs, id)
	})
	ans, err := elicit(askCtx, req)
	if elsewhere, ok := settled(); ok {
		return elsewhere, nil
	}
	// Answered here, or the call ended: the console may no longer answer,
	// unless it answered first.
	werr := inputs.WithdrawInput(context.WithoutCancel(ctx), id)
	if errors.Is(werr, store.ErrConflict) && ctx.Err() == nil {
		if elsewhere, ok := a.answeredElsewhere(ctx, inputs, id); ok {
			return elsewhere, nil
		}
	}
	return ans, err
}

// answeredElsewhere is the answer given to the request id elsewhere, if
// one was.
func (a *asking) answeredElsewhere(ctx context.Context, inputs store.Inputs, id string) (*InputAnswer, bool) {
	got, err := inputs.InputAsk(ctx, id)
	if err != nil || got.Status != store.InputAnswered {
		return nil, false
	}
	var ans struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if err := json.Unmarshal(got.Answer, &ans); err != nil {
		a.h.log.Warn("an input request's answer from elsewhere is not readable; it is ignored", "request", id, "error", err)
		return nil, false
	}
	by := got.AnsweredBy
	if by == "" {
		by = "a person"
	}
	return &InputAnswer{Action: ans.Action, Content: ans.Content, Reason: "answered elsewhere by " + by}, true
}

// CheckAnswer checks an answer to a form-mode elicitation whose requested
// schema is schema (InputRequest.Schema, store.InputAsk.Schema) as the
// host checks a person's answer before the server is sent it, and returns
// the content that would be sent: the answer's, with the form's defaults
// for what it leaves out; nil for a decline or a cancel.
func CheckAnswer(schema json.RawMessage, ans *InputAnswer) (map[string]any, error) {
	req := &InputRequest{Kind: InputElicitation, Mode: ElicitForm}
	if len(schema) > 0 {
		f, _, err := newForm(schema)
		if err != nil {
			return nil, err
		}
		req.form = f
	}
	return req.content(ans)
}

// ErrAnswerDoesNotFit is returned (wrapped, with what is wrong) by
// AnswerInput for an answer that does not fit the request's form: the
// person fixes it and answers again.
var ErrAnswerDoesNotFit = errors.New("the answer does not fit the form")

// ListInputs lists the questions of st's calls that f selects and as may
// see: its principal's own, or, with AllPrincipals, every principal's. A
// store that keeps no questions lists none.
func ListInputs(ctx context.Context, st store.Store, f store.InputFilter, as Actor) ([]store.InputAsk, error) {
	inputs, ok := st.(store.Inputs)
	if !ok {
		return nil, nil
	}
	if !as.AllPrincipals {
		if as.Principal.Tenant == "" || as.Principal.User == "" {
			return nil, fmt.Errorf("list input requests: no tenant and user to act for")
		}
		f.Tenant, f.User = as.Principal.Tenant, as.Principal.User
	}
	asks, err := inputs.InputAsks(ctx, f)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(asks, func(a store.InputAsk) bool { return orphaned(ctx, inputs, a) }), nil
}

// asker names this process in the questions it asks (store.InputAsk.Asker).
var asker = sync.OnceValue(upstream.Identity)

// orphaned reports whether a is a pending question whose asking process
// has ended (it was killed before it could withdraw it): nothing waits
// for its answer. It is withdrawn then, so that nobody answers into the
// void.
func orphaned(ctx context.Context, inputs store.Inputs, a store.InputAsk) bool {
	if a.Status != store.InputPending || a.Asker == "" || !upstream.Ended(a.Asker) {
		return false
	}
	if err := inputs.WithdrawInput(ctx, a.ID); err != nil && !errors.Is(err, store.ErrConflict) {
		return false // still pending: shown, and an answer is refused
	}
	return true
}

// InputAskFor returns st's question id if as may see it.
func InputAskFor(ctx context.Context, st store.Store, id string, as Actor) (store.InputAsk, error) {
	inputs, ok := st.(store.Inputs)
	if !ok {
		return store.InputAsk{}, fmt.Errorf("input request %s: %w", id, store.ErrNotFound)
	}
	a, err := inputs.InputAsk(ctx, id)
	if err != nil {
		return store.InputAsk{}, err
	}
	if !as.AllPrincipals && (a.Tenant != as.Principal.Tenant || a.User != as.Principal.User) {
		return store.InputAsk{}, fmt.Errorf("input request %s: %w", id, ErrOtherPrincipal)
	}
	return a, nil
}

// AnswerInput answers, for as, the question id of st that a call's server
// is asking its host's person: the answer is checked against the form as
// the host checks its person's (an answer that does not fit is
// ErrAnswerDoesNotFit, with what is wrong), and the asking host takes it
// within a moment and sends it to the server. A question already answered
// or withdrawn is store.ErrConflict. The answer is written to the audit
// trail (store.EventInputAnswered: the request, its call and principal,
// the action and who answered, and as.Source; the content's values stay
// with the call's own input_answer event, under audit.record_values).
func AnswerInput(ctx context.Context, st store.Store, id string, ans *InputAnswer, as Actor) error {
	a, err := InputAskFor(ctx, st, id, as)
	if err != nil {
		return err
	}
	if a.Status != store.InputPending {
		return fmt.Errorf("input request %s is %s: %w", id, a.Status, store.ErrConflict)
	}
	if a.Asker != "" && upstream.Ended(a.Asker) {
		orphaned(ctx, st.(store.Inputs), a)
		return fmt.Errorf("input request %s: the process that asked it has ended, and its call with it; nothing would take the answer: %w", id, store.ErrConflict)
	}
	var content map[string]any
	if a.Mode == ElicitURL {
		if len(ans.Content) > 0 {
			return fmt.Errorf("%w: a link is accepted, declined or cancelled, with nothing filled in", ErrAnswerDoesNotFit)
		}
		_, err = CheckAnswer(nil, ans)
	} else {
		content, err = CheckAnswer(a.Schema, ans)
	}
	if err != nil && !errors.Is(err, ErrAnswerDoesNotFit) {
		err = fmt.Errorf("%w: %v", ErrAnswerDoesNotFit, err)
	}
	if err != nil {
		return err
	}
	raw, err := json.Marshal(struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content,omitempty"`
	}{ans.Action, content})
	if err != nil {
		return err
	}
	return withTrail(ctx, st, func(t *auditTrail) error {
		if err := st.(store.Inputs).AnswerInput(ctx, id, raw, as.By); err != nil {
			return err
		}
		o := owned{"request", a.ID, a.Server, a.Tool, Principal{Tenant: a.Tenant, User: a.User}}
		if as.AllPrincipals {
			t.w.Append(ctx, operatorEvent(as, store.EventInputOperator, "answer", o))
		}
		fields := principalFields(as.sourced(map[string]any{"request": a.ID, "call": a.Call, "by": as.By,
			"action": ans.Action, "mode": a.Mode}), "", o.who)
		t.w.Append(ctx, store.Event{Event: store.EventInputAnswered, Server: a.Server, Tool: a.Tool, Fields: fields})
		return nil
	})
}
