package store

import (
	"context"
	"fmt"
	"time"
)

// A Job is a tool call that the gateway runs in the background for a
// client that asked for it as an MCP task (the io.modelcontextprotocol/tasks
// extension): the client is answered at once with the job's id, and polls
// it until the call has settled. The store keeps it so that every replica
// sharing the store can answer for it, and so that a job whose process died
// while it ran is reported as lost, not left working.
//
// Jobs are not the worktree tasks of TaskRecord; the MCP wire calls them
// tasks, Airlock's commands call them jobs.
type Job struct {
	// ID is the task id its client polls with: unguessable, as a client
	// that knows it may read the job's result (within its principal).
	ID string
	// Tenant and User are the principal the call was made for: only it
	// reads or cancels the job.
	Tenant string
	User   string
	// Server and Tool name the call (Tool as the client called it).
	Server string
	Tool   string
	// Write reports that the call was journaled; RecordID is then its
	// journal record, once the intent is begun.
	Write    bool
	RecordID string
	// Status is one of the JobStatus values; Message says more, for a
	// person.
	Status  JobStatus
	Message string
	// Result is the call's result as its client gets it (JSON), once
	// completed; Error the JSON-RPC error object, once failed; Input the
	// questions the call waits on (a JSON object, by key), while
	// input_required. Each is nil otherwise.
	Result []byte
	Error  []byte
	Input  []byte
	// Lost is the JSON-RPC error object the job settles failed with when
	// the process that runs it is gone before it settled (see
	// RecoverJobs): for a write, the unknown outcome and its record; it is
	// written at creation, since only the creator knows the words.
	Lost []byte
	// TTL is how long the job is kept after it was created; PollInterval
	// how often its client is asked to poll.
	TTL          time.Duration
	PollInterval time.Duration
	// CreatedAt is when it was created; UpdatedAt when its status last
	// changed (both by the store's clock, UpdatedAt at least CreatedAt).
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ExpiresAt is when the job may be removed.
func (j Job) ExpiresAt() time.Time { return j.CreatedAt.Add(j.TTL) }

// A JobStatus is where a job stands. Completed, failed and cancelled are
// terminal: a job that reached one stays in it.
type JobStatus string

const (
	JobWorking       JobStatus = "working"
	JobInputRequired JobStatus = "input_required"
	JobCompleted     JobStatus = "completed"
	JobFailed        JobStatus = "failed"
	JobCancelled     JobStatus = "cancelled"
)

// Terminal reports whether s is a status a job stays in.
func (s JobStatus) Terminal() bool {
	return s == JobCompleted || s == JobFailed || s == JobCancelled
}

// Valid reports whether s is one of the JobStatus values.
func (s JobStatus) Valid() bool {
	return s == JobWorking || s == JobInputRequired || s.Terminal()
}

// A JobUpdate is a change of a job's status: Status, with Message, and
// the Result (completed), Error (failed) or Input (input_required) that
// goes with it; RecordID, when not empty, records the call's journal
// record. The fields that do not go with Status are dropped.
type JobUpdate struct {
	Status   JobStatus
	Message  string
	Result   []byte
	Error    []byte
	Input    []byte
	RecordID string
}

// Check reports what makes u unfit to be applied.
func (u JobUpdate) Check() error {
	if !u.Status.Valid() {
		return fmt.Errorf("a job update to the status %q, not one of working, input_required, completed, failed and cancelled", u.Status)
	}
	return nil
}

// A JobFilter selects jobs to list. Zero fields select everything.
type JobFilter struct {
	// Tenant and User, when either is set, select the jobs of exactly
	// that principal.
	Tenant, User string
	Principal    bool // select by Tenant and User even when both are empty
	Server       string
	Status       []JobStatus
	// Limit bounds how many are returned (the newest); zero means all.
	Limit int
}

// Jobs keeps the jobs of every gateway process that shares a store. A
// backend that implements it, besides Store, keeps them; the gateway
// checks for it with a type assertion.
//
// A job is written by the process that created it (its writer, as for
// intents) until it settles; any process may cancel it. A job whose writer
// is gone before it settled is settled failed with its Lost error: by
// RecoverJobs, and by Job when it reads one.
//
// Implementations are safe for concurrent use by several goroutines and
// by several processes sharing one database.
type Jobs interface {
	// CreateJob records a new job, with this store as its writer. ID,
	// TTL (> 0) and a status that is not terminal are required; a zero
	// CreatedAt is set to now, and UpdatedAt to CreatedAt. A taken id is
	// ErrConflict.
	CreateJob(ctx context.Context, j Job) error
	// Job returns the job id, or ErrNotFound when there is none or it
	// expired. A job that is not terminal and whose writer is gone is
	// settled (failed, with its Lost error) before it is returned.
	Job(ctx context.Context, id string) (Job, error)
	// UpdateJob applies u to the job id, at now by the store's clock. Of
	// any number of updates to a terminal status, in any number of
	// processes, exactly one is applied; a job that is terminal already
	// is ErrConflict, and an unknown or expired id is ErrNotFound.
	UpdateJob(ctx context.Context, id string, u JobUpdate) error
	// ListJobs returns the jobs f selects that have not expired, oldest
	// first.
	ListJobs(ctx context.Context, f JobFilter) ([]Job, error)
	// RecoverJobs settles, at now, every job that is not terminal and
	// whose writer is gone, failed with its Lost error. It returns how
	// many it settled.
	RecoverJobs(ctx context.Context, now time.Time) (int, error)
	// PurgeJobs removes the jobs that expired before now and returns how
	// many.
	PurgeJobs(ctx context.Context, now time.Time) (int, error)
}
