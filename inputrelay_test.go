package airlock_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/internal/upstream"
	"github.com/airlockhq/airlock/store"
)

// pendingInput waits for the one input request pending in h's store.
func pendingInput(t *testing.T, h *airlock.Host) store.InputAsk {
	t.Helper()
	inputs := h.Store().(store.Inputs)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		asks, err := inputs.InputAsks(context.Background(), store.InputFilter{Status: store.InputPending})
		if err != nil {
			t.Fatal(err)
		}
		if len(asks) == 1 {
			return asks[0]
		}
		if len(asks) > 1 {
			t.Fatalf("%d input requests pending, want 1: %+v", len(asks), asks)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no input request was kept in the store")
	return store.InputAsk{}
}

// TestElicitAnsweredElsewhere: while the host's own person is asked a
// form, the store keeps it; an answer given there (as the console gives
// it) reaches the server, checked, with the form's defaults, and the
// person's Elicitor is told that it was answered elsewhere.
func TestElicitAnsweredElsewhere(t *testing.T) {
	eachEra(t, func(t *testing.T, version string) {
		cause := make(chan error, 1)
		wait := func(ctx context.Context, _ *airlock.InputRequest) (*airlock.InputAnswer, error) {
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return nil, ctx.Err()
		}
		h := openAsks(t, askConfig(t, version, ""), &airlock.Options{Elicit: wait})
		done := make(chan *airlock.Result, 1)
		go func() { done <- call(t, h, "form", `{}`) }()
		ask := pendingInput(t, h)
		if !strings.HasPrefix(ask.Call, "call_") || ask.Tool != "form" || ask.Server != "asks" || ask.Mode != "form" ||
			ask.Message != "Who are you?" || ask.Round != 1 || !strings.HasPrefix(ask.ID, "inq_") {
			t.Errorf("kept request = %+v", ask)
		}
		fields, err := airlock.FormFields(ask.Schema)
		if err != nil || len(fields) == 0 {
			t.Fatalf("the kept schema's fields = %+v (%v)", fields, err)
		}
		inputs := h.Store().(store.Inputs)
		if err := inputs.AnswerInput(context.Background(), ask.ID, json.RawMessage(`{"action":"accept","content":{"age":41}}`), "ops"); err != nil {
			t.Fatal(err)
		}
		var r *airlock.Result
		select {
		case r = <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("the call did not take the answer given elsewhere")
		}
		wantStatus(t, r, airlock.OK)
		if ask.Call != r.CallID {
			t.Errorf("kept request's call = %q, want the call's %q", ask.Call, r.CallID)
		}
		if want := `accept {"age":41,"color":"green","name":"John Doe","score":95.5}`; r.Content != want {
			t.Errorf("the server saw %q, want %q", r.Content, want)
		}
		if got := <-cause; !errors.Is(got, airlock.ErrAnsweredElsewhere) {
			t.Errorf("the Elicitor's context ended with %v, want ErrAnsweredElsewhere", got)
		}
		if len(r.Inputs) != 1 || r.Inputs[0].Reason != "answered elsewhere by ops" {
			t.Errorf("inputs = %+v, want the answer given elsewhere, by ops", r.Inputs)
		}
	})
}

// TestElicitAnsweredHere: the person at hand answers first; the kept
// request is withdrawn and no later answer is taken.
func TestElicitAnsweredHere(t *testing.T) {
	p := &person{answers: []*airlock.InputAnswer{accept(map[string]any{"age": 3})}}
	h := openAsks(t, askConfig(t, "2025-11-25", ""), &airlock.Options{Elicit: p.elicit})
	r := call(t, h, "form", `{}`)
	wantStatus(t, r, airlock.OK)
	if !strings.HasPrefix(r.Content, `accept {"age":3`) {
		t.Errorf("the server saw %q", r.Content)
	}
	inputs := h.Store().(store.Inputs)
	asks, err := inputs.InputAsks(context.Background(), store.InputFilter{})
	if err != nil || len(asks) != 1 || asks[0].Status != store.InputWithdrawn || asks[0].ID != r.Inputs[0].ID {
		t.Fatalf("kept requests = %+v (%v), want the one asked, withdrawn", asks, err)
	}
	if err := inputs.AnswerInput(context.Background(), asks[0].ID, json.RawMessage(`{"action":"decline"}`), "ops"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a late answer: %v, want ErrConflict", err)
	}
}

// TestElicitOwnElicitorNotKept: a question put to a call's own Elicitor
// (the gateway's client, a shell --json caller) is that caller's: the
// store does not keep it.
func TestElicitOwnElicitorNotKept(t *testing.T) {
	h := openAsks(t, askConfig(t, "2025-11-25", ""), &airlock.Options{Elicit: (&person{answers: []*airlock.InputAnswer{{Action: airlock.AnswerDecline}}}).elicit})
	p := &person{answers: []*airlock.InputAnswer{accept(map[string]any{"age": 7})}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := h.Call(ctx, h.Snapshot(), airlock.Call{ID: "c2", Name: "form", Elicit: p.elicit})
	wantStatus(t, r, airlock.OK)
	asks, err := h.Store().(store.Inputs).InputAsks(ctx, store.InputFilter{})
	if err != nil || len(asks) != 0 {
		t.Errorf("kept requests = %+v (%v), want none", asks, err)
	}
}

// TestCheckAnswer: an answer is checked against the form as the host
// checks its person's, with the form's defaults filled in.
func TestCheckAnswer(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"age":{"type":"integer","minimum":0},"name":{"type":"string","default":"Ada"}},"required":["age"]}`)
	got, err := airlock.CheckAnswer(schema, accept(map[string]any{"age": 5}))
	if err != nil || got["age"] != float64(5) || got["name"] != "Ada" {
		t.Errorf("CheckAnswer = %v (%v)", got, err)
	}
	for _, bad := range []*airlock.InputAnswer{accept(map[string]any{"age": -1}), accept(map[string]any{}), {Action: "maybe"}} {
		if _, err := airlock.CheckAnswer(schema, bad); err == nil {
			t.Errorf("CheckAnswer(%+v) took it", bad)
		}
	}
	if got, err := airlock.CheckAnswer(schema, &airlock.InputAnswer{Action: airlock.AnswerDecline}); err != nil || got != nil {
		t.Errorf("a decline: %v (%v)", got, err)
	}
}

// TestQuestionOfAnEndedProcess: a question whose asking process ended
// (killed before it could withdraw it) is withdrawn when the questions are
// listed, and an answer to it is refused, saying why; a question of a
// process that runs, or of another machine, stays.
func TestQuestionOfAnEndedProcess(t *testing.T) {
	st, err := airlock.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	inputs := st.(store.Inputs)
	self := upstream.Identity()
	if self == "" {
		t.Fatal("this process cannot be named: no /proc")
	}
	host, _ := os.Hostname()
	ended := fmt.Sprintf("%s/%d/1", host, os.Getpid()) // this pid, another start: a process that ended
	ctx := context.Background()
	for id, asker := range map[string]string{"inq_ended": ended, "inq_ended2": ended, "inq_live": self, "inq_elsewhere": "other-machine/1/1", "inq_unknown": ""} {
		if err := inputs.AskInput(ctx, store.InputAsk{ID: id, Call: "call_x", Server: "s", Tool: "t", Tenant: "acme", User: "ada",
			Mode: "form", Message: "Name?", Round: 1, Asker: asker}); err != nil {
			t.Fatal(err)
		}
	}
	ops := airlock.Actor{AllPrincipals: true, By: "ops"}
	if err := airlock.AnswerInput(ctx, st, "inq_ended2", &airlock.InputAnswer{Action: airlock.AnswerDecline}, ops); !errors.Is(err, store.ErrConflict) ||
		!strings.Contains(err.Error(), "the process that asked it has ended") {
		t.Errorf("answering the ended process's question = %v, want a conflict that says why", err)
	}
	asks, err := airlock.ListInputs(ctx, st, store.InputFilter{Status: store.InputPending}, ops)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range asks {
		ids = append(ids, a.ID)
	}
	slices.Sort(ids)
	if want := []string{"inq_elsewhere", "inq_live", "inq_unknown"}; !slices.Equal(ids, want) {
		t.Errorf("pending = %v, want %v", ids, want)
	}
	for _, id := range []string{"inq_ended", "inq_ended2"} {
		if a, err := inputs.InputAsk(ctx, id); err != nil || a.Status != store.InputWithdrawn {
			t.Errorf("%s = %+v, %v; want it withdrawn", id, a, err)
		}
	}
}
