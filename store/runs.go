package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// A RunStatus is where an agent run stands.
type RunStatus string

const (
	// RunRunning: the run is going on, or its process died while it was
	// (it can be resumed).
	RunRunning RunStatus = "running"
	// RunWaiting: the run paused for a person: a call waits for an
	// approval (airlock approvals approve), then airlock run --resume.
	RunWaiting RunStatus = "waiting"
	// RunDone: the model gave its final answer.
	RunDone RunStatus = "done"
	// RunFailed: the provider or the host failed in a way the run could
	// not go on from; it may be resumed.
	RunFailed RunStatus = "failed"
	// RunCancelled: the person interrupted it; it may be resumed.
	RunCancelled RunStatus = "cancelled"
)

// Valid reports whether SaveRun accepts s.
func (s RunStatus) Valid() bool {
	switch s {
	case RunRunning, RunWaiting, RunDone, RunFailed, RunCancelled:
		return true
	}
	return false
}

// A RunRecord is an agent run as a store keeps it: what airlock runs lists,
// and the checkpoint the run resumes from. Its JSON, without Checkpoint, is
// an element of `airlock runs --json` ("runs").
//
// Nothing in it is a secret: the agent loop keeps API keys out of it, and
// what it holds of tool results is what the pipeline gave the model
// (scrubbed).
type RunRecord struct {
	ID     string    `json:"id"`
	Status RunStatus `json:"status"`
	// Tenant and User are whom the run acts for.
	Tenant string `json:"tenant"`
	User   string `json:"user"`
	// Provider and Model are what the run asks: openai or anthropic, and
	// the provider's model name.
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Task is the worktree task the run acts in, "" for none.
	Task string `json:"task,omitempty"`
	// Title is the start of the run's prompt, for lists.
	Title string `json:"title"`
	// Steps counts the model steps taken; ToolCalls the tool calls the
	// model asked for; InputTokens and OutputTokens what the provider
	// reported, summed over the steps.
	Steps        int   `json:"steps"`
	ToolCalls    int   `json:"tool_calls"`
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// Snapshot is the catalog snapshot of the newest step.
	Snapshot string `json:"snapshot"`
	// Error says why a failed run failed, for a person.
	Error string `json:"error,omitempty"`
	// Checkpoint is the agent loop's own state (messages, calls of the
	// step in flight), JSON the store keeps as it is given. Lists leave
	// it out.
	Checkpoint json.RawMessage `json:"-"`
	CreatedAt  time.Time       `json:"created_at"`
	// UpdatedAt is when the record was last saved, by the store's clock;
	// SaveRun sets it.
	UpdatedAt time.Time `json:"updated_at"`
}

// Check reports what makes r unfit to be kept: an empty id, an invalid
// status, a checkpoint that is not JSON.
func (r RunRecord) Check() error {
	switch {
	case r.ID == "":
		return fmt.Errorf("a run record without an id")
	case !r.Status.Valid():
		return fmt.Errorf("run %s: a record with the status %q, not running, waiting, done, failed or cancelled", r.ID, r.Status)
	case len(r.Checkpoint) > 0 && !json.Valid(r.Checkpoint):
		return fmt.Errorf("run %s: its checkpoint is not JSON", r.ID)
	}
	return nil
}

// A RunFilter selects run records. The zero value selects every run.
type RunFilter struct {
	// Tenant and User, if set, select only the runs made for that tenant
	// and user.
	Tenant string
	User   string
	// Limit caps how many records are returned, the newest; <= 0 is no
	// cap.
	Limit int
}

// Runs keeps agent runs and their checkpoints (airlock run, airlock
// runs), so that a run whose process was killed resumes where its last
// checkpoint left it. A backend that implements it, besides Store, keeps
// them; the agent loop checks for it with a type assertion.
//
// Implementations are safe for concurrent use by several goroutines and
// by several processes sharing one database.
type Runs interface {
	// SaveRun inserts r, or replaces the record of r.ID, durably (committed
	// when it returns nil). UpdatedAt is set to the current time, and a
	// zero CreatedAt to the record's first CreatedAt, or to now for a new
	// one.
	SaveRun(ctx context.Context, r RunRecord) error
	// SaveRunRelaxed is SaveRun that returns without waiting for the
	// disk: the record is committed, visible to every reader and survives
	// the process, but a crash of the machine may lose it until the
	// store's next durable write, which makes it durable too (writes reach
	// the disk in the order they were committed). The agent loop saves
	// its checkpoints so between steps: a write it sends is preceded by
	// the journal's durable intent, which carries the checkpoint with it.
	SaveRunRelaxed(ctx context.Context, r RunRecord) error
	// RunRecord returns the record of id, its checkpoint included, or
	// ErrNotFound.
	RunRecord(ctx context.Context, id string) (RunRecord, error)
	// RunRecords returns the records f selects without their checkpoints,
	// newest first (by CreatedAt, then id descending).
	RunRecords(ctx context.Context, f RunFilter) ([]RunRecord, error)
}
