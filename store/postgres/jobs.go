package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/internal/sqlrow"
)

// Jobs are rows of the table jobs, one per job id, each with the writer
// id of the DB that created it (the one its intents record). Every change
// of a job's status is one conditional UPDATE: PostgreSQL lets one of
// several racing updates to a terminal status, in any number of
// processes, find the job unsettled. A job's writer is gone when its
// writer lock is free, as RecoverOpen decides for intents. Times that the
// store sets (a job's default CreatedAt, UpdatedAt) and the expiry of
// jobs, but for PurgeJobs, are by the server's clock, which every replica
// shares.

var _ store.Jobs = (*DB)(nil)

// createJobQuery inserts a job only while its writer's lock is held by the
// writer's session ($18, the backend pid), as beginQuery does an intent:
// a job is never recorded under a writer that another replica would find
// gone. $16 is the creation time, NULL for now.
var createJobQuery = `
INSERT INTO jobs (` + sqlrow.JobColumns + `, expires_at, writer)
SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::boolean, $7::text, $8::text, $9::text,
	$10::bytea, $11::bytea, $12::bytea, $13::bytea, $14::bigint, $15::bigint,
	c.at, c.at, c.at + $14::bigint * interval '1 millisecond', $17::bigint
FROM (SELECT COALESCE($16::timestamptz, now()) AS at) c
WHERE ` + writerHeld("$17", "$18")

// CreateJob records a new job, with this DB as its writer; see
// store.Jobs.
func (db *DB) CreateJob(ctx context.Context, j store.Job) error {
	if err := sqlrow.CheckJob(j); err != nil {
		return err
	}
	var created any // NULL: now, by the server's clock
	if !j.CreatedAt.IsZero() {
		created = store.UTC(j.CreatedAt)
	}
	result, fail, input := sqlrow.JobFields(j.Status, j.Result, j.Error, j.Input)
	var stale *session
	for range 2 {
		s, err := db.writerLock(ctx, stale)
		if err != nil {
			return fmt.Errorf("create job %s: %w", j.ID, err)
		}
		tag, err := db.pool.Exec(ctx, createJobQuery,
			j.ID, j.Tenant, j.User, j.Server, j.Tool, j.Write, j.RecordID, string(j.Status), j.Message,
			result, fail, input, j.Lost, j.TTL.Milliseconds(), j.PollInterval.Milliseconds(),
			created, s.writer, int64(s.pid))
		if err != nil {
			return inserted(err, "create job "+j.ID+": the id is taken", "create job "+j.ID)
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		// The lock's session is gone: take a new lock, once.
		stale = s
	}
	return fmt.Errorf("create job %s: the journal's writer lock was lost", j.ID)
}

// Job returns the job id, settling it first if its writer is gone; see
// store.Jobs.
func (db *DB) Job(ctx context.Context, id string) (store.Job, error) {
	read := func() (store.Job, int64, error) { return db.job(ctx, id) }
	return sqlrow.ReadJob(id, db.ownWriter(), read, func(w int64) (bool, error) {
		return db.whileGone(ctx, w, func(tx pgx.Tx) error {
			_, err := settleLost(ctx, tx, w, id, nil)
			return err
		})
	})
}

// job reads the job id, unless it has expired, and its writer.
func (db *DB) job(ctx context.Context, id string) (store.Job, int64, error) {
	var writer int64
	rows, err := db.pool.Query(ctx, `SELECT `+sqlrow.JobColumns+`, writer FROM jobs WHERE id = $1 AND expires_at >= now()`, id)
	j, err := one(rows, err, func(row pgx.CollectableRow) (store.Job, error) { return scanJob(row, &writer) })
	if err != nil {
		return store.Job{}, 0, found(err, "job "+id, "read job "+id)
	}
	return j, writer, nil
}

// UpdateJob applies u to the job id; see store.Jobs.
func (db *DB) UpdateJob(ctx context.Context, id string, u store.JobUpdate) error {
	update := func(result, fail, input []byte) (int64, error) {
		tag, err := db.pool.Exec(ctx, `
UPDATE jobs SET status = $1, message = $2, result = $3, error = $4, input = $5,
	record_id = CASE WHEN $6::text = '' THEN record_id ELSE $6::text END, updated_at = GREATEST(created_at, now())
WHERE id = $7 AND `+sqlrow.JobOpen+` AND expires_at >= now()`,
			string(u.Status), u.Message, result, fail, input, u.RecordID, id)
		return tag.RowsAffected(), err
	}
	read := func() (status string, live bool, err error) {
		err = db.pool.QueryRow(ctx, `SELECT status, expires_at >= now() FROM jobs WHERE id = $1`, id).Scan(&status, &live)
		return status, live, err
	}
	return sqlrow.UpdateJob(id, u, update, read, pgx.ErrNoRows)
}

// ListJobs returns the jobs f selects, oldest first; see store.Jobs.
func (db *DB) ListJobs(ctx context.Context, f store.JobFilter) ([]store.Job, error) {
	principal := f.Principal || f.Tenant != "" || f.User != ""
	var statuses []string // NULL: any
	for _, s := range f.Status {
		statuses = append(statuses, string(s))
	}
	rows, err := db.pool.Query(ctx, sqlrow.NewestJobs(`expires_at >= now() AND (NOT $1 OR (tenant = $2 AND user_name = $3))
		AND ($4 = '' OR server = $4) AND ($5::text[] IS NULL OR status = ANY($5::text[]))`, "$6"),
		principal, f.Tenant, f.User, f.Server, statuses, limit(f.Limit))
	out, err := collect(rows, err, func(row pgx.CollectableRow) (store.Job, error) { return scanJob(row) })
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return out, nil
}

// RecoverJobs settles the unsettled jobs of every writer whose lock it
// can take; see store.Jobs.
func (db *DB) RecoverJobs(ctx context.Context, at time.Time) (int, error) {
	n, err := db.settleGone(ctx, "jobs", sqlrow.JobOpen, func(tx pgx.Tx, w int64) (int, error) {
		return settleLost(ctx, tx, w, "", store.UTC(at))
	})
	if err != nil {
		return n, fmt.Errorf("recover jobs: %w", err)
	}
	return n, nil
}

// settleLost settles failed, at at (nil: now), with their Lost errors, the
// unsettled jobs of writer that have not expired: the one job id, or all
// of them when id is empty. The caller holds the writer's lock for tx
// (whileGone).
func settleLost(ctx context.Context, tx pgx.Tx, writer int64, id string, at any) (int, error) {
	tag, err := tx.Exec(ctx, `
UPDATE jobs SET status = 'failed', message = $1, result = NULL, error = lost, input = NULL,
	updated_at = GREATEST(created_at, COALESCE($2::timestamptz, now()))
WHERE writer = $3 AND ($4 = '' OR id = $4) AND `+sqlrow.JobOpen+` AND expires_at >= COALESCE($2::timestamptz, now())`,
		sqlrow.JobLostMessage, at, writer, id)
	if err != nil {
		return 0, fmt.Errorf("settle the jobs of a writer that is gone: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// PurgeJobs removes the jobs that expired before now; see store.Jobs.
func (db *DB) PurgeJobs(ctx context.Context, at time.Time) (int, error) {
	tag, err := db.pool.Exec(ctx, `DELETE FROM jobs WHERE expires_at < $1`, store.UTC(at))
	if err != nil {
		return 0, fmt.Errorf("purge jobs: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// scanJob reads the columns sqlrow.JobColumns names, then into extra any
// that follow them.
func scanJob(row pgx.CollectableRow, extra ...any) (store.Job, error) {
	return sqlrow.Job(row, utc, extra...)
}
