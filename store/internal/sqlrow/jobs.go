package sqlrow

import (
	"errors"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/store"
)

// JobColumns are the columns of a job that Job reads, in its order. TTL
// and PollInterval are kept as whole milliseconds, ttl_ms and poll_ms.
const JobColumns = `id, tenant, user_name, server, tool, write, record_id, status, message,
	result, error, input, lost, ttl_ms, poll_ms, created_at, updated_at`

// JobOpen is the condition of a job that has not settled: its status is
// not terminal.
const JobOpen = `status IN ('working', 'input_required')`

// JobLostMessage is the message of a job settled failed because its
// writer was gone.
const JobLostMessage = "the process that ran the call ended before it settled"

// Job reads a job, from the columns JobColumns names, then into extra any
// that follow them.
func Job[T any](row Row, at func(T) time.Time, extra ...any) (store.Job, error) {
	var (
		j                store.Job
		status           string
		ttl, poll        int64
		created, updated T
	)
	err := row.Scan(append([]any{&j.ID, &j.Tenant, &j.User, &j.Server, &j.Tool, &j.Write, &j.RecordID, &status, &j.Message,
		&j.Result, &j.Error, &j.Input, &j.Lost, &ttl, &poll, &created, &updated}, extra...)...)
	if err != nil {
		return store.Job{}, err
	}
	j.Status = store.JobStatus(status)
	j.TTL, j.PollInterval = time.Duration(ttl)*time.Millisecond, time.Duration(poll)*time.Millisecond
	j.CreatedAt, j.UpdatedAt = at(created), at(updated)
	return j, nil
}

// CheckJob reports what makes j unfit to be created, as store.Jobs
// documents CreateJob, for a backend that keeps durations to the
// millisecond: a TTL under a millisecond would be kept as none.
func CheckJob(j store.Job) error {
	switch {
	case j.ID == "":
		return errors.New("create job: no id")
	case j.TTL < time.Millisecond:
		return fmt.Errorf("create job %s: a TTL of %v, not at least a millisecond", j.ID, j.TTL)
	case j.PollInterval < 0:
		return fmt.Errorf("create job %s: a negative poll interval", j.ID)
	case !j.Status.Valid():
		return fmt.Errorf("create job %s: the status %q, not one of working and input_required", j.ID, j.Status)
	case j.Status.Terminal():
		return fmt.Errorf("create job %s: the status %s is terminal, and a job is created unsettled", j.ID, j.Status)
	}
	return nil
}

// JobFields returns result, fail and input as a job of status s keeps
// them: each nil unless it goes with s (result with completed, fail with
// failed, input with input_required).
func JobFields(s store.JobStatus, result, fail, input []byte) (r, f, i []byte) {
	switch s {
	case store.JobCompleted:
		return result, nil, nil
	case store.JobFailed:
		return nil, fail, nil
	case store.JobInputRequired:
		return nil, nil, input
	}
	return nil, nil, nil
}

// ReadJob reads the job id by read, with its writer, and settles it first
// if it is unsettled and its writer, not own, is gone: settle settles the
// job if its writer is gone, and says whether it was. The job of a writer
// that is gone is read again, whether settle or another (RecoverJobs in
// another process) settled it.
func ReadJob[W comparable](id string, own W, read func() (store.Job, W, error), settle func(W) (gone bool, err error)) (store.Job, error) {
	j, writer, err := read()
	if err != nil || j.Status.Terminal() || writer == own {
		return j, err
	}
	gone, err := settle(writer)
	if err != nil {
		return store.Job{}, fmt.Errorf("read job %s: %w", id, err)
	}
	if !gone {
		return j, nil
	}
	j, _, err = read()
	return j, err
}

// UpdateJob applies u to the job id: update runs the conditional UPDATE
// of an unsettled job that has not expired, with result, fail and input as
// JobFields keeps them for u's status, and says how many rows it changed.
// If none, read reads the job's status and whether it has not expired, to
// say why (jobNotUpdated); noRows is the driver's error for no row.
func UpdateJob(id string, u store.JobUpdate, update func(result, fail, input []byte) (int64, error), read func() (status string, live bool, err error), noRows error) error {
	if err := u.Check(); err != nil {
		return fmt.Errorf("update job %s: %w", id, err)
	}
	n, err := update(JobFields(u.Status, u.Result, u.Error, u.Input))
	if err != nil {
		return fmt.Errorf("update job %s: %w", id, err)
	}
	if n == 1 {
		return nil
	}
	status, live, err := read()
	return jobNotUpdated(id, store.JobStatus(status), live, err, noRows)
}

// NewestJobs is a query of the jobs that where selects, the newest that
// limit (a placeholder) keeps, put oldest first.
func NewestJobs(where, limit string) string {
	return `
SELECT ` + JobColumns + ` FROM (
	SELECT seq, ` + JobColumns + ` FROM jobs
	WHERE ` + where + `
	ORDER BY created_at DESC, seq DESC
	LIMIT ` + limit + `
) newest
ORDER BY created_at, seq`
}

// jobNotUpdated says why an update of the job id changed nothing, from
// the job as read after it: status, and live, whether it has not expired.
// A job that is missing or expired is store.ErrNotFound, and one that has
// settled store.ErrConflict. err is the read's, noRows the driver's error
// for no row.
func jobNotUpdated(id string, status store.JobStatus, live bool, err, noRows error) error {
	switch {
	case errors.Is(err, noRows):
		return fmt.Errorf("update job %s: %w", id, store.ErrNotFound)
	case err != nil:
		return fmt.Errorf("update job %s: %w", id, err)
	case live && status.Terminal():
		return fmt.Errorf("update job %s: it is %s already: %w", id, status, store.ErrConflict)
	}
	// Expired; or unsettled and live only if the clock went back between
	// the update and the read, and the update found it expired.
	return fmt.Errorf("update job %s: %w", id, store.ErrNotFound)
}
