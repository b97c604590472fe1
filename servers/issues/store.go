package issues

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"
)

// MemoryData is the [Options.Data] value for an in-memory store: one
// database shared by every request, gone when the server stops.
const MemoryData = ":memory:"

// Issue statuses.
const (
	StatusOpen   = "open"
	StatusClosed = "closed"
)

// errNotFound is returned for an issue that does not exist in the caller's
// tenant, whether it exists in another tenant or nowhere.
var errNotFound = errors.New("issue does not exist")

// errKeyReused is returned when an idempotency key comes back with
// different arguments.
var errKeyReused = errors.New("idempotency key reused with different arguments")

// store keeps issues in SQLite. Every query names the tenant: there is no
// way to read or change an issue without saying whose it is.
type store struct {
	db  *sql.DB
	now func() time.Time
}

const schemaSQL = `
CREATE TABLE IF NOT EXISTS issues (
	tenant          TEXT    NOT NULL,
	seq             INTEGER NOT NULL,
	project         TEXT    NOT NULL,
	title           TEXT    NOT NULL,
	body            TEXT    NOT NULL,
	status          TEXT    NOT NULL CHECK (status IN ('open', 'closed')),
	created_by      TEXT    NOT NULL,
	created_at      INTEGER NOT NULL,
	closed_by       TEXT,
	closed_at       INTEGER,
	idempotency_key TEXT    NOT NULL,
	request_hash    TEXT    NOT NULL,
	PRIMARY KEY (tenant, seq)
) STRICT;
CREATE UNIQUE INDEX IF NOT EXISTS issues_idempotency ON issues (tenant, idempotency_key);
CREATE INDEX IF NOT EXISTS issues_by_project ON issues (tenant, project, seq);
`

// openStore opens (creating if needed) the database at path, or an
// in-memory one for MemoryData.
func openStore(ctx context.Context, path string) (*store, error) {
	var dsn string
	params := url.Values{
		"_txlock":       {"immediate"}, // writers take the lock up front instead of failing to upgrade
		"_busy_timeout": {"5000"},
		"_foreign_keys": {"on"},
		"_time_format":  {"sqlite"},
		"_journal_mode": {"WAL"},
		"_synchronous":  {"NORMAL"},
	}
	switch {
	case path == "":
		return nil, errors.New("the data file is required (or :memory:)")
	case path == MemoryData:
		params.Del("_journal_mode")
		params.Del("_synchronous")
		dsn = ":memory:?" + params.Encode()
	case strings.ContainsAny(path, "?#"):
		return nil, fmt.Errorf("data file %q: the name must not contain ? or #", path)
	default:
		dsn = path + "?" + params.Encode()
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open data file: %w", err)
	}
	if path == MemoryData {
		// Every connection to ":memory:" is a new, empty database; one
		// connection that never closes makes it one shared database.
		db.SetMaxOpenConns(1)
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
	} else {
		db.SetMaxOpenConns(8)
	}
	if _, err := db.ExecContext(ctx, schemaSQL); err != nil {
		db.Close()
		return nil, fmt.Errorf("prepare data file: %w", err)
	}
	return &store{db: db, now: time.Now}, nil
}

func (s *store) close() error { return s.db.Close() }

func (s *store) ping(ctx context.Context) error { return s.db.PingContext(ctx) }

const issueColumns = `seq, project, title, body, status, created_by, created_at, closed_by, closed_at`

func scanIssue(row interface{ Scan(...any) error }) (Issue, int64, error) {
	var (
		is        Issue
		seq       int64
		createdAt int64
		closedBy  sql.NullString
		closedAt  sql.NullInt64
	)
	if err := row.Scan(&seq, &is.Project, &is.Title, &is.Body, &is.Status, &is.CreatedBy, &createdAt, &closedBy, &closedAt); err != nil {
		return Issue{}, 0, err
	}
	is.ID = formatID(seq)
	is.CreatedAt = time.Unix(createdAt, 0).UTC().Format(time.RFC3339)
	if closedAt.Valid {
		is.ClosedAt = time.Unix(closedAt.Int64, 0).UTC().Format(time.RFC3339)
		is.ClosedBy = closedBy.String
	}
	return is, seq, nil
}

// get returns tenant's issue seq.
func (s *store) get(ctx context.Context, tenant string, seq int64) (Issue, error) {
	row := s.db.QueryRowContext(ctx, `SELECT `+issueColumns+` FROM issues WHERE tenant = ? AND seq = ?`, tenant, seq)
	is, _, err := scanIssue(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Issue{}, errNotFound
	}
	return is, err
}

// listQuery selects a page of a tenant's issues.
type listQuery struct {
	project string // "" for every project
	status  string // "" for every status
	after   int64  // issues with a larger seq
	limit   int
}

// list returns up to q.limit issues in id order and whether more follow.
func (s *store) list(ctx context.Context, tenant string, q listQuery) ([]Issue, bool, error) {
	query := `SELECT ` + issueColumns + ` FROM issues WHERE tenant = ? AND seq > ?`
	args := []any{tenant, q.after}
	if q.project != "" {
		query += ` AND project = ?`
		args = append(args, q.project)
	}
	if q.status != "" {
		query += ` AND status = ?`
		args = append(args, q.status)
	}
	query += ` ORDER BY seq LIMIT ?`
	args = append(args, q.limit+1)
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	issues := []Issue{}
	for rows.Next() {
		is, _, err := scanIssue(rows)
		if err != nil {
			return nil, false, err
		}
		issues = append(issues, is)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	more := len(issues) > q.limit
	if more {
		issues = issues[:q.limit]
	}
	return issues, more, nil
}

// newIssue is what create_issue asks for.
type newIssue struct {
	project, title, body, key string
}

// hash identifies the arguments an idempotency key was first used with.
func (n newIssue) hash() string {
	h := sha256.New()
	for _, s := range []string{n.project, n.title, n.body} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// create adds an issue for tenant unless tenant already used n.key, in which
// case it returns the issue created the first time (created is false). The
// unique index on (tenant, idempotency_key) is what makes this safe against
// racing calls, also from other processes sharing the file: the insert
// either creates the row or does nothing, atomically.
func (s *store) create(ctx context.Context, tenant, subject string, n newIssue) (is Issue, created bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Issue{}, false, err
	}
	defer tx.Rollback()
	var seq int64
	err = tx.QueryRowContext(ctx, `
		INSERT INTO issues (tenant, seq, project, title, body, status, created_by, created_at, idempotency_key, request_hash)
		SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ?, 'open', ?, ?, ?, ? FROM issues WHERE tenant = ?
		ON CONFLICT (tenant, idempotency_key) DO NOTHING
		RETURNING seq`,
		tenant, n.project, n.title, n.body, subject, s.now().Unix(), n.key, n.hash(), tenant,
	).Scan(&seq)
	switch {
	case err == nil:
		created = true
	case errors.Is(err, sql.ErrNoRows):
		// The key was used before: answer with the first result.
		var hash string
		if err := tx.QueryRowContext(ctx, `SELECT seq, request_hash FROM issues WHERE tenant = ? AND idempotency_key = ?`, tenant, n.key).Scan(&seq, &hash); err != nil {
			return Issue{}, false, err
		}
		if hash != n.hash() {
			return Issue{ID: formatID(seq)}, false, errKeyReused
		}
	default:
		return Issue{}, false, err
	}
	row := tx.QueryRowContext(ctx, `SELECT `+issueColumns+` FROM issues WHERE tenant = ? AND seq = ?`, tenant, seq)
	if is, _, err = scanIssue(row); err != nil {
		return Issue{}, false, err
	}
	return is, created, tx.Commit()
}

// closeIssue closes tenant's issue seq. Closing a closed issue changes
// nothing and returns it as it is.
func (s *store) closeIssue(ctx context.Context, tenant, subject string, seq int64) (Issue, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Issue{}, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `
		UPDATE issues SET status = 'closed', closed_by = ?, closed_at = ?
		WHERE tenant = ? AND seq = ? AND status = 'open'`,
		subject, s.now().Unix(), tenant, seq); err != nil {
		return Issue{}, err
	}
	row := tx.QueryRowContext(ctx, `SELECT `+issueColumns+` FROM issues WHERE tenant = ? AND seq = ?`, tenant, seq)
	is, _, err := scanIssue(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Issue{}, errNotFound
	}
	if err != nil {
		return Issue{}, err
	}
	return is, tx.Commit()
}
