package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/store"
)

// formSchema is a form with a string, a choice, a list of choices, a
// number with a bound, a boolean, and a default.
const formSchema = `{"type":"object","properties":{
 "name":{"type":"string","title":"Your name"},
 "size":{"type":"string","enum":["s","m","l"]},
 "tags":{"type":"array","items":{"type":"string","enum":["red","blue"]}},
 "count":{"type":"integer","minimum":1},
 "urgent":{"type":"boolean"},
 "team":{"type":"string","default":"core"}},
 "required":["name","count"]}`

func (f *fixture) question(id, mode string, who airlock.Principal) {
	f.t.Helper()
	a := store.InputAsk{ID: id, Call: "call_" + id, Server: "w", Tool: "w__greet", Tenant: who.Tenant, User: who.User,
		Mode: mode, Message: "Tell me about " + id, Round: 1}
	if mode == "form" {
		a.Schema = json.RawMessage(formSchema)
	} else {
		a.URL, a.Domain = "https://auth.example.com/connect?state=abc", "auth.example.com"
	}
	if err := f.st.(store.Inputs).AskInput(context.Background(), a); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) input(id string) store.InputAsk {
	f.t.Helper()
	a, err := f.st.(store.Inputs).InputAsk(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return a
}

// TestInputs: a pending form is shown with its fields, for its principal
// only; an answer that does not fit is refused and shown again as typed,
// with what is wrong, and settles nothing; one that fits is kept with the
// form's defaults and audited as the console's; a second answer is a
// conflict; a link is accepted without content; another tenant's
// question is unknown.
func TestInputs(t *testing.T) {
	f := newFixture(t, airlock.Actor{Principal: acme, By: "ada"})
	f.question("inq_form", "form", acme)
	f.question("inq_link", "url", acme)
	f.question("inq_globex", "form", globex)

	_, body := f.get("/console/inputs")
	for _, want := range []string{"inq_form", "Tell me about inq_form", "Your name", `name="f.size"`, `value="blue"`, `name="f.urgent"`, `value="core"`, "auth.example.com"} {
		if !strings.Contains(body, want) {
			t.Errorf("the inputs page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "inq_globex") {
		t.Errorf("acme's inputs page shows globex's question")
	}
	token := f.token("/console/inputs")

	// Without the token nothing is answered.
	if code, _ := f.post("/console/inputs/inq_form/answer", url.Values{"action": {"decline"}}); code != 403 {
		t.Errorf("no token: %d", code)
	}
	for name, c := range map[string]struct {
		form url.Values
		want string
	}{
		"below the minimum": {url.Values{"f.name": {"Ada"}, "f.count": {"0"}}, "count"},
		"not a number":      {url.Values{"f.name": {"Ada"}, "f.count": {"many"}}, "not a whole number"},
		"required left out": {url.Values{"f.count": {"2"}}, "name"},
		"not a choice":      {url.Values{"f.name": {"Ada"}, "f.count": {"2"}, "f.size": {"xl"}}, "not one of its choices"},
		"not a list choice": {url.Values{"f.name": {"Ada"}, "f.count": {"2"}, "f.tags": {"green"}}, "not one of its choices"},
	} {
		c.form.Set("csrf", token)
		c.form.Set("action", "accept")
		code, body, h := f.postHeaders("/console/inputs/inq_form/answer", c.form)
		// The page shows what was typed again: kept from caches, as
		// every page is.
		if h.Get("Cache-Control") != "no-store" || h.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Errorf("%s: Cache-Control %q, Content-Type %q; want no-store, text/html", name, h.Get("Cache-Control"), h.Get("Content-Type"))
		}
		if code != http.StatusBadRequest || !strings.Contains(body, "That answer does not fit: ") || !strings.Contains(body, c.want) ||
			strings.Count(body, "does not fit") != 1 {
			t.Errorf("%s: %d\n%s", name, code, body)
		}
		if name == "below the minimum" && !strings.Contains(body, `value="Ada"`) {
			t.Errorf("%s: the typed answer is not shown again", name)
		}
	}
	if a := f.input("inq_form"); a.Status != store.InputPending {
		t.Fatalf("after answers that do not fit the question is %s", a.Status)
	}
	form := url.Values{"csrf": {token}, "action": {"accept"}, "f.name": {"Ada Lovelace"}, "f.count": {"3"},
		"f.size": {"m"}, "f.tags": {"red", "blue"}, "f.urgent": {"true"}}
	code, loc := f.post("/console/inputs/inq_form/answer", form)
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/inputs?done=") {
		t.Fatalf("answer: %d %s", code, loc)
	}
	a := f.input("inq_form")
	var ans struct {
		Action  string
		Content map[string]any
	}
	if err := json.Unmarshal(a.Answer, &ans); err != nil || a.Status != store.InputAnswered || a.AnsweredBy != "ada" || ans.Action != "accept" {
		t.Fatalf("answered: %+v (%v)", a, err)
	}
	want := map[string]any{"name": "Ada Lovelace", "count": float64(3), "size": "m", "tags": []any{"red", "blue"}, "urgent": true, "team": "core"}
	if got, _ := json.Marshal(ans.Content); string(got) != mustJSON(want) {
		t.Errorf("content = %s, want %s", got, mustJSON(want))
	}
	if code, _ := f.post("/console/inputs/inq_form/answer", url.Values{"csrf": {token}, "action": {"decline"}}); code != http.StatusConflict {
		t.Errorf("a second answer: %d", code)
	}
	if code, _ := f.post("/console/inputs/inq_link/answer", url.Values{"csrf": {token}, "action": {"maybe"}}); code != http.StatusBadRequest {
		t.Errorf("action maybe: %d", code)
	}
	if code, _ := f.post("/console/inputs/inq_link/answer", url.Values{"csrf": {token}, "action": {"accept"}}); code != http.StatusSeeOther {
		t.Errorf("accept the link: %d", code)
	}
	if a := f.input("inq_link"); a.Status != store.InputAnswered || string(a.Answer) != `{"action":"accept"}` {
		t.Errorf("the link: %+v", a)
	}
	if code, body := f.post("/console/inputs/inq_globex/answer", url.Values{"csrf": {token}, "action": {"decline"}}); code != 404 || strings.Contains(body, "globex") {
		t.Errorf("acme answers globex's question: %d\n%s", code, body)
	}
	if a := f.input("inq_globex"); a.Status != store.InputPending {
		t.Errorf("globex's question after acme's attempt: %s", a.Status)
	}
	events, err := f.st.Audit().Events(context.Background(), time.Now().Add(-time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range events {
		if ev.Event == store.EventInputAnswered && ev.Fields["source"] == "console" && ev.Fields["by"] == "ada" && ev.Fields["tenant"] == "acme" {
			n++
		}
		if b, _ := json.Marshal(ev); strings.Contains(string(b), "Lovelace") {
			t.Errorf("the audit trail keeps the answer's values: %s", b)
		}
	}
	if n != 2 {
		t.Errorf("%d input_answered events from the console by ada, want 2: %+v", n, events)
	}
	_, body = f.get("/console/inputs")
	if strings.Contains(body, "inq_form") || strings.Contains(body, "inq_link") {
		t.Errorf("answered questions are still shown:\n%s", body)
	}

	// An operator sees and answers globex's; that is audited as an
	// operator's act.
	op := serveOn(t, f.st, airlock.Actor{Principal: acme, By: "root", AllPrincipals: true, Source: "console"})
	if _, body := op.get("/console/inputs"); !strings.Contains(body, "inq_globex") {
		t.Errorf("the operator's inputs page lacks globex's question")
	}
	if code, _ := op.post("/console/inputs/inq_globex/answer", url.Values{"csrf": {op.token("/console/inputs")}, "action": {"cancel"}}); code != http.StatusSeeOther {
		t.Errorf("the operator cancels: %d", code)
	}
	if a := f.input("inq_globex"); a.Status != store.InputAnswered || a.AnsweredBy != "root" {
		t.Errorf("globex's question after the operator's cancel: %+v", a)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
