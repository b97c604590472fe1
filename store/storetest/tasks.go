package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/store"
)

// tasks returns a handle's task records, failing the test if the backend
// keeps none.
func (h *harness) tasks() store.Tasks { return part[store.Tasks](h) }

// task returns a complete record of id, held by holder, opened at
// created.
func task(id, holder string, created time.Time) store.TaskRecord {
	return store.TaskRecord{
		ID: id, Holder: holder, Host: "host-" + holder, StateDir: "/srv/" + holder + "/state",
		Repo: "/srv/repo", Branch: "airlock/task/" + id, Base: "HEAD", Status: "opening",
		Tenant: "acme", User: "ada", CreatedAt: created,
	}
}

// testTaskHold: a record reads back as held; its holder replaces it,
// keeping when it was created if the new one says nothing; another
// holder changes nothing and is told who holds it.
func testTaskHold(t *testing.T, h *harness) {
	ts := h.tasks()
	created := base()
	before := store.UTC(time.Now())
	in := task("t1", "a", created)
	if inserted, err := ts.HoldTask(t.Context(), in); err != nil || !inserted {
		t.Fatalf("HoldTask of a new id: got %v, %v; want inserted", inserted, err)
	}
	got, err := ts.TaskRecord(t.Context(), "t1")
	if err != nil {
		t.Fatalf("TaskRecord: %v", err)
	}
	if got.UpdatedAt.Before(before) {
		t.Errorf("UpdatedAt = %v, want at or after %v", got.UpdatedAt, before)
	}
	in.UpdatedAt = got.UpdatedAt
	if diff := cmp.Diff(in, got); diff != "" {
		t.Errorf("TaskRecord (-want +got):\n%s", diff)
	}

	open := in
	open.Status, open.Base, open.CreatedAt = "open", "main", time.Time{}
	if inserted, err := ts.HoldTask(t.Context(), open); err != nil || inserted {
		t.Fatalf("HoldTask by its holder: got %v, %v; want replaced", inserted, err)
	}
	got, _ = ts.TaskRecord(t.Context(), "t1")
	if got.Status != "open" || got.Base != "main" || !got.CreatedAt.Equal(created) || got.UpdatedAt.Before(in.UpdatedAt) {
		t.Errorf("after HoldTask by its holder: %+v; want open on main, created at %v", got, created)
	}

	other := task("t1", "b", created)
	other.Status = "open"
	_, err = ts.HoldTask(t.Context(), other)
	if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "host-a") || !strings.Contains(err.Error(), "/srv/a/state") {
		t.Errorf("HoldTask by another holder: got %v; want ErrConflict naming host-a and /srv/a/state", err)
	}
	if again, _ := ts.TaskRecord(t.Context(), "t1"); again.Holder != "a" || again.Host != "host-a" {
		t.Errorf("after HoldTask by another holder: %+v; want a's record unchanged", again)
	}

	// A record without a creation time is created now.
	fresh := task("t2", "b", time.Time{})
	if _, err := ts.HoldTask(t.Context(), fresh); err != nil {
		t.Fatalf("HoldTask: %v", err)
	}
	if got, _ := ts.TaskRecord(t.Context(), "t2"); got.CreatedAt.Before(before) || !got.CreatedAt.Equal(got.UpdatedAt) {
		t.Errorf("a record without a creation time: created %v, updated %v; want both now", got.CreatedAt, got.UpdatedAt)
	}
}

// testTaskRefuses: incomplete records are refused before anything is
// written, and unknown ids are ErrNotFound.
func testTaskRefuses(t *testing.T, h *harness) {
	ts := h.tasks()
	for name, mutate := range map[string]func(*store.TaskRecord){
		"no id":      func(r *store.TaskRecord) { r.ID = "" },
		"no holder":  func(r *store.TaskRecord) { r.Holder = "" },
		"no status":  func(r *store.TaskRecord) { r.Status = "" },
		"bad status": func(r *store.TaskRecord) { r.Status = "damaged" },
	} {
		r := task("t1", "a", base())
		mutate(&r)
		if _, err := ts.HoldTask(t.Context(), r); err == nil {
			t.Errorf("HoldTask with %s succeeded", name)
		}
	}
	if all, err := ts.TaskRecords(t.Context()); err != nil || len(all) != 0 {
		t.Errorf("TaskRecords after refusals: %+v, %v; want none", all, err)
	}
	if _, err := ts.TaskRecord(t.Context(), "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TaskRecord of an unknown id: got %v, want ErrNotFound", err)
	}
	if err := ts.DropTask(t.Context(), "nope", "a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DropTask of an unknown id: got %v, want ErrNotFound", err)
	}
}

// testTaskDrop: only the holder drops a record; once dropped, the id is
// free for any holder.
func testTaskDrop(t *testing.T, h *harness) {
	ts := h.tasks()
	if _, err := ts.HoldTask(t.Context(), task("t1", "a", base())); err != nil {
		t.Fatalf("HoldTask: %v", err)
	}
	if err := ts.DropTask(t.Context(), "t1", "b"); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "host-a") {
		t.Errorf("DropTask by another holder: got %v; want ErrConflict naming host-a", err)
	}
	if err := ts.DropTask(t.Context(), "t1", "a"); err != nil {
		t.Fatalf("DropTask by its holder: %v", err)
	}
	if _, err := ts.TaskRecord(t.Context(), "t1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TaskRecord after DropTask: got %v, want ErrNotFound", err)
	}
	if inserted, err := ts.HoldTask(t.Context(), task("t1", "b", base())); err != nil || !inserted {
		t.Errorf("HoldTask by another holder after DropTask: got %v, %v; want inserted", inserted, err)
	}
}

// testTaskRecords: every holder's records, oldest first, seen from
// another handle as another process would.
func testTaskRecords(t *testing.T, h *harness) {
	a, b := h.tasks(), h.tasks()
	at := base()
	for _, r := range []store.TaskRecord{task("late", "a", at.Add(time.Minute)), task("y", "b", at), task("x", "a", at)} {
		if _, err := a.HoldTask(t.Context(), r); err != nil {
			t.Fatalf("HoldTask: %v", err)
		}
	}
	all, err := b.TaskRecords(t.Context())
	if err != nil {
		t.Fatalf("TaskRecords: %v", err)
	}
	var got []string
	for _, r := range all {
		got = append(got, r.Holder+"/"+r.ID)
	}
	if diff := cmp.Diff([]string{"a/x", "b/y", "a/late"}, got); diff != "" {
		t.Errorf("TaskRecords (-want +got):\n%s", diff)
	}
}

// testTaskHoldRace: of holders racing for one new id on handles of their
// own, exactly one holds it.
func testTaskHoldRace(t *testing.T, h *harness) {
	const n = 8
	handles := parts[store.Tasks](h, n)
	holders := "abcdefgh"
	inserted := make([]bool, n)
	errs := Race(n, func(i int) error {
		var err error
		inserted[i], err = handles[i].HoldTask(t.Context(), task("t1", holders[i:i+1], base()))
		return err
	})
	ok, conflicts := count(t, errs, store.ErrConflict)
	if ok != 1 || conflicts != n-1 {
		t.Fatalf("racing HoldTask: %d held, %d refused; want 1 and %d", ok, conflicts, n-1)
	}
	got, err := handles[0].TaskRecord(t.Context(), "t1")
	for i, e := range errs {
		if e == nil && (!inserted[i] || err != nil || got.Holder != holders[i:i+1]) {
			t.Errorf("the winner %c: inserted %v; the record is %+v, %v", holders[i], inserted[i], got, err)
		}
	}
}
