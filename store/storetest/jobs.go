package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/store"
)

// jobs returns a new handle's jobs, and the handle, which a test may close
// to stand for a process that has gone. A backend may keep no jobs: the
// test is then skipped.
func (h *harness) jobs() (store.Jobs, *handle) {
	h.t.Helper()
	s := h.store()
	j, ok := s.Store.(store.Jobs)
	if !ok {
		h.t.Skipf("%T keeps no jobs: it does not implement store.Jobs", s.Store)
	}
	return j, s
}

// job returns a complete working job with the given id, created at
// created and kept for an hour.
func job(id string, created time.Time) store.Job {
	return store.Job{
		ID:           id,
		Tenant:       "acme",
		User:         "ada",
		Server:       "fs",
		Tool:         "fs__write_file",
		Write:        true,
		RecordID:     "rec_" + id,
		Status:       store.JobWorking,
		Message:      "writing",
		Lost:         []byte(`{"code":-32603,"message":"lost: ` + id + `"}`),
		TTL:          time.Hour,
		PollInterval: 2 * time.Second,
		CreatedAt:    created,
	}
}

// recent is a time a minute ago with a microsecond part, as stores keep
// it: jobs expire, counted from when they were created, so theirs cannot
// be base().
func recent() time.Time {
	return store.UTC(time.Now().Add(-time.Minute)).Truncate(time.Second).Add(123456 * time.Microsecond)
}

// getJob returns the job id, failing the test if it cannot.
func getJob(t *testing.T, js store.Jobs, id string) store.Job {
	t.Helper()
	j, err := js.Job(t.Context(), id)
	if err != nil {
		t.Fatalf("Job(%s): %v", id, err)
	}
	return j
}

// within reports whether at is between before and after, both included.
func within(at, before, after time.Time) bool { return !at.Before(before) && !at.After(after) }

// testJobCreateGet: a job reads back as it was created, every field, its
// times in UTC to the microsecond, from this handle and another; a job
// without a creation time is created now.
func testJobCreateGet(t *testing.T, h *harness) {
	a, _ := h.jobs()
	b, _ := h.jobs()
	in := job("job_1", recent().Add(789*time.Nanosecond))
	in.Status = store.JobInputRequired
	in.Input = []byte(`{"confirm":{"message":"overwrite notes.txt?"}}`)
	if err := a.CreateJob(t.Context(), in); err != nil {
		t.Fatalf("CreateJob: %v", err)
	}
	want := in
	want.CreatedAt = store.UTC(in.CreatedAt)
	want.UpdatedAt = want.CreatedAt
	for name, js := range map[string]store.Jobs{"its creator": a, "another handle": b} {
		if diff := cmp.Diff(want, getJob(t, js, "job_1")); diff != "" {
			t.Errorf("Job from %s (-want +got):\n%s", name, diff)
		}
	}

	// Nothing but the id, the TTL and the status: nil stays nil.
	before := store.UTC(time.Now())
	if err := a.CreateJob(t.Context(), store.Job{ID: "job_2", Status: store.JobWorking, TTL: time.Minute}); err != nil {
		t.Fatalf("CreateJob: %v", err)
	}
	after := time.Now()
	got := getJob(t, b, "job_2")
	if !within(got.CreatedAt, before, after) || !got.UpdatedAt.Equal(got.CreatedAt) {
		t.Errorf("a job created without a time: CreatedAt %v, UpdatedAt %v; want both between %v and %v", got.CreatedAt, got.UpdatedAt, before, after)
	}
	if got.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt is in %v, want UTC", got.CreatedAt.Location())
	}
	wantBare := store.Job{ID: "job_2", Status: store.JobWorking, TTL: time.Minute, CreatedAt: got.CreatedAt, UpdatedAt: got.UpdatedAt}
	if diff := cmp.Diff(wantBare, got); diff != "" {
		t.Errorf("Job of a bare job (-want +got):\n%s", diff)
	}

	again := job("job_1", recent())
	again.Server = "other"
	if err := b.CreateJob(t.Context(), again); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateJob of a taken id: got %v, want ErrConflict", err)
	}
	if diff := cmp.Diff(want, getJob(t, a, "job_1")); diff != "" {
		t.Errorf("the first job changed after a second CreateJob with its id (-want +got):\n%s", diff)
	}
	if _, err := a.Job(t.Context(), "job_none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Job of an unknown id: got %v, want ErrNotFound", err)
	}
}

// testJobRefuses: a job without an id or a TTL, or created settled or
// with a status that is none, is refused, and so is an update to a status
// that is none; an update of an unknown id is ErrNotFound.
func testJobRefuses(t *testing.T, h *harness) {
	js, _ := h.jobs()
	create := func(j store.Job) error {
		err := js.CreateJob(t.Context(), j)
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("a refusal is not a conflict: %w", err)
		}
		return err
	}
	flaws := []flaw[store.Job]{
		{"no id", func(j *store.Job) { j.ID = "" }},
		{"no TTL", func(j *store.Job) { j.TTL = 0 }},
		{"a negative TTL", func(j *store.Job) { j.TTL = -time.Hour }},
		{"no status", func(j *store.Job) { j.Status = "" }},
		{"a status that is none", func(j *store.Job) { j.Status = "Working" }},
	}
	for _, s := range []store.JobStatus{store.JobCompleted, store.JobFailed, store.JobCancelled} {
		flaws = append(flaws, flaw[store.Job]{"the terminal status " + string(s), func(j *store.Job) { j.Status = s }})
	}
	refused(t, "CreateJob of a job", job("job_bad", recent()), create, flaws)
	if all, err := js.ListJobs(t.Context(), store.JobFilter{}); err != nil || len(all) != 0 {
		t.Errorf("ListJobs after refusals: %+v, %v; want none", all, err)
	}

	if err := js.UpdateJob(t.Context(), "job_none", store.JobUpdate{Status: store.JobCompleted}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateJob of an unknown id: got %v, want ErrNotFound", err)
	}
	if err := js.CreateJob(t.Context(), job("job_1", recent())); err != nil {
		t.Fatalf("CreateJob: %v", err)
	}
	before := getJob(t, js, "job_1")
	for _, s := range []store.JobStatus{"", "done", "Completed", "completed "} {
		err := js.UpdateJob(t.Context(), "job_1", store.JobUpdate{Status: s, Message: "bad"})
		if err == nil || errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
			t.Errorf("UpdateJob to the status %q: got %v, want a refusal", s, err)
		}
	}
	if diff := cmp.Diff(before, getJob(t, js, "job_1")); diff != "" {
		t.Errorf("refused updates changed the job (-before +after):\n%s", diff)
	}
}

// testJobUpdate: each update keeps what goes with its status and drops
// the rest, records the journal record it names, and is stamped with the
// time it was applied; a settled job takes no update.
func testJobUpdate(t *testing.T, h *harness) {
	a, _ := h.jobs()
	b, _ := h.jobs()
	in := job("job_1", recent())
	in.RecordID = ""
	if err := a.CreateJob(t.Context(), in); err != nil {
		t.Fatalf("CreateJob: %v", err)
	}
	want := in
	want.UpdatedAt = in.CreatedAt
	result := []byte(`{"content":[{"type":"text","text":"done"}]}`)
	fail := []byte(`{"code":-32000,"message":"refused"}`)
	input := []byte(`{"confirm":{"message":"overwrite?"}}`)
	for _, step := range []struct {
		u          store.JobUpdate
		keep       func(*store.Job) // what the update leaves in want
		recordedAs string
	}{
		{
			u:    store.JobUpdate{Status: store.JobInputRequired, Message: "asking", Result: result, Error: fail, Input: input, RecordID: "rec_1"},
			keep: func(j *store.Job) { j.Input, j.RecordID = input, "rec_1" },
		},
		{
			// Leaving input_required drops the questions; an empty
			// RecordID leaves the record.
			u:    store.JobUpdate{Status: store.JobWorking, Message: "answered", Input: input},
			keep: func(j *store.Job) { j.Input = nil },
		},
		{
			u:    store.JobUpdate{Status: store.JobCompleted, Message: "done", Result: result, Error: fail, Input: input, RecordID: "rec_2"},
			keep: func(j *store.Job) { j.Result, j.RecordID = result, "rec_2" },
		},
	} {
		before := store.UTC(time.Now())
		if err := a.UpdateJob(t.Context(), "job_1", step.u); err != nil {
			t.Fatalf("UpdateJob(%s): %v", step.u.Status, err)
		}
		after := time.Now()
		got := getJob(t, b, "job_1")
		want.Status, want.Message = step.u.Status, step.u.Message
		step.keep(&want)
		if !within(got.UpdatedAt, before, after) {
			t.Errorf("after UpdateJob(%s): UpdatedAt %v, want between %v and %v", step.u.Status, got.UpdatedAt, before, after)
		}
		want.UpdatedAt = got.UpdatedAt
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("after UpdateJob(%s) (-want +got):\n%s", step.u.Status, diff)
		}
	}

	// Settled, it stays as it is, for this handle and another.
	settled := getJob(t, a, "job_1")
	for _, js := range []store.Jobs{a, b} {
		for _, s := range []store.JobStatus{store.JobCompleted, store.JobFailed, store.JobCancelled, store.JobWorking, store.JobInputRequired} {
			if err := js.UpdateJob(t.Context(), "job_1", store.JobUpdate{Status: s, Message: "again", Error: fail}); !errors.Is(err, store.ErrConflict) {
				t.Errorf("UpdateJob(%s) of a completed job: got %v, want ErrConflict", s, err)
			}
		}
	}
	if diff := cmp.Diff(settled, getJob(t, b, "job_1")); diff != "" {
		t.Errorf("refused updates changed a settled job (-before +after):\n%s", diff)
	}
}

var terminal = []store.JobStatus{store.JobCompleted, store.JobFailed, store.JobCancelled}

// testJobUpdateRace: of racing updates to a terminal status, from several
// goroutines on each of two handles, exactly one is applied.
func testJobUpdateRace(t *testing.T, h *harness) {
	a, _ := h.jobs()
	b, _ := h.jobs()
	js := []store.Jobs{a, b}
	for round := range 3 {
		id := fmt.Sprintf("job_%d", round)
		if err := a.CreateJob(t.Context(), job(id, recent())); err != nil {
			t.Fatalf("CreateJob: %v", err)
		}
		errs := Race(16, func(i int) error {
			return js[i%2].UpdateJob(t.Context(), id, store.JobUpdate{Status: terminal[(i+round)%len(terminal)], Message: fmt.Sprint(i)})
		})
		winner := oneWins(t, errs, store.ErrConflict, "terminal updates")
		got := getJob(t, b, id)
		if want := terminal[(winner+round)%len(terminal)]; got.Status != want || got.Message != fmt.Sprint(winner) {
			t.Errorf("after racing updates: got %s (%s), want the winner's %s (%d)", got.Status, got.Message, want, winner)
		}
	}
}

// testJobExpiry: a job whose TTL has passed is not there to read, update
// or list, and PurgeJobs removes it, and only it.
func testJobExpiry(t *testing.T, h *harness) {
	js, _ := h.jobs()
	old := job("job_old", store.UTC(time.Now().Add(-time.Hour)))
	old.TTL = time.Minute
	brief := job("job_brief", time.Time{})
	brief.TTL = time.Millisecond
	for _, j := range []store.Job{old, brief, job("job_live", recent())} {
		if err := js.CreateJob(t.Context(), j); err != nil {
			t.Fatalf("CreateJob(%s): %v", j.ID, err)
		}
	}
	time.Sleep(20 * time.Millisecond) // for job_brief's TTL to pass
	for _, id := range []string{"job_old", "job_brief"} {
		if _, err := js.Job(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Job of the expired %s: got %v, want ErrNotFound", id, err)
		}
		if err := js.UpdateJob(t.Context(), id, store.JobUpdate{Status: store.JobCompleted}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("UpdateJob of the expired %s: got %v, want ErrNotFound", id, err)
		}
	}
	checkLists(t, "ListJobs", js.ListJobs, jobIDs, []listCase[store.JobFilter]{
		{"with expired jobs", store.JobFilter{}, []string{"job_live"}},
	})

	if n, err := js.PurgeJobs(t.Context(), time.Now()); err != nil || n != 2 {
		t.Errorf("PurgeJobs: got %d, %v; want 2, nil", n, err)
	}
	if n, err := js.PurgeJobs(t.Context(), time.Now()); err != nil || n != 0 {
		t.Errorf("PurgeJobs again: got %d, %v; want 0, nil", n, err)
	}
	getJob(t, js, "job_live")
	// At a time past its TTL, the live one goes too.
	if n, err := js.PurgeJobs(t.Context(), recent().Add(time.Hour+time.Second)); err != nil || n != 1 {
		t.Errorf("PurgeJobs past the last TTL: got %d, %v; want 1, nil", n, err)
	}
	if _, err := js.Job(t.Context(), "job_live"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Job of a purged job: got %v, want ErrNotFound", err)
	}
}

// jobIDs returns the ids of jobs, in order.
func jobIDs(js []store.Job) []string {
	return idsOf(js, func(j store.Job) string { return j.ID })
}

// testJobList: a filter selects by principal (exactly), server and
// status; a limit keeps the newest; the jobs come oldest first.
func testJobList(t *testing.T, h *harness) {
	a, _ := h.jobs()
	b, _ := h.jobs()
	t0 := recent()
	// Created out of order, with a tie (j2, j4) that creation order breaks.
	for _, c := range []struct {
		id, tenant, user, server string
		at                       time.Duration
		status                   store.JobStatus
	}{
		{"j1", "acme", "ada", "fs", 1 * time.Second, store.JobWorking},
		{"j3", "acme", "bob", "git", 3 * time.Second, store.JobCompleted},
		{"j2", "acme", "", "fs", 2 * time.Second, store.JobInputRequired},
		{"j4", "", "", "fs", 2 * time.Second, store.JobFailed},
		{"j5", "acme", "ada", "git", 5 * time.Second, store.JobCancelled},
	} {
		j := job(c.id, t0.Add(c.at))
		j.Tenant, j.User, j.Server = c.tenant, c.user, c.server
		if err := a.CreateJob(t.Context(), j); err != nil {
			t.Fatalf("CreateJob(%s): %v", c.id, err)
		}
		if c.status != store.JobWorking {
			if err := a.UpdateJob(t.Context(), c.id, store.JobUpdate{Status: c.status}); err != nil {
				t.Fatalf("UpdateJob(%s): %v", c.id, err)
			}
		}
	}
	checkLists(t, "ListJobs", b.ListJobs, jobIDs, []listCase[store.JobFilter]{
		{"all", store.JobFilter{}, []string{"j1", "j2", "j4", "j3", "j5"}},
		{"a principal", store.JobFilter{Tenant: "acme", User: "ada"}, []string{"j1", "j5"}},
		{"a tenant, exactly: no user", store.JobFilter{Tenant: "acme"}, []string{"j2"}},
		{"a user, exactly: no tenant", store.JobFilter{User: "ada"}, []string{}},
		{"the empty principal", store.JobFilter{Principal: true}, []string{"j4"}},
		{"Principal with a principal", store.JobFilter{Tenant: "acme", User: "bob", Principal: true}, []string{"j3"}},
		{"a server", store.JobFilter{Server: "git"}, []string{"j3", "j5"}},
		{"a server that has none", store.JobFilter{Server: "web"}, []string{}},
		{"one status", store.JobFilter{Status: []store.JobStatus{store.JobWorking}}, []string{"j1"}},
		{"unsettled", store.JobFilter{Status: []store.JobStatus{store.JobWorking, store.JobInputRequired}}, []string{"j1", "j2"}},
		{"settled", store.JobFilter{Status: terminal}, []string{"j4", "j3", "j5"}},
		{"limit: the newest", store.JobFilter{Limit: 2}, []string{"j3", "j5"}},
		{"limit past the tie", store.JobFilter{Limit: 4}, []string{"j2", "j4", "j3", "j5"}},
		{"limit above the count", store.JobFilter{Limit: 10}, []string{"j1", "j2", "j4", "j3", "j5"}},
		{"all of them", store.JobFilter{Tenant: "acme", User: "ada", Server: "fs", Status: []store.JobStatus{store.JobWorking}, Limit: 1}, []string{"j1"}},
		{"server, status and limit", store.JobFilter{Server: "fs", Status: terminal[1:2], Limit: 1}, []string{"j4"}},
	})
	got, err := b.ListJobs(t.Context(), store.JobFilter{Server: "git", Status: []store.JobStatus{store.JobCompleted}})
	if err != nil || len(got) != 1 {
		t.Fatalf("ListJobs: %+v, %v; want one job", got, err)
	}
	if diff := cmp.Diff(getJob(t, b, "j3"), got[0]); diff != "" {
		t.Errorf("ListJobs and Job disagree (-job +list):\n%s", diff)
	}
}

// testJobRecover: RecoverJobs settles, failed with their Lost errors, the
// unsettled jobs of a writer that has gone, and leaves settled jobs and
// live writers' alone.
func testJobRecover(t *testing.T, h *harness) {
	a, ha := h.jobs()
	b, _ := h.jobs()
	created := recent()
	asking := job("a_asking", created)
	asking.Status, asking.Input = store.JobInputRequired, []byte(`{"q":{}}`)
	for _, c := range []struct {
		js store.Jobs
		j  store.Job
	}{{a, job("a_working", created)}, {a, asking}, {a, job("a_done", created)}, {b, job("b_working", created)}} {
		if err := c.js.CreateJob(t.Context(), c.j); err != nil {
			t.Fatalf("CreateJob(%s): %v", c.j.ID, err)
		}
	}
	if err := a.UpdateJob(t.Context(), "a_done", store.JobUpdate{Status: store.JobCompleted, Result: []byte(`{}`)}); err != nil {
		t.Fatalf("UpdateJob: %v", err)
	}
	doneBefore := getJob(t, b, "a_done")

	// Both writers are alive: nothing is theirs to settle.
	for name, js := range map[string]store.Jobs{"a": a, "b": b} {
		if n, err := js.RecoverJobs(t.Context(), time.Now()); err != nil || n != 0 {
			t.Errorf("RecoverJobs on %s while both writers live: got %d, %v; want 0, nil", name, n, err)
		}
	}

	// a goes away with two jobs unsettled.
	if err := ha.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	at := store.UTC(time.Now().Add(time.Minute))
	if n, err := b.RecoverJobs(t.Context(), at); err != nil || n != 2 {
		t.Errorf("RecoverJobs after a writer closed: got %d, %v; want 2, nil", n, err)
	}
	for _, id := range []string{"a_working", "a_asking"} {
		got := getJob(t, b, id)
		want := job(id, created)
		if got.Status != store.JobFailed || string(got.Error) != string(want.Lost) || !got.UpdatedAt.Equal(at) ||
			got.Input != nil || got.Result != nil {
			t.Errorf("%s after RecoverJobs: got %s, error %s, input %s, result %s, updated %v; want failed with its Lost error %s, at %v",
				id, got.Status, got.Error, got.Input, got.Result, got.UpdatedAt, want.Lost, at)
		}
		if err := b.UpdateJob(t.Context(), id, store.JobUpdate{Status: store.JobCompleted}); !errors.Is(err, store.ErrConflict) {
			t.Errorf("UpdateJob of the recovered %s: got %v, want ErrConflict", id, err)
		}
	}
	if diff := cmp.Diff(doneBefore, getJob(t, b, "a_done")); diff != "" {
		t.Errorf("RecoverJobs changed a settled job (-before +after):\n%s", diff)
	}
	if got := getJob(t, b, "b_working"); got.Status != store.JobWorking {
		t.Errorf("b_working, a live writer's, after RecoverJobs: got %s, want working", got.Status)
	}
	if n, err := b.RecoverJobs(t.Context(), at); err != nil || n != 0 {
		t.Errorf("RecoverJobs again: got %d, %v; want 0, nil", n, err)
	}
	// A third handle finds b's job in flight.
	c, _ := h.jobs()
	if n, err := c.RecoverJobs(t.Context(), at); err != nil || n != 0 {
		t.Errorf("RecoverJobs on a new handle while b lives: got %d, %v; want 0, nil", n, err)
	}
	if got := getJob(t, c, "b_working"); got.Status != store.JobWorking {
		t.Errorf("b_working read by a new handle while b lives: got %s, want working", got.Status)
	}
}

// testJobLostOnRead: reading an unsettled job whose writer has gone
// settles it, failed with its Lost error, at the time it was read.
func testJobLostOnRead(t *testing.T, h *harness) {
	a, ha := h.jobs()
	b, _ := h.jobs()
	if err := a.CreateJob(t.Context(), job("job_1", recent())); err != nil {
		t.Fatalf("CreateJob: %v", err)
	}
	if got := getJob(t, b, "job_1"); got.Status != store.JobWorking {
		t.Fatalf("Job while its writer lives: got %s, want working", got.Status)
	}
	if err := ha.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	before := store.UTC(time.Now())
	got := getJob(t, b, "job_1")
	after := time.Now()
	want := job("job_1", recent())
	if got.Status != store.JobFailed || string(got.Error) != string(want.Lost) || !within(got.UpdatedAt, before, after) {
		t.Errorf("Job after its writer closed: got %s, error %s, updated %v; want failed with its Lost error %s, between %v and %v",
			got.Status, got.Error, got.UpdatedAt, want.Lost, before, after)
	}
	if again := getJob(t, b, "job_1"); !cmp.Equal(got, again) {
		t.Errorf("Job read again: got %+v, want %+v", again, got)
	}
	if n, err := b.RecoverJobs(t.Context(), time.Now()); err != nil || n != 0 {
		t.Errorf("RecoverJobs after Job settled it: got %d, %v; want 0, nil", n, err)
	}
	if err := b.UpdateJob(t.Context(), "job_1", store.JobUpdate{Status: store.JobCompleted}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("UpdateJob of a job settled as lost: got %v, want ErrConflict", err)
	}
}
