package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/airlockhq/airlock/store"
)

// childJobs are the jobs CreateChildJobs creates: one for Job to settle
// once their writer is gone, one for RecoverJobs.
var childJobs = []string{"child_read", "child_recover"}

// childJob returns a working job with the given id, kept for an hour,
// whose Lost error names it.
func childJob(id string) store.Job {
	return store.Job{ID: id, Server: "fs", Tool: "fs__write_file", Status: store.JobWorking, TTL: time.Hour,
		Lost: []byte(`{"code":-32603,"message":"lost ` + id + `"}`)}
}

// CreateChildJobs creates in db the working jobs that JobsOfKilledWriter
// checks. A backend's test calls it in a child process that it then kills.
func CreateChildJobs(ctx context.Context, db store.Jobs) error {
	for _, id := range childJobs {
		if err := db.CreateJob(ctx, childJob(id)); err != nil {
			return err
		}
	}
	return nil
}

// JobsOfKilledWriter checks that the jobs a live child process created
// with CreateChildJobs stay working while it lives, and are settled failed
// with their Lost errors, by Job and by RecoverJobs, once kill has killed
// it. A backend may find a killed writer gone only a while after it ends
// (PostgreSQL, once it finds the connection closed): Job is read again
// until the job settles, for up to ten seconds.
func JobsOfKilledWriter(t *testing.T, db store.Jobs, kill func()) {
	t.Helper()
	if n, err := db.RecoverJobs(t.Context(), time.Now()); err != nil || n != 0 {
		t.Fatalf("RecoverJobs while the child lives: got %d, %v; want 0, nil", n, err)
	}
	if j, err := db.Job(t.Context(), "child_read"); err != nil || j.Status != store.JobWorking {
		t.Fatalf("the child's job while it lives: got %q, %v; want working", j.Status, err)
	}
	kill()

	var j store.Job
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if j, err = db.Job(t.Context(), "child_read"); err != nil {
			t.Fatalf("Job: %v", err)
		}
		if j.Status != store.JobWorking || time.Now().After(deadline) {
			break
		}
	}
	if j.Status != store.JobFailed || string(j.Error) != string(childJob("child_read").Lost) {
		t.Errorf("the child's job after it was killed: got %q with error %s; want failed with its Lost error", j.Status, j.Error)
	}
	if n, err := db.RecoverJobs(t.Context(), time.Now()); err != nil || n != 1 {
		t.Errorf("RecoverJobs after the child was killed: got %d, %v; want 1, nil", n, err)
	}
	if j, err := db.Job(t.Context(), "child_recover"); err != nil || j.Status != store.JobFailed {
		t.Errorf("the child's other job after RecoverJobs: got %q, %v; want failed", j.Status, err)
	}
}
