package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/airlockhq/airlock/store/internal/sqlrow"
)

// migrations are the schema's versions: migrations[i] takes a database from
// version i to i+1 (PRAGMA user_version). Never edit one that has shipped;
// append a new one.
//
// Times are INTEGER microseconds since the Unix epoch. Every table keeps an
// INTEGER PRIMARY KEY seq, the order rows were written, to break ties
// between equal times.
var migrations = []string{
	`
CREATE TABLE intents (
	seq         INTEGER PRIMARY KEY,
	id          TEXT    NOT NULL UNIQUE,
	call_id     TEXT    NOT NULL,
	server      TEXT    NOT NULL,
	tool        TEXT    NOT NULL,
	remote_tool TEXT    NOT NULL,
	args_hash   TEXT    NOT NULL,
	snapshot    TEXT    NOT NULL,
	effect      TEXT    NOT NULL,
	idempotent  INTEGER NOT NULL CHECK (idempotent IN (0, 1)),
	tenant      TEXT    NOT NULL,
	user_name   TEXT    NOT NULL,
	created_at  INTEGER NOT NULL,
	writer      TEXT    NOT NULL,
	outcome     TEXT    CHECK (outcome IN ('succeeded', 'failed', 'rejected', 'unknown')),
	detail      TEXT    NOT NULL DEFAULT '',
	ended_at    INTEGER,
	resolution  TEXT    CHECK (resolution IN ('applied', 'not-applied')),
	note        TEXT    NOT NULL DEFAULT '',
	resolved_by TEXT    NOT NULL DEFAULT '',
	resolved_at INTEGER,
	CHECK ((outcome IS NULL) = (ended_at IS NULL)),
	CHECK (resolution IS NULL OR outcome = 'unknown'),
	CHECK ((resolution IS NULL) = (resolved_at IS NULL))
) STRICT;
CREATE INDEX intents_open ON intents (writer) WHERE outcome IS NULL;
CREATE INDEX intents_unresolved ON intents (created_at, seq) WHERE outcome = 'unknown' AND resolution IS NULL;
CREATE INDEX intents_created ON intents (created_at, seq);

CREATE TABLE approvals (
	seq        INTEGER PRIMARY KEY,
	id         TEXT    NOT NULL UNIQUE,
	server     TEXT    NOT NULL,
	tool       TEXT    NOT NULL,
	digest     TEXT    NOT NULL,
	summary    TEXT    NOT NULL,
	status     TEXT    NOT NULL CHECK (status IN ('pending', 'granted', 'denied', 'used')),
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	tenant     TEXT    NOT NULL,
	user_name  TEXT    NOT NULL,
	decided_by TEXT    NOT NULL DEFAULT '',
	decided_at INTEGER,
	note       TEXT    NOT NULL DEFAULT '',
	used_at    INTEGER,
	CHECK ((status = 'used') = (used_at IS NOT NULL))
) STRICT;
CREATE INDEX approvals_grants ON approvals (digest, created_at, seq) WHERE status = 'granted';
CREATE INDEX approvals_created ON approvals (created_at, seq);

CREATE TABLE events (
	seq         INTEGER PRIMARY KEY,
	time        INTEGER NOT NULL,
	event       TEXT    NOT NULL,
	server      TEXT    NOT NULL,
	tool        TEXT    NOT NULL,
	snapshot    TEXT    NOT NULL,
	class       TEXT    NOT NULL,
	duration_ms INTEGER NOT NULL,
	fields      TEXT    -- a JSON object, or NULL for none
) STRICT;
CREATE INDEX events_time ON events (time, seq);
`,
	`
CREATE TABLE tool_lists (
	key        TEXT    PRIMARY KEY,
	tools      TEXT    NOT NULL, -- a JSON array of the server's tools, as received
	hash       TEXT    NOT NULL,
	fetched_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL  -- 0: until invalidated
) STRICT;
`,
	`
ALTER TABLE intents ADD COLUMN late_answer TEXT NOT NULL DEFAULT '';
ALTER TABLE intents ADD COLUMN late_answer_at INTEGER;
`,
	// Where an approved call goes (the server's command line or URL), and
	// grants looked up by principal as well as digest. Requests made
	// before have no target.
	`
ALTER TABLE approvals ADD COLUMN target TEXT NOT NULL DEFAULT '';
DROP INDEX approvals_grants;
CREATE INDEX approvals_grants ON approvals (digest, tenant, user_name, created_at, seq) WHERE status = 'granted';
`,
	// The audit trail's chain (store.ChainLink). Events written before
	// have no link: VerifyChain counts them as unchained.
	`
ALTER TABLE events ADD COLUMN chain_n    INTEGER; -- the place in the chain, from 1
ALTER TABLE events ADD COLUMN chain_prev BLOB;    -- the sum of event chain_n - 1
ALTER TABLE events ADD COLUMN chain_sum  BLOB;

CREATE TABLE audit_head (
	id   INTEGER PRIMARY KEY CHECK (id = 1),
	n    INTEGER NOT NULL,
	sum  BLOB    NOT NULL,
	seal BLOB    NOT NULL
) STRICT;
`,
	// The redacted arguments of a call (store.Intent.Arguments), as JSON
	// text; records written before have none.
	`
ALTER TABLE intents ADD COLUMN arguments TEXT NOT NULL DEFAULT '';
`,
	// Denials looked up by digest and principal (a denial holds until the
	// approval TTL has passed), the definition a request saw (for a
	// remembered answer), and the remembered answers themselves. Requests
	// made before have no definition.
	`
ALTER TABLE approvals ADD COLUMN definition TEXT NOT NULL DEFAULT '';
CREATE INDEX approvals_denials ON approvals (digest, tenant, user_name, decided_at) WHERE status = 'denied';

CREATE TABLE allow_rules (
	seq        INTEGER PRIMARY KEY,
	id         TEXT    NOT NULL UNIQUE,
	server     TEXT    NOT NULL,
	tool       TEXT    NOT NULL,
	definition TEXT    NOT NULL,
	tenant     TEXT    NOT NULL,
	user_name  TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	created_by TEXT    NOT NULL,
	approval   TEXT    NOT NULL,
	UNIQUE (definition, tenant, user_name)
) STRICT;
`,
	// 8: the records of tasks (tasks.go).
	`
CREATE TABLE tasks (
	id         TEXT    PRIMARY KEY,
	holder     TEXT    NOT NULL, -- the id of the state directory that holds the worktree
	host       TEXT    NOT NULL,
	state_dir  TEXT    NOT NULL,
	repo       TEXT    NOT NULL,
	branch     TEXT    NOT NULL,
	base       TEXT    NOT NULL,
	status     TEXT    NOT NULL CHECK (status IN ('opening', 'open', 'closing')),
	tenant     TEXT    NOT NULL,
	user_name  TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX tasks_created ON tasks (created_at, id);
`,
	// 9: agent runs and their checkpoints (runs.go), and the records of
	// a tool call found by its id (store.RecordFilter.CallID), which a
	// resumed run asks for one call at a time.
	`
CREATE TABLE runs (
	id            TEXT    PRIMARY KEY,
	status        TEXT    NOT NULL CHECK (status IN ('running', 'waiting', 'done', 'failed', 'cancelled')),
	tenant        TEXT    NOT NULL,
	user_name     TEXT    NOT NULL,
	provider      TEXT    NOT NULL,
	model         TEXT    NOT NULL,
	task          TEXT    NOT NULL,
	title         TEXT    NOT NULL,
	steps         INTEGER NOT NULL,
	tool_calls    INTEGER NOT NULL,
	input_tokens  INTEGER NOT NULL,
	output_tokens INTEGER NOT NULL,
	snapshot      TEXT    NOT NULL,
	error         TEXT    NOT NULL,
	checkpoint    TEXT,   -- the agent loop's JSON, byte for byte as given, or NULL for none
	created_at    INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL
) STRICT;
CREATE INDEX runs_created ON runs (created_at DESC, id DESC);

CREATE INDEX intents_call ON intents (call_id) WHERE call_id <> '';
`,
	// 10: the questions servers ask people during calls, while they are
	// asked (inputs.go), for the operator console to answer.
	`
CREATE TABLE inputs (
	id          TEXT    PRIMARY KEY,
	status      TEXT    NOT NULL CHECK (status IN ('pending', 'answered', 'withdrawn')),
	tenant      TEXT    NOT NULL,
	user_name   TEXT    NOT NULL,
	ask         TEXT    NOT NULL, -- the request as JSON (store.InputAsk)
	answer      TEXT,
	answered_by TEXT,
	created_at  INTEGER NOT NULL,
	settled_at  INTEGER
) STRICT;
CREATE INDEX inputs_status ON inputs (status, created_at);
`,
	// 11: the tool calls run as MCP tasks (jobs.go). writer is the id of
	// the DB that created the job, as for intents; expires_at is
	// created_at plus ttl_ms, kept for the queries that leave expired
	// jobs out and for PurgeJobs.
	`
CREATE TABLE jobs (
	seq        INTEGER PRIMARY KEY,
	id         TEXT    NOT NULL UNIQUE,
	tenant     TEXT    NOT NULL,
	user_name  TEXT    NOT NULL,
	server     TEXT    NOT NULL,
	tool       TEXT    NOT NULL,
	write      INTEGER NOT NULL CHECK (write IN (0, 1)),
	record_id  TEXT    NOT NULL,
	status     TEXT    NOT NULL CHECK (status IN ('working', 'input_required', 'completed', 'failed', 'cancelled')),
	message    TEXT    NOT NULL,
	result     BLOB,
	error      BLOB,
	input      BLOB,
	lost       BLOB,
	ttl_ms     INTEGER NOT NULL CHECK (ttl_ms > 0),
	poll_ms    INTEGER NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	writer     TEXT    NOT NULL
) STRICT;
CREATE INDEX jobs_created ON jobs (created_at, seq);
CREATE INDEX jobs_open ON jobs (writer) WHERE status IN ('working', 'input_required');
CREATE INDEX jobs_expires ON jobs (expires_at);
`,
}

// migrate brings the schema to the newest version. A database that is
// current is only read, so a read-only one opens.
func (db *DB) migrate(ctx context.Context) error {
	v, err := version(ctx, db.r)
	if err != nil {
		return fmt.Errorf("cannot read the database: %w", err)
	}
	if v == len(migrations) {
		return nil
	}
	if err := sqlrow.NewerSchema(v, len(migrations)); err != nil {
		return err
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot update the database schema: %w", err)
	}
	defer tx.Rollback()
	// Another process may have migrated while this one waited for the lock.
	if v, err = version(ctx, tx); err != nil {
		return fmt.Errorf("cannot read the database: %w", err)
	}
	if err := sqlrow.NewerSchema(v, len(migrations)); err != nil {
		return err
	}
	for i := v; i < len(migrations); i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("cannot update the database schema to version %d: %w", i+1, err)
		}
	}
	// PRAGMA takes no parameters; the number is ours.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(migrations))); err != nil {
		return fmt.Errorf("cannot update the database schema: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot update the database schema: %w", err)
	}
	return nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func version(ctx context.Context, q querier) (int, error) {
	var v int
	err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}
