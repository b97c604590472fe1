package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/store"
)

func testAuditAppendEvents(t *testing.T, h *harness) {
	a, b := h.store().Audit(), h.store().Audit()
	t0 := base()
	events := []store.Event{
		{Time: t0.Add(2 * time.Second), Event: store.EventResult, Server: "fs", Tool: "fs__write_file", Snapshot: "snap_1",
			Class: "ok", DurationMS: 12, Fields: map[string]any{"args_hash": "sha256:ab", "args_shape": map[string]any{"path": "string"}}},
		{Time: t0, Event: store.EventServerStart, Server: "fs"},
		{Time: t0.Add(time.Second).Add(999 * time.Nanosecond), Event: store.EventDecision, Server: "fs", Tool: "fs__write_file",
			Fields: map[string]any{"decision": "ask", "rule": "policy.rules[0]", "n": 3.5, "ok": true, "none": nil, "list": []any{"a", 1.0}}},
		{Time: t0.Add(time.Second), Event: store.EventApprovalRequested, Server: "fs"}, // ties with the one before
	}
	for i, e := range events {
		if err := []store.Audit{a, b}[i%2].Append(t.Context(), e); err != nil {
			t.Fatalf("Append(%s): %v", e.Event, err)
		}
	}
	stored := func(i int) store.Event {
		e := events[i]
		e.Time = store.UTC(e.Time)
		return e
	}
	for _, tc := range []struct {
		name  string
		since time.Time
		limit int
		want  []int
	}{
		{"all", time.Time{}, 0, []int{1, 2, 3, 0}},
		{"limit", time.Time{}, 2, []int{1, 2}},
		{"since is inclusive", t0.Add(time.Second), 0, []int{2, 3, 0}},
		{"since and limit", t0.Add(time.Second), 1, []int{2}},
		{"since the last", t0.Add(2 * time.Second), 5, []int{0}},
		{"since after the last", t0.Add(2*time.Second + time.Microsecond), 0, nil},
	} {
		var want []store.Event
		for _, i := range tc.want {
			want = append(want, stored(i))
		}
		got, err := b.Events(t.Context(), tc.since, tc.limit)
		if err != nil {
			t.Fatalf("Events(%s): %v", tc.name, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Events(%s) (-want +got):\n%s", tc.name, diff)
		}
	}
}

// testAuditTail checks Tail: the newest events, oldest first, how many
// were left out, and a position from which only events appended later
// are read, whichever handle appends them and whatever time they carry.
func testAuditTail(t *testing.T, h *harness) {
	a, b := h.store().Audit(), h.store().Audit()
	t0 := base()
	var events []store.Event
	for i := range 5 {
		// Appended out of time order: 0 is the oldest, 4 the newest.
		at := t0.Add(time.Duration([]int{3, 0, 4, 1, 2}[i]) * time.Second)
		events = append(events, store.Event{Time: at, Event: fmt.Sprintf("e%d", []int{3, 0, 4, 1, 2}[i])})
	}
	for i, e := range events {
		if err := []store.Audit{a, b}[i%2].Append(t.Context(), e); err != nil {
			t.Fatalf("Append(%s): %v", e.Event, err)
		}
	}
	names := func(events []store.Event) []string {
		var out []string
		for _, e := range events {
			out = append(out, e.Event)
		}
		return out
	}
	type page struct {
		Events  []string
		Omitted int
	}
	var next int64
	for _, tc := range []struct {
		name  string
		since time.Time
		limit int
		want  page
	}{
		{"all", time.Time{}, 0, page{[]string{"e0", "e1", "e2", "e3", "e4"}, 0}},
		{"the newest two", time.Time{}, 2, page{[]string{"e3", "e4"}, 3}},
		{"a limit above the count", time.Time{}, 9, page{[]string{"e0", "e1", "e2", "e3", "e4"}, 0}},
		{"the limit exactly", time.Time{}, 5, page{[]string{"e0", "e1", "e2", "e3", "e4"}, 0}},
		{"since and limit", t0.Add(time.Second), 1, page{[]string{"e4"}, 3}},
		{"since after the last", t0.Add(5 * time.Second), 1, page{nil, 0}},
	} {
		p, err := b.Tail(t.Context(), tc.since, 0, tc.limit)
		if err != nil {
			t.Fatalf("Tail(%s): %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, page{names(p.Events), p.Omitted}); diff != "" {
			t.Errorf("Tail(%s) (-want +got):\n%s", tc.name, diff)
		}
		if next != 0 && p.Next != next {
			t.Errorf("Tail(%s).Next = %d, want %d as before: nothing was appended", tc.name, p.Next, next)
		}
		next = p.Next
	}
	p, err := a.Tail(t.Context(), time.Time{}, 0, 1)
	if err != nil || len(p.Events) != 1 || !p.Events[0].Time.Equal(store.UTC(t0.Add(4*time.Second))) {
		t.Fatalf("Tail(1) = %+v, %v; want e4 with its time", p, err)
	}

	// Following: nothing new, then what either handle appends, even an
	// event older than everything before it.
	if p, err := a.Tail(t.Context(), time.Time{}, next, 0); err != nil || len(p.Events) != 0 || p.Next != next {
		t.Errorf("Tail after the newest = %+v, %v; want nothing, and the same position %d", p, err, next)
	}
	if err := b.Append(t.Context(), store.Event{Time: t0.Add(-time.Hour), Event: "late"}, store.Event{Time: t0.Add(time.Hour), Event: "new"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(t.Context(), store.Event{Time: t0.Add(2 * time.Hour), Event: "newer"}); err != nil {
		t.Fatal(err)
	}
	p, err = a.Tail(t.Context(), time.Time{}, next, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"late", "new", "newer"}, names(p.Events)); diff != "" || p.Next <= next {
		t.Errorf("Tail after %d: next %d, events (-want +got):\n%s", next, p.Next, diff)
	}
	q, err := a.Tail(t.Context(), time.Time{}, next, 2)
	if err != nil || !cmp.Equal(names(q.Events), []string{"new", "newer"}) || q.Omitted != 1 || q.Next != p.Next {
		t.Errorf("Tail after %d, limit 2 = %v omitted %d next %d, %v; want new, newer, one left out, next %d",
			next, names(q.Events), q.Omitted, q.Next, err, p.Next)
	}
	if q, err := a.Tail(t.Context(), t0, next, 0); err != nil || !cmp.Equal(names(q.Events), []string{"new", "newer"}) {
		t.Errorf("Tail since t0 after %d = %v, %v; want new and newer (late is older than since)", next, names(q.Events), err)
	}
}

func testAuditDefaultTime(t *testing.T, h *harness) {
	a := h.store().Audit()
	before := store.UTC(time.Now())
	if err := a.Append(t.Context(), store.Event{Event: store.EventCallSent}); err != nil {
		t.Fatalf("Append: %v", err)
	}
	got, err := a.Events(t.Context(), before, 0)
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	if len(got) != 1 || got[0].Time.After(time.Now()) {
		t.Errorf("an event appended without a time: got %+v, want one event at the time of Append", got)
	}
}

func testAuditRefuses(t *testing.T, h *harness) {
	a := h.store().Audit()
	for _, e := range []store.Event{
		{Time: base()},
		{Time: base(), Event: store.EventResult, Fields: map[string]any{"class": "ok"}},
		{Time: base(), Event: store.EventResult, Fields: map[string]any{"duration_ms": 1}},
		{Time: base(), Event: store.EventResult, Fields: map[string]any{"bad": func() {}}},
	} {
		if err := a.Append(t.Context(), e); err == nil {
			t.Errorf("Append(%+v): got nil error", e)
		}
	}
	got, err := a.Events(t.Context(), time.Time{}, 0)
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	if len(got) != 0 {
		t.Errorf("refused events were stored: %+v", got)
	}
}

// testAuditAppendBatch checks Append with several events: they are
// stored in order, in one go, and a batch with an event that cannot be
// stored leaves the trail as it was.
func testAuditAppendBatch(t *testing.T, h *harness) {
	a := h.store().Audit()
	t0 := base()
	if err := a.Append(t.Context()); err != nil {
		t.Errorf("Append of no events: %v", err)
	}
	before := store.UTC(time.Now())
	batch := []store.Event{
		{Time: t0, Event: store.EventDecision, Server: "fs", Tool: "fs__read", Fields: map[string]any{"decision": "allow"}},
		{Time: t0, Event: store.EventCallSent, Server: "fs", Tool: "fs__read"},
		{Time: t0, Event: store.EventResult, Server: "fs", Tool: "fs__read", Class: "ok", DurationMS: 3},
		{Event: store.EventArtifactStored, Server: "fs"}, // no time: now
	}
	if err := a.Append(t.Context(), batch...); err != nil {
		t.Fatal(err)
	}
	if !batch[3].Time.IsZero() {
		t.Error("Append changed the caller's events")
	}
	for _, bad := range [][]store.Event{
		{{Time: t0.Add(time.Hour), Event: store.EventResult}, {Time: t0.Add(time.Hour)}},
		{{Time: t0.Add(time.Hour), Event: store.EventResult}, {Time: t0.Add(time.Hour), Event: store.EventResult, Fields: map[string]any{"tool": "x"}}},
		{{Time: t0.Add(time.Hour), Event: store.EventResult}, {Time: t0.Add(time.Hour), Event: store.EventResult, Fields: map[string]any{"bad": func() {}}}},
	} {
		if err := a.Append(t.Context(), bad...); err == nil {
			t.Errorf("Append(%+v): got nil error", bad)
		}
	}
	got, err := h.store().Audit().Events(t.Context(), time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]store.Event(nil), batch...)
	for i := range want {
		want[i].Time = store.UTC(want[i].Time)
	}
	if len(got) == len(want) {
		if at := got[3].Time; at.Before(before) || at.After(time.Now()) {
			t.Errorf("an event appended without a time has time %v, want the time of Append", at)
		}
		want[3].Time = got[3].Time
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func testToolLists(t *testing.T, h *harness) {
	c, other := h.store().ToolLists(), h.store().ToolLists()
	t0 := base()
	if _, err := c.Get(t.Context(), "k", t0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get before Put = %v, want ErrNotFound", err)
	}
	lasting := store.ToolList{Key: "k", Tools: []byte(`[{"name":"a"}]`), Hash: "sha256:1", FetchedAt: t0}
	if err := c.Put(t.Context(), lasting); err != nil {
		t.Fatal(err)
	}
	got, err := other.Get(t.Context(), "k", t0.Add(24*time.Hour))
	if err != nil || string(got.Tools) != `[{"name":"a"}]` || got.Hash != "sha256:1" || !got.FetchedAt.Equal(t0) {
		t.Errorf("Get = %+v, %v", got, err)
	}
	expiring := store.ToolList{Key: "k", Tools: []byte(`[{"name":"b"}]`), Hash: "sha256:2", FetchedAt: t0, ExpiresAt: t0.Add(time.Minute)}
	if err := c.Put(t.Context(), expiring); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(t.Context(), "k", t0.Add(59*time.Second)); err != nil || got.Hash != "sha256:2" {
		t.Errorf("Get before expiry = %+v, %v", got, err)
	}
	if _, err := c.Get(t.Context(), "k", t0.Add(time.Minute)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get at expiry = %v, want ErrNotFound", err)
	}
	if err := c.Delete(t.Context(), "k"); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(t.Context(), store.ToolList{Key: "k"}); err == nil {
		t.Error("Put without tools succeeded")
	}
}
