package airlock_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/store"
)

// TestStartAndWait: a call started in the background is a job of the
// store while it runs, and its result is waited for later; a job cancelled
// through the store (airlock jobs cancel) cancels its call, which the
// server sees, and so does Started.Cancel; a write cancelled once sent
// has an unknown outcome, which its job says.
func TestStartAndWait(t *testing.T) {
	srv := testServer(t, "s", "sdk")
	h := open(t, newConfig(t, srv))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := h.Store().(store.Jobs)

	s, err := h.Start(ctx, h.Snapshot(), airlock.Call{Name: "s__echo", Arguments: json.RawMessage(`{"text":"later"}`)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantContent(t, r, airlock.OK, "later")
	waitForJob(t, js, s.ID, store.JobCompleted)
	j, _ := js.Job(ctx, s.ID)
	if !strings.Contains(string(j.Result), "later") || j.Tool != "s__echo" || j.Server != "s" || j.Tenant != h.Principal().Tenant {
		t.Errorf("the completed job = %+v, want the call's result, tool and principal", j)
	}

	s, err = h.Start(ctx, h.Snapshot(), airlock.Call{Name: "s__slow", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	as := airlock.Actor{Principal: h.Principal(), By: "alice"}
	list, err := airlock.ListJobs(ctx, h.Store(), store.JobFilter{Status: []store.JobStatus{store.JobWorking}}, as)
	if err != nil || !slices.ContainsFunc(list, func(j store.Job) bool { return j.ID == s.ID }) {
		t.Fatalf("ListJobs = %v, %v; want the running call", list, err)
	}
	if err := airlock.CancelJob(ctx, h.Store(), s.ID, "not needed", as); err != nil {
		t.Fatal(err)
	}
	r, err = s.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// slow is not a read: cancelled once sent, its outcome is unknown.
	wantStatus(t, r, airlock.OutcomeUnknown)
	waitFor(t, 20*time.Second, "the server's call cancelled", func() bool { return slices.Contains(marks(t, srv), "cancelled slow") })
	if j, _ := js.Job(ctx, s.ID); j.Status != store.JobCancelled || !strings.Contains(j.Message, "not needed") {
		t.Errorf("the cancelled job = %+v, want cancelled with the note", j)
	}
	if err := airlock.CancelJob(ctx, h.Store(), s.ID, "", as); err == nil {
		t.Error("cancelling a settled job: no error")
	}

	s, err = h.Start(ctx, h.Snapshot(), airlock.Call{Name: "s__slow", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the server's second slow call", func() bool {
		return len(slices.DeleteFunc(calls(t, srv), func(c string) bool { return !strings.HasPrefix(c, "call slow ") })) == 2
	})
	s.Cancel()
	<-s.Done()
	waitForJob(t, js, s.ID, store.JobFailed)
	if j, _ := js.Job(ctx, s.ID); !strings.Contains(string(j.Error), "outcome_unknown") || j.RecordID == "" {
		t.Errorf("the job of a write cancelled once sent = %+v, want failed with the unknown outcome and its record", j)
	}
	if _, err := h.Start(ctx, h.Snapshot(), airlock.Call{Name: "s__nope"}); err == nil {
		t.Error("starting an unknown tool: no error")
	}
}

func waitForJob(t *testing.T, js store.Jobs, id string, want store.JobStatus) {
	t.Helper()
	waitFor(t, 20*time.Second, "job "+string(want), func() bool {
		j, err := js.Job(context.Background(), id)
		return err == nil && j.Status == want
	})
}
