package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/store/internal/sqlrow"
)

// migrations are the schema's versions: migrations[i] takes a database from
// version i to i+1, and schema_migrations records each version applied.
// Never edit one that has shipped; append a new one.
//
// Times are timestamptz, which keeps microseconds. Every table keeps a seq,
// the order rows were written, to break ties between equal times. The
// fields of audit events and the arguments of intents are text, not jsonb:
// the chain covers their bytes as written.
var migrations = []string{
	`
CREATE TABLE intents (
	seq            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id             text        NOT NULL UNIQUE,
	call_id        text        NOT NULL,
	server         text        NOT NULL,
	tool           text        NOT NULL,
	remote_tool    text        NOT NULL,
	args_hash      text        NOT NULL,
	arguments      text        NOT NULL DEFAULT '',
	snapshot       text        NOT NULL,
	effect         text        NOT NULL,
	idempotent     boolean     NOT NULL,
	tenant         text        NOT NULL,
	user_name      text        NOT NULL,
	created_at     timestamptz NOT NULL,
	writer         bigint      NOT NULL, -- the key of its writer's advisory lock
	outcome        text        CHECK (outcome IN ('succeeded', 'failed', 'rejected', 'unknown')),
	detail         text        NOT NULL DEFAULT '',
	ended_at       timestamptz,
	resolution     text        CHECK (resolution IN ('applied', 'not-applied')),
	note           text        NOT NULL DEFAULT '',
	resolved_by    text        NOT NULL DEFAULT '',
	resolved_at    timestamptz,
	late_answer    text        NOT NULL DEFAULT '',
	late_answer_at timestamptz,
	CHECK ((outcome IS NULL) = (ended_at IS NULL)),
	CHECK (resolution IS NULL OR outcome = 'unknown'),
	CHECK ((resolution IS NULL) = (resolved_at IS NULL))
);
CREATE INDEX intents_open ON intents (writer) WHERE outcome IS NULL;
CREATE INDEX intents_unresolved ON intents (created_at, seq) WHERE outcome = 'unknown' AND resolution IS NULL;
CREATE INDEX intents_created ON intents (created_at, seq);

CREATE TABLE approvals (
	seq        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id         text        NOT NULL UNIQUE,
	server     text        NOT NULL,
	tool       text        NOT NULL,
	digest     text        NOT NULL,
	summary    text        NOT NULL,
	target     text        NOT NULL DEFAULT '',
	definition text        NOT NULL DEFAULT '',
	status     text        NOT NULL CHECK (status IN ('pending', 'granted', 'denied', 'used')),
	created_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL,
	tenant     text        NOT NULL,
	user_name  text        NOT NULL,
	decided_by text        NOT NULL DEFAULT '',
	decided_at timestamptz,
	note       text        NOT NULL DEFAULT '',
	used_at    timestamptz,
	CHECK ((status = 'used') = (used_at IS NOT NULL))
);
CREATE INDEX approvals_grants ON approvals (digest, tenant, user_name, created_at, seq) WHERE status = 'granted';
CREATE INDEX approvals_denials ON approvals (digest, tenant, user_name, decided_at) WHERE status = 'denied';
CREATE INDEX approvals_created ON approvals (created_at, seq);

CREATE TABLE allow_rules (
	seq        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id         text        NOT NULL UNIQUE,
	server     text        NOT NULL,
	tool       text        NOT NULL,
	definition text        NOT NULL,
	tenant     text        NOT NULL,
	user_name  text        NOT NULL,
	created_at timestamptz NOT NULL,
	created_by text        NOT NULL,
	approval   text        NOT NULL,
	UNIQUE (definition, tenant, user_name)
);

CREATE TABLE events (
	seq         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	time        timestamptz NOT NULL,
	event       text        NOT NULL,
	server      text        NOT NULL,
	tool        text        NOT NULL,
	snapshot    text        NOT NULL,
	class       text        NOT NULL,
	duration_ms bigint      NOT NULL,
	fields      text,       -- a JSON object, or NULL for none
	chain_n     bigint,     -- the place in the chain, from 1
	chain_prev  bytea,      -- the sum of event chain_n - 1
	chain_sum   bytea
);
CREATE INDEX events_time ON events (time, seq);

CREATE TABLE audit_head (
	id   integer PRIMARY KEY CHECK (id = 1),
	n    bigint  NOT NULL,
	sum  bytea   NOT NULL,
	seal bytea   NOT NULL
);

CREATE TABLE tool_lists (
	key        text        PRIMARY KEY,
	tools      text        NOT NULL, -- a JSON array of the server's tools, as received
	hash       text        NOT NULL,
	fetched_at timestamptz NOT NULL,
	expires_at timestamptz           -- NULL: until invalidated
);
`,
	// 2: the leases of limits held across replicas (leases.go).
	`
CREATE TABLE leases (
	id         text        PRIMARY KEY,
	key        text        NOT NULL,
	holder     text        NOT NULL,
	expires_at timestamptz NOT NULL  -- by the server's clock
);
CREATE INDEX leases_key ON leases (key, expires_at);
CREATE INDEX leases_holder ON leases (holder);
`,
	// 3: the vault of sealed secrets (vault.go).
	`
CREATE TABLE secrets (
	name       text        PRIMARY KEY, -- a hash of the secret's key
	value      bytea       NOT NULL,    -- sealed (auth/secrets): never a secret in the clear
	updated_at timestamptz NOT NULL
);
`,
	// 4: the gateway's 2025-11-25 sessions, which any replica takes
	// (sessions.go).
	`
CREATE TABLE gateway_sessions (
	id      text        PRIMARY KEY, -- a hash of the Mcp-Session-Id: the id itself is never stored
	owner   text        NOT NULL,
	state   jsonb       NOT NULL,
	seen_at timestamptz NOT NULL     -- by the server's clock
);
CREATE INDEX gateway_sessions_seen ON gateway_sessions (seen_at);
`,
	// 5: the records of tasks, whichever replica holds their worktrees
	// (tasks.go).
	`
CREATE TABLE tasks (
	id         text        PRIMARY KEY,
	holder     text        NOT NULL, -- the id of the state directory that holds the worktree
	host       text        NOT NULL,
	state_dir  text        NOT NULL,
	repo       text        NOT NULL,
	branch     text        NOT NULL,
	base       text        NOT NULL,
	status     text        NOT NULL CHECK (status IN ('opening', 'open', 'closing')),
	tenant     text        NOT NULL,
	user_name  text        NOT NULL,
	created_at timestamptz NOT NULL,
	updated_at timestamptz NOT NULL
);
CREATE INDEX tasks_created ON tasks (created_at, id);
`,
	// 6: the calls of agent turns that clients name, counted across
	// replicas (turns.go).
	`
CREATE TABLE turn_calls (
	key        text        PRIMARY KEY, -- a hash of the principal and the turn's name: no user name in the clear
	calls      integer     NOT NULL,
	expires_at timestamptz NOT NULL     -- by the server's clock
);
CREATE INDEX turn_calls_expires ON turn_calls (expires_at);
`,
	// 7: messages among the gateway's replicas (mailbox.go).
	`
CREATE TABLE gateway_mail (
	box        text        PRIMARY KEY,
	data       bytea       NOT NULL,
	expires_at timestamptz NOT NULL  -- by the server's clock
);
CREATE INDEX gateway_mail_expires ON gateway_mail (expires_at);
`,
	// 8: agent runs and their checkpoints (runs.go), and the records of a
	// tool call found by its id (store.RecordFilter.CallID), which a
	// resumed run asks for one call at a time. A checkpoint is bytea, not
	// jsonb or text: it is returned byte for byte as it was given.
	`
CREATE TABLE runs (
	id            text        PRIMARY KEY,
	status        text        NOT NULL CHECK (status IN ('running', 'waiting', 'done', 'failed', 'cancelled')),
	tenant        text        NOT NULL,
	user_name     text        NOT NULL,
	provider      text        NOT NULL,
	model         text        NOT NULL,
	task          text        NOT NULL,
	title         text        NOT NULL,
	steps         integer     NOT NULL,
	tool_calls    integer     NOT NULL,
	input_tokens  bigint      NOT NULL,
	output_tokens bigint      NOT NULL,
	snapshot      text        NOT NULL,
	error         text        NOT NULL,
	checkpoint    bytea,      -- the agent loop's JSON, or NULL for none
	created_at    timestamptz NOT NULL,
	updated_at    timestamptz NOT NULL -- by the server's clock
);
CREATE INDEX runs_created ON runs (created_at DESC, id DESC);

CREATE INDEX intents_call ON intents (call_id) WHERE call_id <> '';
`,
	// 9: the questions servers ask people during calls, while they are
	// asked (inputs.go), for the operator console to answer.
	`
CREATE TABLE inputs (
	id          text        PRIMARY KEY,
	status      text        NOT NULL CHECK (status IN ('pending', 'answered', 'withdrawn')),
	tenant      text        NOT NULL,
	user_name   text        NOT NULL,
	ask         bytea       NOT NULL, -- the request as JSON (store.InputAsk)
	answer      bytea,
	answered_by text,
	created_at  timestamptz NOT NULL,
	settled_at  timestamptz  -- by the server's clock
);
CREATE INDEX inputs_status ON inputs (status, created_at);
`,
	// 10: the tool calls run as MCP tasks (jobs.go). writer is the key of
	// the writer lock of the DB that created the job, as for intents;
	// expires_at is created_at plus ttl_ms, kept for the queries that
	// leave expired jobs out and for PurgeJobs. The JSON of result, error,
	// input and lost is bytea: returned byte for byte as it was given.
	`
CREATE TABLE jobs (
	seq        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id         text        NOT NULL UNIQUE,
	tenant     text        NOT NULL,
	user_name  text        NOT NULL,
	server     text        NOT NULL,
	tool       text        NOT NULL,
	write      boolean     NOT NULL,
	record_id  text        NOT NULL,
	status     text        NOT NULL CHECK (status IN ('working', 'input_required', 'completed', 'failed', 'cancelled')),
	message    text        NOT NULL,
	result     bytea,
	error      bytea,
	input      bytea,
	lost       bytea,
	ttl_ms     bigint      NOT NULL CHECK (ttl_ms > 0),
	poll_ms    bigint      NOT NULL,
	created_at timestamptz NOT NULL,
	updated_at timestamptz NOT NULL, -- by the server's clock
	expires_at timestamptz NOT NULL,
	writer     bigint      NOT NULL
);
CREATE INDEX jobs_created ON jobs (created_at, seq);
CREATE INDEX jobs_open ON jobs (writer) WHERE status IN ('working', 'input_required');
CREATE INDEX jobs_expires ON jobs (expires_at);
`,
}

// migrate brings the schema to the newest version. A database that is
// current is only read, so a role that may not create tables can open it.
func (db *DB) migrate(ctx context.Context) error {
	v, err := version(ctx, db.pool)
	if err != nil {
		return err
	}
	if v == len(migrations) {
		return nil
	}
	if err := sqlrow.NewerSchema(v, len(migrations)); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		// Replicas that start together wait here for the first; the lock
		// goes with the transaction.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, lockSpace, lockMigrations); err != nil {
			return fmt.Errorf("cannot update the database schema: %w", err)
		}
		if _, err := tx.Exec(ctx, `
CREATE TABLE IF NOT EXISTS schema_migrations (
	version    integer     PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT now()
)`); err != nil {
			return fmt.Errorf("cannot update the database schema: %w", err)
		}
		// Another replica may have migrated while this one waited.
		v, err := version(ctx, tx)
		if err != nil {
			return err
		}
		if err := sqlrow.NewerSchema(v, len(migrations)); err != nil {
			return err
		}
		for i := v; i < len(migrations); i++ {
			if _, err := tx.Exec(ctx, migrations[i]); err != nil {
				return fmt.Errorf("cannot update the database schema to version %d: %w", i+1, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, i+1); err != nil {
				return fmt.Errorf("cannot update the database schema to version %d: %w", i+1, err)
			}
		}
		return nil
	})
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// version returns the newest schema version applied, 0 for a database that
// has none.
func version(ctx context.Context, q querier) (int, error) {
	var exists bool
	err := q.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists)
	if err != nil || !exists {
		return 0, readError(err)
	}
	var v int
	err = q.QueryRow(ctx, `SELECT COALESCE(max(version), 0) FROM schema_migrations`).Scan(&v)
	return v, readError(err)
}

func readError(err error) error {
	if err != nil {
		return fmt.Errorf("cannot read the database: %w", err)
	}
	return nil
}
