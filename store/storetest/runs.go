package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/store"
)

// runs returns a handle's agent runs, failing the test if the backend
// keeps none.
func (h *harness) runs() store.Runs { return part[store.Runs](h) }

// checkpoint is JSON as no encoder would write it: keys out of order,
// spaces, escapes and a byte that is not UTF-8. A store keeps it byte for
// byte.
var checkpoint = json.RawMessage("{\"step\": 2, \"messages\":[{\"role\":\"user\",\"content\":\"caf\\u00e9 \xff\"}] ,\"a\":{}}")

// run returns a complete record of id, for acme/ada, created at created.
func run(id string, created time.Time) store.RunRecord {
	return store.RunRecord{
		ID: id, Status: store.RunRunning, Tenant: "acme", User: "ada",
		Provider: "openai", Model: "gpt-test", Task: "task_" + id, Title: "Fix the failing test in " + id,
		Steps: 2, ToolCalls: 3, InputTokens: 1 << 33, OutputTokens: 456, Snapshot: "snap_1",
		Checkpoint: checkpoint, CreatedAt: created,
	}
}

// runIDs returns the ids of records, in order.
func runIDs(rs []store.RunRecord) []string {
	return idsOf(rs, func(r store.RunRecord) string { return r.ID })
}

// testRunSaveGet: a record reads back as saved, from another handle as
// another process would, its checkpoint byte for byte; one saved without
// a creation time or a checkpoint is created now and has none.
func testRunSaveGet(t *testing.T, h *harness) {
	a, b := h.runs(), h.runs()
	before := store.UTC(time.Now())
	in := run("run_1", base().Add(789*time.Nanosecond))
	if err := a.SaveRun(t.Context(), in); err != nil {
		t.Fatalf("SaveRun: %v", err)
	}
	after := time.Now()
	got, err := b.RunRecord(t.Context(), "run_1")
	if err != nil {
		t.Fatalf("RunRecord: %v", err)
	}
	if got.UpdatedAt.Before(before) || got.UpdatedAt.After(after) {
		t.Errorf("UpdatedAt = %v, want between %v and %v", got.UpdatedAt, before, after)
	}
	want := in
	want.CreatedAt, want.UpdatedAt = store.UTC(in.CreatedAt), got.UpdatedAt
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RunRecord (-want +got):\n%s", diff)
	}

	bare := run("run_2", time.Time{})
	bare.Checkpoint, bare.Task, bare.Status, bare.Error = nil, "", store.RunFailed, "the provider refused the key"
	if err := a.SaveRun(t.Context(), bare); err != nil {
		t.Fatalf("SaveRun: %v", err)
	}
	got, err = b.RunRecord(t.Context(), "run_2")
	if err != nil {
		t.Fatalf("RunRecord: %v", err)
	}
	if got.CreatedAt.Before(before) || !got.CreatedAt.Equal(got.UpdatedAt) {
		t.Errorf("a record without a creation time: created %v, updated %v; want both now", got.CreatedAt, got.UpdatedAt)
	}
	bare.CreatedAt, bare.UpdatedAt = got.CreatedAt, got.UpdatedAt
	if diff := cmp.Diff(bare, got); diff != "" {
		t.Errorf("RunRecord of a record without a checkpoint (-want +got):\n%s", diff)
	}
	if got.Checkpoint != nil {
		t.Errorf("Checkpoint of a record saved without one: got %q, want nil", got.Checkpoint)
	}
}

// testRunReplace: a save replaces the whole record, its checkpoint too,
// keeping when it was created unless it says otherwise, and moves
// UpdatedAt.
func testRunReplace(t *testing.T, h *harness) {
	rs := h.runs()
	created := base()
	if err := rs.SaveRun(t.Context(), run("run_1", created)); err != nil {
		t.Fatalf("SaveRun: %v", err)
	}
	first, err := rs.RunRecord(t.Context(), "run_1")
	if err != nil {
		t.Fatalf("RunRecord: %v", err)
	}
	time.Sleep(2 * time.Millisecond) // for a later UpdatedAt

	next := run("run_1", time.Time{})
	next.Status, next.Steps, next.ToolCalls, next.OutputTokens, next.Snapshot = store.RunWaiting, 5, 7, 900, "snap_2"
	next.Checkpoint = json.RawMessage(`{"step":5}`)
	if err := rs.SaveRun(t.Context(), next); err != nil {
		t.Fatalf("SaveRun of a record without a creation time: %v", err)
	}
	got, err := rs.RunRecord(t.Context(), "run_1")
	if err != nil {
		t.Fatalf("RunRecord: %v", err)
	}
	if !got.UpdatedAt.After(first.UpdatedAt) {
		t.Errorf("UpdatedAt after a second save: got %v, want after %v", got.UpdatedAt, first.UpdatedAt)
	}
	want := next
	want.CreatedAt, want.UpdatedAt = created, got.UpdatedAt
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RunRecord after a save without a creation time (-want +got):\n%s", diff)
	}

	// A record that says when it was created, and has no checkpoint,
	// replaces both.
	done := next
	done.Status, done.Checkpoint, done.CreatedAt = store.RunDone, nil, created.Add(time.Minute)
	if err := rs.SaveRun(t.Context(), done); err != nil {
		t.Fatalf("SaveRun: %v", err)
	}
	got, err = rs.RunRecord(t.Context(), "run_1")
	if err != nil {
		t.Fatalf("RunRecord: %v", err)
	}
	done.UpdatedAt = got.UpdatedAt
	if diff := cmp.Diff(done, got); diff != "" {
		t.Errorf("RunRecord after a save with a creation time and no checkpoint (-want +got):\n%s", diff)
	}
	if all, err := rs.RunRecords(t.Context(), store.RunFilter{}); err != nil || len(all) != 1 {
		t.Errorf("RunRecords after replacing one record: %d records, %v; want 1", len(all), err)
	}
}

// testRunSaveRelaxed: a relaxed save is a save: the record reads back
// from another handle, replaces and is replaced by durable saves, and
// what Check refuses it refuses.
func testRunSaveRelaxed(t *testing.T, h *harness) {
	a, b := h.runs(), h.runs()
	in := run("run_relaxed", base())
	if err := a.SaveRunRelaxed(t.Context(), in); err != nil {
		t.Fatalf("SaveRunRelaxed: %v", err)
	}
	got, err := b.RunRecord(t.Context(), "run_relaxed")
	if err != nil {
		t.Fatalf("RunRecord: %v", err)
	}
	want := in
	want.CreatedAt, want.UpdatedAt = store.UTC(in.CreatedAt), got.UpdatedAt
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RunRecord after a relaxed save (-want +got):\n%s", diff)
	}
	for i, save := range []func(store.RunRecord) error{
		func(r store.RunRecord) error { return a.SaveRun(t.Context(), r) },
		func(r store.RunRecord) error { return a.SaveRunRelaxed(t.Context(), r) },
		func(r store.RunRecord) error { return b.SaveRun(t.Context(), r) },
	} {
		next := in
		next.Steps, next.CreatedAt = 10+i, time.Time{}
		if err := save(next); err != nil {
			t.Fatalf("save %d: %v", i, err)
		}
		if got, err := a.RunRecord(t.Context(), "run_relaxed"); err != nil || got.Steps != 10+i || !got.CreatedAt.Equal(want.CreatedAt) {
			t.Errorf("after save %d: steps %d, created %v (%v); want %d, %v", i, got.Steps, got.CreatedAt, err, 10+i, want.CreatedAt)
		}
	}
	bad := in
	bad.Status = "paused"
	if err := a.SaveRunRelaxed(t.Context(), bad); err == nil {
		t.Error("SaveRunRelaxed of a record with an unknown status: got nil error")
	}
	if got, err := b.RunRecord(t.Context(), "run_relaxed"); err != nil || got.Status != store.RunRunning {
		t.Errorf("a refused relaxed save changed the record: %+v, %v", got.Status, err)
	}
}

// testRunRefuses: records that Check refuses are not saved, nor do they
// change a record already saved.
func testRunRefuses(t *testing.T, h *harness) {
	rs := h.runs()
	kept := run("run_kept", base())
	if err := rs.SaveRun(t.Context(), kept); err != nil {
		t.Fatalf("SaveRun: %v", err)
	}
	saved, err := rs.RunRecord(t.Context(), "run_kept")
	if err != nil {
		t.Fatalf("RunRecord: %v", err)
	}
	saveRun := func(r store.RunRecord) error { return rs.SaveRun(t.Context(), r) }
	for _, id := range []string{"run_bad", "run_kept"} {
		r := run(id, base())
		r.Steps = 99
		refused(t, "SaveRun of "+id, r, saveRun, []flaw[store.RunRecord]{
			{"no status", func(r *store.RunRecord) { r.Status = "" }},
			{"an unknown status", func(r *store.RunRecord) { r.Status = "paused" }},
			{"a status in capitals", func(r *store.RunRecord) { r.Status = "Done" }},
			{"a checkpoint that is not JSON", func(r *store.RunRecord) { r.Checkpoint = json.RawMessage(`{"messages":`) }},
		})
	}
	if err := rs.SaveRun(t.Context(), run("", base())); err == nil {
		t.Errorf("SaveRun of a record without an id: got nil error")
	}
	if _, err := rs.RunRecord(t.Context(), "run_bad"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RunRecord of a refused record: got %v, want ErrNotFound", err)
	}
	got, err := rs.RunRecord(t.Context(), "run_kept")
	if err != nil {
		t.Fatalf("RunRecord: %v", err)
	}
	if diff := cmp.Diff(saved, got); diff != "" {
		t.Errorf("refused saves changed a saved record (-before +after):\n%s", diff)
	}
	checkLists(t, "RunRecords", rs.RunRecords, runIDs, []listCase[store.RunFilter]{
		{"after refused saves", store.RunFilter{}, []string{"run_kept"}},
	})
}

// testRunList: records newest first, ties broken by id, selected by
// tenant and user each on its own, capped by the limit, without their
// checkpoints.
func testRunList(t *testing.T, h *harness) {
	a, b := h.runs(), h.runs()
	t0 := base()
	for _, s := range []struct {
		id           string
		at           time.Duration
		tenant, user string
	}{
		{"r1", 1 * time.Second, "acme", "ada"},
		{"r2", 3 * time.Second, "acme", "bob"},
		{"r3", 2 * time.Second, "other", "ada"},
		{"r4", 3 * time.Second, "acme", "ada"},
		{"r5", 4 * time.Second, "other", "bob"},
	} {
		r := run(s.id, t0.Add(s.at))
		r.Tenant, r.User = s.tenant, s.user
		if err := a.SaveRun(t.Context(), r); err != nil {
			t.Fatalf("SaveRun(%s): %v", s.id, err)
		}
	}
	checkLists(t, "RunRecords", b.RunRecords, runIDs, []listCase[store.RunFilter]{
		{"all", store.RunFilter{}, []string{"r5", "r4", "r2", "r3", "r1"}},
		{"limit 2", store.RunFilter{Limit: 2}, []string{"r5", "r4"}},
		{"negative limit", store.RunFilter{Limit: -1}, []string{"r5", "r4", "r2", "r3", "r1"}},
		{"tenant", store.RunFilter{Tenant: "acme"}, []string{"r4", "r2", "r1"}},
		{"user", store.RunFilter{User: "ada"}, []string{"r4", "r3", "r1"}},
		{"tenant and user", store.RunFilter{Tenant: "other", User: "bob"}, []string{"r5"}},
		{"tenant, limit 2", store.RunFilter{Tenant: "acme", Limit: 2}, []string{"r4", "r2"}},
		{"no such user", store.RunFilter{User: "eve"}, []string{}},
	})
	all, err := b.RunRecords(t.Context(), store.RunFilter{})
	if err != nil {
		t.Fatalf("RunRecords: %v", err)
	}
	for _, r := range all {
		if r.Checkpoint != nil {
			t.Errorf("RunRecords returned the checkpoint of %s: %q", r.ID, r.Checkpoint)
		}
		got, err := b.RunRecord(t.Context(), r.ID)
		if err != nil {
			t.Fatalf("RunRecord: %v", err)
		}
		got.Checkpoint = nil
		if diff := cmp.Diff(got, r); diff != "" {
			t.Errorf("RunRecords and RunRecord disagree on %s (-record +records):\n%s", r.ID, diff)
		}
	}
}

// testRunNotFound: an id never saved is ErrNotFound, and a store with
// no runs lists none.
func testRunNotFound(t *testing.T, h *harness) {
	rs := h.runs()
	if _, err := rs.RunRecord(t.Context(), "run_none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RunRecord of an unknown id: got %v, want ErrNotFound", err)
	}
	if all, err := rs.RunRecords(t.Context(), store.RunFilter{}); err != nil || len(all) != 0 {
		t.Errorf("RunRecords of a store without runs: %+v, %v; want none", all, err)
	}
}

// testRunConcurrent: savers of one id on handles of their own, as
// processes would, relaxed and not, all succeed and leave one record, wholly one saver's.
func testRunConcurrent(t *testing.T, h *harness) {
	const n = 8
	handles := parts[store.Runs](h, n)
	saved := func(i, round int) store.RunRecord {
		r := run("run_1", time.Time{})
		r.Steps = round*n + i
		r.Checkpoint = json.RawMessage(fmt.Sprintf(`{"saver":%d,"round":%d}`, i, round))
		return r
	}
	var created time.Time
	for round := range 3 {
		errs := Race(n, func(i int) error {
			if i%2 == 1 {
				return handles[i].SaveRunRelaxed(t.Context(), saved(i, round))
			}
			return handles[i].SaveRun(t.Context(), saved(i, round))
		})
		for i, err := range errs {
			if err != nil {
				t.Fatalf("racing SaveRun %d of round %d: %v", i, round, err)
			}
		}
		all, err := handles[0].RunRecords(t.Context(), store.RunFilter{})
		if err != nil || len(all) != 1 {
			t.Fatalf("RunRecords after racing saves of one id: %d records, %v; want 1", len(all), err)
		}
		got, err := handles[0].RunRecord(t.Context(), "run_1")
		if err != nil {
			t.Fatalf("RunRecord: %v", err)
		}
		i := got.Steps - round*n
		if i < 0 || i >= n {
			t.Fatalf("after round %d: Steps %d is no saver's of that round", round, got.Steps)
		}
		want := saved(i, round)
		want.CreatedAt, want.UpdatedAt = got.CreatedAt, got.UpdatedAt
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("after round %d: the record is not saver %d's (-want +got):\n%s", round, i, diff)
		}
		if round == 0 {
			created = got.CreatedAt
		} else if !got.CreatedAt.Equal(created) {
			t.Errorf("after round %d: CreatedAt %v, want the first save's %v", round, got.CreatedAt, created)
		}
	}
}
