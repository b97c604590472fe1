package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/store"
)

// ids returns the ids of records, in order.
func ids(rs []store.Record) []string {
	return idsOf(rs, func(r store.Record) string { return r.ID })
}

func testBeginGet(t *testing.T, h *harness) {
	j := h.store().Journal()
	in := intent("rec_1", base().Add(789*time.Nanosecond))
	in.Idempotent = true
	if err := j.Begin(t.Context(), in); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	got, err := j.Get(t.Context(), "rec_1")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	want := store.Record{Intent: in, Status: store.OutcomeOpen}
	want.CreatedAt = store.UTC(in.CreatedAt)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Get after Begin (-want +got):\n%s", diff)
	}
	if _, err := j.Get(t.Context(), "rec_2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of an unknown id: got %v, want ErrNotFound", err)
	}
}

func testBeginDefaultTime(t *testing.T, h *harness) {
	j := h.store().Journal()
	before := store.UTC(time.Now())
	if err := j.Begin(t.Context(), intent("rec_1", time.Time{})); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	after := time.Now()
	got, err := j.Get(t.Context(), "rec_1")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.CreatedAt.Before(before) || got.CreatedAt.After(after) {
		t.Errorf("CreatedAt of an intent begun without one: got %v, want between %v and %v", got.CreatedAt, before, after)
	}
}

func testBeginRefuses(t *testing.T, h *harness) {
	j := h.store().Journal()
	begin := func(in store.Intent) error { return j.Begin(t.Context(), in) }
	refused(t, "Begin of an intent", intent("rec_bad", base()), begin, []flaw[store.Intent]{
		{"no id", func(in *store.Intent) { in.ID = "" }},
		{"no server", func(in *store.Intent) { in.Server = "" }},
		{"no tool", func(in *store.Intent) { in.Tool = "" }},
		{"arguments that are not JSON", func(in *store.Intent) { in.Arguments = json.RawMessage(`{"path":`) }},
	})
	if _, err := j.Get(t.Context(), "rec_bad"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of a refused intent: got %v, want ErrNotFound", err)
	}

	first := intent("rec_1", base())
	if err := j.Begin(t.Context(), first); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	again := intent("rec_1", base().Add(time.Minute))
	again.Server = "other"
	if err := j.Begin(t.Context(), again); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Begin of a taken id: got %v, want ErrConflict", err)
	}
	got, err := j.Get(t.Context(), "rec_1")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if diff := cmp.Diff(first, got.Intent); diff != "" {
		t.Errorf("the first intent changed after a second Begin with its id (-want +got):\n%s", diff)
	}
}

var outcomes = []store.Outcome{store.OutcomeSucceeded, store.OutcomeFailed, store.OutcomeRejected, store.OutcomeUnknown}

func testExactlyOneOutcome(t *testing.T, h *harness) {
	a, b := h.store().Journal(), h.store().Journal()
	for _, o := range outcomes {
		id := "rec_" + string(o)
		if err := a.Begin(t.Context(), intent(id, base())); err != nil {
			t.Fatalf("Begin: %v", err)
		}
		before := store.UTC(time.Now())
		if err := a.End(t.Context(), id, o, "because "+string(o)); err != nil {
			t.Fatalf("End(%s): %v", o, err)
		}
		// Another handle, as another process, cannot end it again either.
		for _, j := range []store.Journal{a, b} {
			for _, again := range outcomes {
				if err := j.End(t.Context(), id, again, "again"); !errors.Is(err, store.ErrConflict) {
					t.Errorf("End(%s) after End(%s): got %v, want ErrConflict", again, o, err)
				}
			}
		}
		got, err := b.Get(t.Context(), id)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if got.Status != o || got.Detail != "because "+string(o) {
			t.Errorf("after End(%s): got status %q, detail %q; want %q, %q", o, got.Status, got.Detail, o, "because "+string(o))
		}
		if got.EndedAt.Before(before) || got.EndedAt.After(time.Now()) {
			t.Errorf("after End(%s): EndedAt %v is not the time of End", o, got.EndedAt)
		}
		if got.Resolved {
			t.Errorf("after End(%s): Resolved is true", o)
		}
		// The arguments stay for a person only while that is needed.
		if keep := o == store.OutcomeUnknown; (got.Arguments != nil) != keep {
			t.Errorf("after End(%s): Arguments %q; want them kept only for an unknown outcome", o, got.Arguments)
		} else if keep && !bytes.Equal(got.Arguments, intent(id, base()).Arguments) {
			t.Errorf("after End(%s): Arguments %q, want them as begun", o, got.Arguments)
		}
	}
}

func testEndRefuses(t *testing.T, h *harness) {
	j := h.store().Journal()
	if err := j.End(t.Context(), "rec_none", store.OutcomeSucceeded, ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("End of an unknown id: got %v, want ErrNotFound", err)
	}
	if err := j.Begin(t.Context(), intent("rec_1", base())); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	for _, o := range []store.Outcome{store.OutcomeOpen, "", "applied", "Succeeded"} {
		if err := j.End(t.Context(), "rec_1", o, ""); err == nil {
			t.Errorf("End(%q): got nil error", o)
		}
	}
	got, err := j.Get(t.Context(), "rec_1")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.Status != store.OutcomeOpen {
		t.Errorf("after End with invalid outcomes: got status %q, want open", got.Status)
	}
}

func testEndRace(t *testing.T, h *harness) {
	js := []store.Journal{h.store().Journal(), h.store().Journal()}
	for round := range 3 {
		id := fmt.Sprintf("rec_%d", round)
		if err := js[0].Begin(t.Context(), intent(id, base())); err != nil {
			t.Fatalf("Begin: %v", err)
		}
		errs := Race(16, func(i int) error {
			return js[i%2].End(t.Context(), id, outcomes[i%len(outcomes)], fmt.Sprint(i))
		})
		winner := oneWins(t, errs, store.ErrConflict, "Ends")
		got, err := js[1].Get(t.Context(), id)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if want := outcomes[winner%len(outcomes)]; got.Status != want || got.Detail != fmt.Sprint(winner) {
			t.Errorf("after racing Ends: got %q (%s), want the winner's %q (%d)", got.Status, got.Detail, want, winner)
		}
	}
}

// testEndLater: an outcome that EndLater took is read back at once through
// its handle, and by another once Close has returned; its done hears
// End's error; and it races other handles' Ends as End does.
func testEndLater(t *testing.T, h *harness) {
	st := h.store()
	j, b := st.Journal(), h.store().Journal()
	le, ok := j.(store.LaterEnder)
	if !ok {
		t.Fatalf("%T does not implement store.LaterEnder", j)
	}
	endLater := func(id string, o store.Outcome, detail string) <-chan error {
		done := make(chan error, 1)
		le.EndLater(id, o, detail, func(err error) { done <- err })
		return done
	}
	if err := j.Begin(t.Context(), intent("rec_1", base())); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	done := endLater("rec_1", store.OutcomeSucceeded, "done later")
	got, err := j.Get(t.Context(), "rec_1")
	if err != nil || got.Status != store.OutcomeSucceeded || got.Detail != "done later" {
		t.Errorf("Get right after EndLater: got %q (%q), %v; want succeeded (done later)", got.Status, got.Detail, err)
	}
	if err := <-done; err != nil {
		t.Errorf("EndLater's done: got %v, want nil", err)
	}
	if err := <-endLater("rec_1", store.OutcomeFailed, "again"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("EndLater of an ended intent: got %v, want ErrConflict", err)
	}
	if err := <-endLater("rec_none", store.OutcomeFailed, ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("EndLater of an unknown id: got %v, want ErrNotFound", err)
	}
	if got, _ := b.Get(t.Context(), "rec_1"); got.Status != store.OutcomeSucceeded || got.Detail != "done later" {
		t.Errorf("after a refused EndLater: got %q (%q), want the first outcome", got.Status, got.Detail)
	}

	// Racing Ends of another handle: one of all wins.
	if err := j.Begin(t.Context(), intent("rec_2", base())); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	dones := make([]<-chan error, 8)
	for i := range dones {
		dones[i] = endLater("rec_2", store.OutcomeSucceeded, fmt.Sprint("later ", i))
	}
	errs := Race(8, func(i int) error { return b.End(t.Context(), "rec_2", store.OutcomeFailed, fmt.Sprint("now ", i)) })
	for _, d := range dones {
		errs = append(errs, <-d)
	}
	oneWins(t, errs, store.ErrConflict, "Ends and EndLaters")

	// Close writes what EndLater took before it returns.
	if err := j.Begin(t.Context(), intent("rec_3", base())); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	le.EndLater("rec_3", store.OutcomeFailed, "closing", nil)
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got, err := b.Get(t.Context(), "rec_3"); err != nil || got.Status != store.OutcomeFailed {
		t.Errorf("another handle after Close: got %q, %v; want failed", got.Status, err)
	}
}

// testBeginLater: an intent that BeginLater made durable is read back at
// once through its handle, and ended there; Close writes what it took, so
// that another handle finds it, and RecoverOpen ends it once its writer is
// gone.
func testBeginLater(t *testing.T, h *harness) {
	st := h.store()
	j, other := st.Journal(), h.store().Journal()
	lb, ok := j.(store.LaterBeginner)
	if !ok {
		t.Fatalf("%T does not implement store.LaterBeginner", j)
	}
	in := intent("rec_1", base())
	if err := lb.BeginLater(t.Context(), in); err != nil {
		t.Fatalf("BeginLater: %v", err)
	}
	got, err := j.Get(t.Context(), "rec_1")
	if err != nil {
		t.Fatalf("Get right after BeginLater: %v", err)
	}
	if diff := cmp.Diff(store.Record{Intent: in, Status: store.OutcomeOpen}, got); diff != "" {
		t.Errorf("Get right after BeginLater (-want +got):\n%s", diff)
	}
	if err := j.End(t.Context(), "rec_1", store.OutcomeSucceeded, ""); err != nil {
		t.Errorf("End right after BeginLater: %v", err)
	}
	for _, id := range []string{"rec_2", "rec_3"} {
		if err := lb.BeginLater(t.Context(), intent(id, base())); err != nil {
			t.Fatalf("BeginLater: %v", err)
		}
	}
	if err := j.End(t.Context(), "rec_2", store.OutcomeFailed, "no"); err != nil {
		t.Errorf("End right after BeginLater: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	recs, err := other.Records(t.Context(), store.RecordFilter{All: true})
	if err != nil {
		t.Fatal(err)
	}
	var got3 []string
	for _, r := range recs {
		got3 = append(got3, r.ID+" "+string(r.Status))
	}
	if diff := cmp.Diff([]string{"rec_1 succeeded", "rec_2 failed", "rec_3 open"}, got3); diff != "" {
		t.Errorf("another handle's records after Close (-want +got):\n%s", diff)
	}
	if n, err := other.RecoverOpen(t.Context(), time.Now()); err != nil || n != 1 {
		t.Errorf("RecoverOpen after Close: %d, %v; want rec_3 ended", n, err)
	}
}

func testRecords(t *testing.T, h *harness) {
	j := h.store().Journal()
	t0 := base()
	// Created out of order, with a tie (r2, r4) that insertion order breaks.
	begin := []struct {
		id     string
		at     time.Duration
		tenant string
	}{
		{"r1", 3 * time.Second, "acme"},
		{"r2", 1 * time.Second, "acme"},
		{"r3", 2 * time.Second, "other"},
		{"r4", 1 * time.Second, "acme"},
		{"r5", 4 * time.Second, "other"},
	}
	for _, b := range begin {
		in := intent(b.id, t0.Add(b.at))
		in.Tenant = b.tenant
		if err := j.Begin(t.Context(), in); err != nil {
			t.Fatalf("Begin(%s): %v", b.id, err)
		}
	}
	for id, o := range map[string]store.Outcome{"r1": store.OutcomeUnknown, "r2": store.OutcomeUnknown, "r3": store.OutcomeSucceeded, "r5": store.OutcomeUnknown} {
		if err := j.End(t.Context(), id, o, ""); err != nil {
			t.Fatalf("End(%s): %v", id, err)
		}
	}
	if err := j.Resolve(t.Context(), "r2", store.ResolutionApplied, "", "ada"); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	checkLists(t, "Records", j.Records, ids, []listCase[store.RecordFilter]{
		{"default: unresolved unknown", store.RecordFilter{}, []string{"r1", "r5"}},
		{"all", store.RecordFilter{All: true}, []string{"r2", "r4", "r3", "r1", "r5"}},
		{"all, limit 2", store.RecordFilter{All: true, Limit: 2}, []string{"r2", "r4"}},
		{"all, tenant", store.RecordFilter{All: true, Tenant: "other"}, []string{"r3", "r5"}},
		{"tenant", store.RecordFilter{Tenant: "acme"}, []string{"r1"}},
		{"limit 1", store.RecordFilter{Limit: 1}, []string{"r1"}},
		{"no such tenant", store.RecordFilter{All: true, Tenant: "none"}, []string{}},
	})
	all, err := j.Records(t.Context(), store.RecordFilter{All: true})
	if err != nil {
		t.Fatalf("Records: %v", err)
	}
	for _, r := range all {
		got, err := j.Get(t.Context(), r.ID)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if diff := cmp.Diff(got, r); diff != "" {
			t.Errorf("Records and Get disagree on %s (-get +records):\n%s", r.ID, diff)
		}
	}
}

func testRecoverOpen(t *testing.T, h *harness) {
	a, b := h.store(), h.store()
	ja, jb := a.Journal(), b.Journal()
	for _, id := range []string{"a1", "a2"} {
		if err := ja.Begin(t.Context(), intent(id, base())); err != nil {
			t.Fatalf("Begin: %v", err)
		}
	}
	if err := ja.End(t.Context(), "a2", store.OutcomeSucceeded, "done"); err != nil {
		t.Fatalf("End: %v", err)
	}
	if err := jb.Begin(t.Context(), intent("b1", base())); err != nil {
		t.Fatalf("Begin: %v", err)
	}

	// Both writers are alive: nothing is theirs to end.
	for name, j := range map[string]store.Journal{"a": ja, "b": jb} {
		n, err := j.RecoverOpen(t.Context(), time.Now())
		if err != nil {
			t.Fatalf("RecoverOpen: %v", err)
		}
		if n != 0 {
			t.Errorf("RecoverOpen on %s while both writers live: ended %d intents, want 0", name, n)
		}
	}

	// a goes away with a1 in flight.
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	at := base().Add(time.Hour)
	n, err := jb.RecoverOpen(t.Context(), at)
	if err != nil {
		t.Fatalf("RecoverOpen: %v", err)
	}
	if n != 1 {
		t.Errorf("RecoverOpen after a writer closed: ended %d intents, want 1", n)
	}
	want := map[string]store.Outcome{"a1": store.OutcomeUnknown, "a2": store.OutcomeSucceeded, "b1": store.OutcomeOpen}
	for id, o := range want {
		r, err := jb.Get(t.Context(), id)
		if err != nil {
			t.Fatalf("Get(%s): %v (open must give every handle in one test the same database)", id, err)
		}
		if r.Status != o {
			t.Errorf("%s after RecoverOpen: got %q, want %q", id, r.Status, o)
		}
	}
	r, _ := jb.Get(t.Context(), "a1")
	if !r.EndedAt.Equal(at) || r.Detail == "" {
		t.Errorf("a1 after RecoverOpen: got EndedAt %v and detail %q, want %v and a reason", r.EndedAt, r.Detail, at)
	}
	if err := jb.End(t.Context(), "a1", store.OutcomeSucceeded, "late"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("End of a recovered intent: got %v, want ErrConflict", err)
	}
	if n, err := jb.RecoverOpen(t.Context(), at); err != nil || n != 0 {
		t.Errorf("RecoverOpen again: got %d, %v; want 0, nil", n, err)
	}
	// A third handle finds b's intent in flight, and a's ended.
	jc := h.store().Journal()
	if n, err := jc.RecoverOpen(t.Context(), at); err != nil || n != 0 {
		t.Errorf("RecoverOpen on a new handle while b lives: got %d, %v; want 0, nil", n, err)
	}
	checkLists(t, "Records", jc.Records, ids, []listCase[store.RecordFilter]{
		{"unresolved, after recovery", store.RecordFilter{}, []string{"a1"}},
	})
}

func testResolve(t *testing.T, h *harness) {
	j := h.store().Journal()
	unknownOKOpen(t, j)
	for _, r := range []store.Resolution{"", "applied ", "maybe", "Applied"} {
		if err := j.Resolve(t.Context(), "unk", r, "", "ada"); err == nil {
			t.Errorf("Resolve(%q): got nil error", r)
		}
	}
	if err := j.Resolve(t.Context(), "none", store.ResolutionApplied, "", "ada"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Resolve of an unknown id: got %v, want ErrNotFound", err)
	}
	for _, id := range []string{"ok", "open"} {
		if err := j.Resolve(t.Context(), id, store.ResolutionApplied, "", "ada"); !errors.Is(err, store.ErrConflict) {
			t.Errorf("Resolve of a %s record: got %v, want ErrConflict", id, err)
		}
	}

	before := store.UTC(time.Now())
	if err := j.Resolve(t.Context(), "unk", store.ResolutionNotApplied, "checked the tracker", "ada"); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	got, err := j.Get(t.Context(), "unk")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if !got.Resolved || got.Resolution != store.ResolutionNotApplied || got.Note != "checked the tracker" ||
		got.ResolvedBy != "ada" || got.Status != store.OutcomeUnknown {
		t.Errorf("after Resolve: got %+v", got)
	}
	if got.ResolvedAt.Before(before) || got.ResolvedAt.After(time.Now()) {
		t.Errorf("ResolvedAt %v is not the time of Resolve", got.ResolvedAt)
	}
	for _, r := range []store.Resolution{store.ResolutionApplied, store.ResolutionNotApplied} {
		if err := j.Resolve(t.Context(), "unk", r, "again", "bob"); !errors.Is(err, store.ErrConflict) {
			t.Errorf("second Resolve(%s): got %v, want ErrConflict", r, err)
		}
	}
	again, _ := j.Get(t.Context(), "unk")
	if diff := cmp.Diff(got, again); diff != "" {
		t.Errorf("a refused second Resolve changed the record (-before +after):\n%s", diff)
	}
}

func testResolveRace(t *testing.T, h *harness) {
	js := []store.Journal{h.store().Journal(), h.store().Journal()}
	if err := js[0].Begin(t.Context(), intent("unk", base())); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if err := js[0].End(t.Context(), "unk", store.OutcomeUnknown, "timeout"); err != nil {
		t.Fatalf("End: %v", err)
	}
	errs := Race(16, func(i int) error {
		res := store.ResolutionApplied
		if i%3 == 0 {
			res = store.ResolutionNotApplied
		}
		return js[i%2].Resolve(t.Context(), "unk", res, fmt.Sprint(i), "ada")
	})
	ok, conflicts := count(t, errs, store.ErrConflict)
	if ok != 1 || conflicts != len(errs)-1 {
		t.Errorf("16 racing Resolves: got %d nil and %d ErrConflict, want 1 and 15", ok, conflicts)
	}
}

// testLateAnswer: a late answer is kept on an unknown record, once, as
// evidence: the outcome stays unknown and a person still resolves it.
func testLateAnswer(t *testing.T, h *harness) {
	j := h.store().Journal()
	unknownOKOpen(t, j)
	at := base().Add(time.Minute)
	if err := j.LateAnswer(t.Context(), "none", "succeeded", at); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LateAnswer of an unknown id: got %v, want ErrNotFound", err)
	}
	for _, id := range []string{"ok", "open"} {
		if err := j.LateAnswer(t.Context(), id, "succeeded", at); !errors.Is(err, store.ErrConflict) {
			t.Errorf("LateAnswer of a %s record: got %v, want ErrConflict", id, err)
		}
	}
	if err := j.LateAnswer(t.Context(), "unk", "succeeded: done", at); err != nil {
		t.Fatalf("LateAnswer: %v", err)
	}
	if err := j.LateAnswer(t.Context(), "unk", "isError: other", at.Add(time.Second)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a second LateAnswer: got %v, want ErrConflict", err)
	}
	got, err := j.Get(t.Context(), "unk")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.LateAnswer != "succeeded: done" || !got.LateAnswerAt.Equal(store.UTC(at)) || got.Status != store.OutcomeUnknown || got.Resolved {
		t.Errorf("after LateAnswer: got %+v", got)
	}
	// Still a person's to resolve, and listed as such.
	checkLists(t, "Records", j.Records, ids, []listCase[store.RecordFilter]{
		{"unresolved", store.RecordFilter{}, []string{"unk"}},
	})
	if err := j.Resolve(t.Context(), "unk", store.ResolutionApplied, "the late answer says so", "ada"); err != nil {
		t.Errorf("Resolve after a late answer: %v", err)
	}
}

// testRecordsByCallID: a call id selects the records of that call, in
// the order they were begun, whatever their status, with the tenant and
// user filters still applied.
func testRecordsByCallID(t *testing.T, h *harness) {
	j := h.store().Journal()
	unknownOKOpen(t, j)
	// An idempotent call whose outcome was unknown, sent once more.
	retry := intent("unk_retry", base().Add(time.Second))
	retry.CallID = "call_unk"
	bare := intent("bare", base())
	bare.CallID = ""
	for _, in := range []store.Intent{retry, bare} {
		if err := j.Begin(t.Context(), in); err != nil {
			t.Fatalf("Begin(%s): %v", in.ID, err)
		}
	}
	checkLists(t, "Records", j.Records, ids, []listCase[store.RecordFilter]{
		{"ended succeeded", store.RecordFilter{CallID: "call_ok"}, []string{"ok"}},
		{"open", store.RecordFilter{CallID: "call_open"}, []string{"open"}},
		{"ended unknown, then sent again", store.RecordFilter{CallID: "call_unk"}, []string{"unk", "unk_retry"}},
		{"limit 1", store.RecordFilter{CallID: "call_unk", Limit: 1}, []string{"unk"}},
		{"with All", store.RecordFilter{CallID: "call_ok", All: true}, []string{"ok"}},
		{"of the tenant", store.RecordFilter{CallID: "call_ok", Tenant: "acme", User: "ada"}, []string{"ok"}},
		{"of another tenant", store.RecordFilter{CallID: "call_unk", Tenant: "other"}, []string{}},
		{"of another user", store.RecordFilter{CallID: "call_unk", User: "bob"}, []string{}},
		{"no such call", store.RecordFilter{CallID: "call_none"}, []string{}},
	})
	got, err := j.Records(t.Context(), store.RecordFilter{CallID: "call_ok"})
	if err != nil || len(got) != 1 {
		t.Fatalf("Records by call id: %+v, %v; want one record", got, err)
	}
	want, err := j.Get(t.Context(), "ok")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("Records by call id and Get disagree (-get +records):\n%s", diff)
	}
}

// unknownOKOpen begins three records: "unk" ended unknown, "ok" ended
// succeeded, and "open".
func unknownOKOpen(t *testing.T, j store.Journal) {
	t.Helper()
	for id, o := range map[string]store.Outcome{"unk": store.OutcomeUnknown, "ok": store.OutcomeSucceeded, "open": ""} {
		if err := j.Begin(t.Context(), intent(id, base())); err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if o != "" {
			if err := j.End(t.Context(), id, o, ""); err != nil {
				t.Fatalf("End: %v", err)
			}
		}
	}
}
