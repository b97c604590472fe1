package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/internal/sqlrow"
)

// Jobs are rows of the table jobs, one per job id, each with the writer id
// of the DB that created it (the one its intents record). Every change of
// a job's status is one conditional UPDATE, which SQLite runs under its
// write lock: of racing updates to a terminal status, in any number of
// processes, one finds the job unsettled and the others find it settled.
// A job's writer is gone when nobody holds its lock file (writerGone), as
// RecoverOpen decides for intents.

var _ store.Jobs = (*DB)(nil)

// CreateJob records a new job, with this DB as its writer; see
// store.Jobs.
func (db *DB) CreateJob(ctx context.Context, j store.Job) error {
	if err := sqlrow.CheckJob(j); err != nil {
		return err
	}
	writer, err := db.writerID()
	if err != nil {
		return fmt.Errorf("create job %s: %w", j.ID, err)
	}
	created := now()
	if !j.CreatedAt.IsZero() {
		created = store.UTC(j.CreatedAt)
	}
	ttl := j.TTL.Truncate(time.Millisecond)
	result, fail, input := sqlrow.JobFields(j.Status, j.Result, j.Error, j.Input)
	_, err = db.w.ExecContext(ctx, `
INSERT INTO jobs (`+sqlrow.JobColumns+`, expires_at, writer)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		j.ID, j.Tenant, j.User, j.Server, j.Tool, j.Write, j.RecordID, string(j.Status), j.Message,
		blob(result), blob(fail), blob(input), blob(j.Lost), ttl.Milliseconds(), j.PollInterval.Milliseconds(),
		micros(created), micros(created), micros(created.Add(ttl)), writer)
	return inserted(err, "create job "+j.ID+": the id is taken", "create job "+j.ID)
}

// Job returns the job id, settling it first if its writer is gone; see
// store.Jobs.
func (db *DB) Job(ctx context.Context, id string) (store.Job, error) {
	read := func() (store.Job, string, error) { return db.job(ctx, id) }
	return sqlrow.ReadJob(id, db.ownWriter(), read, func(w string) (bool, error) {
		return db.whileGone(w, func() error {
			_, err := db.settleLost(ctx, w, id, now())
			return err
		})
	})
}

// job reads the job id, unless it has expired, and its writer.
func (db *DB) job(ctx context.Context, id string) (store.Job, string, error) {
	var writer string
	j, err := scanJob(db.r.QueryRowContext(ctx, `SELECT `+sqlrow.JobColumns+`, writer FROM jobs WHERE id = ? AND expires_at >= ?`,
		id, micros(now())), &writer)
	if err != nil {
		return store.Job{}, "", found(err, "job "+id, "read job "+id)
	}
	return j, writer, nil
}

// UpdateJob applies u to the job id; see store.Jobs.
func (db *DB) UpdateJob(ctx context.Context, id string, u store.JobUpdate) error {
	update := func(result, fail, input []byte) (int64, error) {
		res, err := db.w.ExecContext(ctx, `
UPDATE jobs SET status = ?1, message = ?2, result = ?3, error = ?4, input = ?5,
	record_id = CASE WHEN ?6 = '' THEN record_id ELSE ?6 END, updated_at = MAX(created_at, ?7)
WHERE id = ?8 AND `+sqlrow.JobOpen+` AND expires_at >= ?7`,
			string(u.Status), u.Message, blob(result), blob(fail), blob(input), u.RecordID, micros(now()), id)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
	read := func() (status string, live bool, err error) {
		err = db.r.QueryRowContext(ctx, `SELECT status, expires_at >= ? FROM jobs WHERE id = ?`, micros(now()), id).Scan(&status, &live)
		return status, live, err
	}
	return sqlrow.UpdateJob(id, u, update, read, sql.ErrNoRows)
}

// ListJobs returns the jobs f selects, oldest first; see store.Jobs.
func (db *DB) ListJobs(ctx context.Context, f store.JobFilter) ([]store.Job, error) {
	principal := f.Principal || f.Tenant != "" || f.User != ""
	args := []any{micros(now()), principal, f.Tenant, f.User, f.Server, limit(f.Limit)}
	statuses := ""
	if len(f.Status) > 0 {
		in := make([]string, len(f.Status))
		for i, s := range f.Status {
			in[i] = fmt.Sprintf("?%d", len(args)+1)
			args = append(args, string(s))
		}
		statuses = ` AND status IN (` + strings.Join(in, ", ") + `)`
	}
	out, err := queryAll(ctx, db.r, func(row scanner) (store.Job, error) { return scanJob(row) },
		sqlrow.NewestJobs(`expires_at >= ?1 AND (NOT ?2 OR (tenant = ?3 AND user_name = ?4)) AND (?5 = '' OR server = ?5)`+statuses, "?6"),
		args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return out, nil
}

// RecoverJobs settles the unsettled jobs of every writer that is gone;
// see store.Jobs.
func (db *DB) RecoverJobs(ctx context.Context, at time.Time) (int, error) {
	n, err := db.settleGone(ctx, "jobs", sqlrow.JobOpen, func(w string) (int, error) {
		return db.settleLost(ctx, w, "", store.UTC(at))
	})
	if err != nil {
		return n, fmt.Errorf("recover jobs: %w", err)
	}
	return n, nil
}

// settleLost settles failed, at at, with their Lost errors, the unsettled
// jobs of writer that have not expired: the one job id, or all of them
// when id is empty. The caller has found writer gone, and holds its lock
// file while it settles them (whileGone).
func (db *DB) settleLost(ctx context.Context, writer, id string, at time.Time) (int, error) {
	res, err := db.w.ExecContext(ctx, `
UPDATE jobs SET status = 'failed', message = ?1, result = NULL, error = lost, input = NULL,
	updated_at = MAX(created_at, ?2)
WHERE writer = ?3 AND (?4 = '' OR id = ?4) AND `+sqlrow.JobOpen+` AND expires_at >= ?2`,
		sqlrow.JobLostMessage, micros(at), writer, id)
	if err != nil {
		return 0, fmt.Errorf("settle the jobs of a writer that is gone: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// PurgeJobs removes the jobs that expired before now; see store.Jobs.
func (db *DB) PurgeJobs(ctx context.Context, at time.Time) (int, error) {
	res, err := db.w.ExecContext(ctx, `DELETE FROM jobs WHERE expires_at < ?`, micros(store.UTC(at)))
	if err != nil {
		return 0, fmt.Errorf("purge jobs: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// scanJob reads the columns sqlrow.JobColumns names, then into extra any
// that follow them.
func scanJob(row scanner, extra ...any) (store.Job, error) {
	return sqlrow.Job(row, fromMicros, extra...)
}

// blob is b as a statement's argument: NULL for nil, which the driver
// would otherwise write as an empty blob.
func blob(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}
