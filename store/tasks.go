package store

import (
	"context"
	"fmt"
	"time"
)

// A TaskRecord is a task as a store keeps it: the part of the task's
// record on disk that the processes sharing the store need to see, and the
// place that holds its worktree. The worktree itself is a directory on one
// machine; the record tells every replica where it is.
type TaskRecord struct {
	ID string `json:"id"`
	// Holder is the id of the place that holds the task's worktree: one
	// state directory, which keeps its id in a file of its own, so that
	// the place stays the same when its machine is renamed.
	Holder string `json:"holder"`
	// Host and StateDir say where that place is, for people: the name of
	// its machine and the state directory's path there.
	Host     string `json:"host"`
	StateDir string `json:"state_dir"`
	Repo     string `json:"repo"`
	Branch   string `json:"branch"`
	Base     string `json:"base"`
	// Status is the task's status on disk: opening, open or closing.
	Status string `json:"status"`
	// Tenant and User are whom the task acts for, when not its host's
	// principal.
	Tenant    string    `json:"tenant"`
	User      string    `json:"user"`
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt is when the record was last written, by the store's
	// clock; HoldTask sets it.
	UpdatedAt time.Time `json:"updated_at"`
}

// Check reports what makes t unfit to be kept: an empty id or holder, or
// a status other than opening, open and closing.
func (t TaskRecord) Check() error {
	switch {
	case t.ID == "":
		return fmt.Errorf("a task record without an id")
	case t.Holder == "":
		return fmt.Errorf("task %s: a record without a holder", t.ID)
	case t.Status != "opening" && t.Status != "open" && t.Status != "closing":
		return fmt.Errorf("task %s: a record with the status %q, not opening, open or closing", t.ID, t.Status)
	}
	return nil
}

// Tasks keeps the records of the tasks of every place that shares a
// store, so that task ids are unique across them and each can list them
// all. A backend that implements it, besides Store, keeps them; a host
// checks for it with a type assertion, and one whose store does not
// implement it keeps its tasks on disk only.
//
// A place (a state directory, named by TaskRecord.Holder) writes only the
// records it holds: a record is held by the place that first recorded it
// until that place drops it.
//
// Implementations are safe for concurrent use by several goroutines and
// by several processes sharing one database.
type Tasks interface {
	// HoldTask records t for its holder: it inserts the record of t.ID,
	// or replaces the one t.Holder already holds, and reports whether it
	// inserted one. A record of t.ID held by another place is left as it
	// is, and is ErrConflict. Of any number of concurrent callers for one
	// new id, in any number of processes, exactly one inserts. UpdatedAt
	// is set to the current time, and a zero CreatedAt to it too.
	HoldTask(ctx context.Context, t TaskRecord) (inserted bool, err error)
	// DropTask deletes the record of id that holder holds. No record is
	// ErrNotFound; one held by another place is ErrConflict, and stays.
	DropTask(ctx context.Context, id, holder string) error
	// TaskRecord returns the record of id, or ErrNotFound.
	TaskRecord(ctx context.Context, id string) (TaskRecord, error)
	// TaskRecords returns every record, oldest first (by CreatedAt, then
	// id).
	TaskRecords(ctx context.Context) ([]TaskRecord, error)
}

// NotHeld is the error of a HoldTask or DropTask of id by holder that
// changed nothing, given what TaskRecord then returned for id.
func NotHeld(id string, t TaskRecord, err error) error {
	if err != nil {
		return fmt.Errorf("task %s: %w", id, err)
	}
	return fmt.Errorf("task %s is held by %s (state directory %s): %w", id, t.Host, t.StateDir, ErrConflict)
}
