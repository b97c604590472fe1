package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/store"
)

// inputs returns a handle's input requests, failing the test if the
// backend keeps none.
func (h *harness) inputs() store.Inputs { return part[store.Inputs](h) }

// inputAsk is a form request id of acme/ada, asked at created.
func inputAsk(id string, created time.Time) store.InputAsk {
	return store.InputAsk{ID: id, Call: "call_" + id, Server: "w", Tool: "w__deploy", Tenant: "acme", User: "ada",
		Mode: "form", Message: "Which environment? caf\u00e9",
		Schema: json.RawMessage(`{"type":"object","properties":{"env":{"type":"string","enum":["staging","prod"]}},"required":["env"]}`),
		Round:  2, Problem: "env: missing", CreatedAt: created}
}

// testInputAskAnswer: a request is kept as given, pending, listed by
// status and principal, answered once, and then not withdrawn.
func testInputAskAnswer(t *testing.T, h *harness) {
	in := h.inputs()
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	a := inputAsk("inq_1", t0)
	if err := in.AskInput(t.Context(), a); err != nil {
		t.Fatalf("AskInput: %v", err)
	}
	b := inputAsk("inq_2", t0.Add(time.Second))
	b.Tenant, b.Mode, b.Schema, b.URL, b.Domain = "globex", "url", nil, "https://example.com/authorize?x=1", "example.com"
	if err := in.AskInput(t.Context(), b); err != nil {
		t.Fatalf("AskInput of a URL request: %v", err)
	}
	got, err := in.InputAsk(t.Context(), "inq_1")
	want := a
	want.Status = store.InputPending
	if err != nil {
		t.Fatalf("InputAsk: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("InputAsk (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		f    store.InputFilter
		want []string
	}{
		{store.InputFilter{}, []string{"inq_1", "inq_2"}},
		{store.InputFilter{Status: store.InputPending, Tenant: "acme", User: "ada"}, []string{"inq_1"}},
		{store.InputFilter{Tenant: "globex"}, []string{"inq_2"}},
		{store.InputFilter{Status: store.InputAnswered}, nil},
	} {
		list, err := in.InputAsks(t.Context(), c.f)
		var ids []string
		for _, x := range list {
			ids = append(ids, x.ID)
		}
		if err != nil || !cmp.Equal(ids, c.want) {
			t.Errorf("InputAsks(%+v) = %v, %v; want %v", c.f, ids, err, c.want)
		}
	}

	answer := json.RawMessage(`{"action":"accept","content":{"env":"staging"}}`)
	if err := in.AnswerInput(t.Context(), "inq_1", answer, "ada"); err != nil {
		t.Fatalf("AnswerInput: %v", err)
	}
	got, _ = in.InputAsk(t.Context(), "inq_1")
	if got.Status != store.InputAnswered || got.AnsweredBy != "ada" || got.SettledAt.IsZero() {
		t.Errorf("after AnswerInput: %+v", got)
	}
	var a1, a2 any
	json.Unmarshal(answer, &a1)
	json.Unmarshal(got.Answer, &a2)
	if !cmp.Equal(a1, a2) {
		t.Errorf("the answer kept is %s, want %s", got.Answer, answer)
	}
	for name, err := range map[string]error{
		"AnswerInput again": in.AnswerInput(t.Context(), "inq_1", answer, "eve"),
		"WithdrawInput":     in.WithdrawInput(t.Context(), "inq_1"),
	} {
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("%s of an answered request: %v, want ErrConflict", name, err)
		}
	}
	if err := in.WithdrawInput(t.Context(), "inq_2"); err != nil {
		t.Fatalf("WithdrawInput: %v", err)
	}
	// A URL-mode question's link (which may carry a one-time token) is
	// not kept once the question is settled; its domain is.
	if got, err := in.InputAsk(t.Context(), "inq_2"); err != nil || got.URL != "" || got.Domain != "example.com" || got.Mode != "url" {
		t.Errorf("a settled URL request = %+v, %v; want its link gone and its domain kept", got, err)
	}
	if err := in.AnswerInput(t.Context(), "inq_2", answer, "eve"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("AnswerInput of a withdrawn request: %v, want ErrConflict", err)
	}
}

// testInputRefuses: a taken id, a bad request and an unknown id are
// refused.
func testInputRefuses(t *testing.T, h *harness) {
	in := h.inputs()
	a := inputAsk("inq_1", time.Time{})
	if err := in.AskInput(t.Context(), a); err != nil {
		t.Fatalf("AskInput: %v", err)
	}
	if got, err := in.InputAsk(t.Context(), "inq_1"); err != nil || time.Since(got.CreatedAt) > time.Minute {
		t.Errorf("a zero CreatedAt: %v, %v; want now", got.CreatedAt, err)
	}
	if err := in.AskInput(t.Context(), a); !errors.Is(err, store.ErrConflict) {
		t.Errorf("AskInput of a taken id: %v, want ErrConflict", err)
	}
	bad := inputAsk("inq_2", time.Time{})
	bad.Mode = "sampling"
	if err := in.AskInput(t.Context(), bad); err == nil {
		t.Error("AskInput of mode sampling: nil error")
	}
	for name, err := range map[string]error{
		"InputAsk":      func() error { _, err := in.InputAsk(t.Context(), "inq_none"); return err }(),
		"AnswerInput":   in.AnswerInput(t.Context(), "inq_none", json.RawMessage(`{}`), "ada"),
		"WithdrawInput": in.WithdrawInput(t.Context(), "inq_none"),
	} {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of an unknown id: %v, want ErrNotFound", name, err)
		}
	}
	if err := in.AnswerInput(t.Context(), "inq_1", json.RawMessage(`{"action":`), "ada"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("AnswerInput with an answer that is not JSON: %v", err)
	}
}

// testInputRace: of an answer and a withdrawal racing from many handles,
// exactly one settles the request.
func testInputRace(t *testing.T, h *harness) {
	const n = 8
	handles := parts[store.Inputs](h, n)
	if err := handles[0].AskInput(t.Context(), inputAsk("inq_1", time.Time{})); err != nil {
		t.Fatal(err)
	}
	errs := Race(n, func(i int) error {
		if i%2 == 0 {
			return handles[i].WithdrawInput(t.Context(), "inq_1")
		}
		return handles[i].AnswerInput(t.Context(), "inq_1", json.RawMessage(`{"action":"decline"}`), "ada")
	})
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("racer %d: %v", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d racers settled one request, want 1", won)
	}
}
