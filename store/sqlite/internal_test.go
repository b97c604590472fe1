package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlockhq/airlock/store"
)

// TestPragmas: the settings the package documents are the ones in force on
// its connections.
func TestPragmas(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// A connection opened before the file turned to WAL reports its old mode
	// until its next read.
	if _, err := db.Audit().Events(t.Context(), time.Time{}, 1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pool   *sql.DB
		pragma string
		want   string
	}{
		{db.w, "journal_mode", "wal"},
		{db.w, "synchronous", "2"}, // FULL
		{db.w, "busy_timeout", "10000"},
		{db.w, "user_version", "11"},
		{db.r, "journal_mode", "wal"},
		{db.r, "query_only", "1"},
		{db.r, "busy_timeout", "10000"},
	} {
		var got string
		if err := tc.pool.QueryRowContext(t.Context(), "PRAGMA "+tc.pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", tc.pragma, err)
		}
		if got != tc.want {
			t.Errorf("PRAGMA %s: got %q, want %q", tc.pragma, got, tc.want)
		}
	}
	// A relaxed save puts the writer's setting back.
	if err := db.SaveRunRelaxed(t.Context(), store.RunRecord{ID: "run_1", Status: store.RunRunning}); err != nil {
		t.Fatal(err)
	}
	var sync string
	if err := db.w.QueryRowContext(t.Context(), "PRAGMA synchronous").Scan(&sync); err != nil || sync != "2" {
		t.Errorf("after a relaxed save, PRAGMA synchronous = %q (%v), want 2 (FULL)", sync, err)
	}
	if len(migrations) != 11 {
		t.Errorf("update the user_version this test expects to %d", len(migrations))
	}
}

// TestRelaxedJournal: an intent's row and an outcome are committed
// without a sync of their own (the writer's setting is FULL again after
// them), are read back at once, and the WAL they left unsynced is synced
// within relaxedSync; the intent itself is on disk when Begin returns, in
// the writer's intent log.
func TestRelaxedJournal(t *testing.T) {
	db := openDB(t)
	j := db.Journal()
	syncedWithin := func(what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for unsynced, _ := syncState(db); unsynced; unsynced, _ = syncState(db) {
			if time.Now().After(deadline) {
				t.Fatalf("the WAL is still unsynced 5 s after %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	in := store.Intent{ID: "int_1", CallID: "call_1", Server: "w", Tool: "w__write", RemoteTool: "write", ArgsHash: "sha256:x",
		Effect: "write", Tenant: "acme", User: "ada"}
	holdSync(db, true)
	if err := j.Begin(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	if unsynced, _ := syncState(db); !unsynced {
		t.Error("an intent's row was synced: it needs no sync of its own")
	}
	logged, err := readLog(db.log.path)
	if err != nil || len(logged) != 1 || logged[0].ID != "int_1" {
		t.Errorf("the intent log after Begin: %+v, %v; want int_1", logged, err)
	}
	holdSync(db, false)
	if err := j.End(t.Context(), "int_1", store.OutcomeSucceeded, ""); err != nil {
		t.Fatal(err)
	}
	if got, err := j.Get(t.Context(), "int_1"); err != nil || got.Status != store.OutcomeSucceeded {
		t.Errorf("read back at once: %+v, %v", got, err)
	}
	pragmaSynchronous(t, db, "an outcome")
	syncedWithin("an outcome")
	if err := j.End(t.Context(), "int_1", store.OutcomeSucceeded, ""); err == nil {
		t.Error("a second outcome of one intent was taken")
	}
}

// TestBeginCarriesCheckpoint: a run's checkpoint saved relaxed is synced
// by the next Begin, before it returns, as store.Runs promises; an intent
// alone leaves the WAL to the committer's timer.
func TestBeginCarriesCheckpoint(t *testing.T) {
	db := openDB(t)
	holdSync(db, true)
	flags := func() (unsynced, carried bool) { return syncState(db) }
	if err := db.SaveRunRelaxed(t.Context(), store.RunRecord{ID: "run_1", Status: store.RunRunning}); err != nil {
		t.Fatal(err)
	}
	if unsynced, carried := flags(); !unsynced || !carried {
		t.Fatalf("after a relaxed save: unsynced %v, carried %v; want both", unsynced, carried)
	}
	in := store.Intent{ID: "int_1", Server: "w", Tool: "w__write", RemoteTool: "write", ArgsHash: "sha256:x", Effect: "write"}
	if err := db.Journal().Begin(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	// Begin's own row may be unsynced again; the checkpoint is not.
	if _, carried := flags(); carried {
		t.Error("Begin returned with a relaxed checkpoint before it unsynced")
	}
	in.ID = "int_2"
	if err := db.Journal().Begin(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	if unsynced, _ := flags(); !unsynced {
		t.Error("a Begin with no checkpoint before it synced the WAL")
	}
}

// TestBeginLaterCheckpointNotSynced: when the sync that carries a relaxed
// checkpoint fails, BeginLater fails, and the intent it made durable ends
// rejected (its call is not sent), though its row had not been written.
func TestBeginLaterCheckpointNotSynced(t *testing.T) {
	db := openDB(t)
	holdSync(db, true)
	if err := db.SaveRunRelaxed(t.Context(), store.RunRecord{ID: "run_1", Status: store.RunRunning}); err != nil {
		t.Fatal(err)
	}
	db.group.wal = t.TempDir() // a directory: the WAL's sync fails
	j := db.Journal().(journal)
	in := store.Intent{ID: "int_1", Server: "w", Tool: "w__write", RemoteTool: "write", ArgsHash: "sha256:x", Effect: "write"}
	if err := j.BeginLater(t.Context(), in); err == nil {
		t.Fatal("BeginLater returned nil with its checkpoint unsynced")
	}
	// Read through another handle, which does not hurry the writes: the
	// row and its outcome must be committed in their order by themselves.
	if got, err := readWhen(t, db.path, "int_1", ended); got.Status != store.OutcomeRejected {
		t.Errorf("the intent of a BeginLater that failed, through another handle: %q, %v; want rejected", got.Status, err)
	}
}

// TestRelaxedAudit: an audit batch is committed to the WAL without a sync
// of its own (the writer's setting is FULL again after it), is read back
// at once, and leaves the WAL for the committer to sync, as an outcome
// does.
func TestRelaxedAudit(t *testing.T) {
	db := openDB(t)
	// The sync below is the test's.
	holdSync(db, true)
	if err := db.Audit().Append(t.Context(), store.Event{Event: store.EventCallSent, Server: "w", Tool: "w__write"}); err != nil {
		t.Fatal(err)
	}
	if unsynced, _ := syncState(db); !unsynced {
		t.Error("an audit batch's commit synced the WAL: it needs no sync of its own")
	}
	pragmaSynchronous(t, db, "an audit batch")
	if evs, err := db.Audit().Events(t.Context(), time.Time{}, 10); err != nil || len(evs) != 1 || evs[0].Event != store.EventCallSent {
		t.Errorf("read back at once: %+v, %v", evs, err)
	}
	db.group.syncWAL()
	if unsynced, _ := syncState(db); unsynced {
		t.Error("the committer's sync left the WAL unsynced")
	}
}

// TestMigrateKeepsApprovals: a database of schema version 2 (approvals
// without a target) opens, and its requests keep working: listed by
// principal, decided and consumed only by the principal they were asked
// for.
func TestMigrateKeepsApprovals(t *testing.T) {
	created, expires := time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	db := openOld(t, 2, fmt.Sprintf(`
INSERT INTO approvals (id, server, tool, digest, summary, status, created_at, expires_at, tenant, user_name)
VALUES ('apr_old', 'fs', 'fs__write_file', 'd', 'write_file', 'pending', %d, %d, 'acme', 'ada');`, micros(created), micros(expires)))
	ap := db.Approvals()
	got, err := ap.List(t.Context(), store.ApprovalFilter{Tenant: "acme", User: "ada"})
	if err != nil || len(got) != 1 || got[0].ID != "apr_old" || got[0].Target != "" || got[0].Status != store.ApprovalPending {
		t.Fatalf("List after the migration: got %+v, %v; want apr_old, pending, no target", got, err)
	}
	if err := ap.Decide(t.Context(), "apr_old", true, "ada", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := ap.Consume(t.Context(), "d", "evilcorp", "eve", time.Now()); err == nil {
		t.Error("another principal consumed a grant made before the migration")
	}
	if _, err := ap.Consume(t.Context(), "d", "acme", "ada", time.Now()); err != nil {
		t.Errorf("Consume by the principal that asked: %v", err)
	}
}

// TestUnchainedEvents: a database written before the audit trail was
// chained opens, its events still read, and they are reported as
// unchained ahead of the chain that new events start; they are not
// protected, which Verify says by counting them apart.
func TestUnchainedEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	old, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range migrations[:2] {
		if _, err := old.Exec(m); err != nil {
			t.Fatal(err)
		}
	}
	for i, stmt := range []string{
		`PRAGMA user_version = 2`,
		`INSERT INTO events (time, event, server, tool, snapshot, class, duration_ms, fields) VALUES (1, 'server_start', 'fs', '', '', '', 0, NULL)`,
		`INSERT INTO events (time, event, server, tool, snapshot, class, duration_ms, fields) VALUES (2, 'decision', 'fs', 'fs__read', 's', '', 0, '{"decision":"allow"}')`,
		`INSERT INTO events (time, event, server, tool, snapshot, class, duration_ms, fields) VALUES (3, 'result', 'fs', 'fs__read', 's', 'ok', 4, NULL)`,
	} {
		if _, err := old.Exec(stmt); err != nil {
			t.Fatalf("statement %d: %v", i, err)
		}
	}
	old.Close()

	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	check := func(events, unchained, verified int64) {
		t.Helper()
		r, err := db.Audit().Verify(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !r.Intact || r.Events != events || r.Unchained != unchained || r.Verified != verified {
			t.Errorf("Verify: got intact %v, %d events, %d unchained, %d verified, break %+v; want intact, %d, %d, %d",
				r.Intact, r.Events, r.Unchained, r.Verified, r.Break, events, unchained, verified)
		}
	}
	check(3, 3, 0)
	if err := db.Audit().Append(t.Context(), store.Event{Event: "call_sent"}, store.Event{Event: "result"}); err != nil {
		t.Fatal(err)
	}
	check(5, 3, 2)
	if got, err := db.Audit().Events(t.Context(), time.Time{}, 0); err != nil || len(got) != 5 {
		t.Errorf("Events: got %d events, %v; want 5", len(got), err)
	}
	if _, err := db.w.Exec(`DELETE FROM events WHERE seq = 2`); err != nil {
		t.Fatal(err)
	}
	check(4, 2, 2)
}

// TestMigrateKeepsRecords: a journal of schema version 5 (records without
// their arguments) opens, and its records read with no arguments and can
// still be resolved.
func TestMigrateKeepsRecords(t *testing.T) {
	db := openOld(t, 5, fmt.Sprintf(`
INSERT INTO intents (id, call_id, server, tool, remote_tool, args_hash, snapshot, effect, idempotent, tenant, user_name,
	created_at, writer, outcome, detail, ended_at)
VALUES ('rec_old', '', 'fs', 'fs__write_file', 'write_file', 'sha256:ab', 's', 'write', 0, 'acme', 'ada',
	%[1]d, 'gone', 'unknown', 'timeout', %[1]d);`, micros(time.Now())))
	r, err := db.Journal().Get(t.Context(), "rec_old")
	if err != nil || r.Arguments != nil || r.ArgsHash != "sha256:ab" || r.Status != store.OutcomeUnknown {
		t.Fatalf("Get after the migration: got %+v, %v; want rec_old, unknown, with its hash and no arguments", r, err)
	}
	if err := db.Journal().Resolve(t.Context(), "rec_old", store.ResolutionNotApplied, "", "ada"); err != nil {
		t.Errorf("Resolve after the migration: %v", err)
	}
}

// openOld makes a database of schema version, holding what the SQL rows
// insert, and opens it, which migrates it to the newest version.
func openOld(t *testing.T, version int, rows string) *DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "airlock.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range append(migrations[:version:version], rows, fmt.Sprintf("PRAGMA user_version = %d", version)) {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	db, err := Open(path)
	if err != nil {
		t.Fatalf("Open of a version %d database: %v", version, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openDB opens a database of its own for t, closed when t ends.
func openDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// holdSync holds the committer's timer, as if a sync were due already, so
// that no sync comes by itself (held), or lets it go.
func holdSync(db *DB, held bool) {
	db.group.mu.Lock()
	db.group.armed = held
	db.group.mu.Unlock()
}

// syncState says whether the committer left the WAL unsynced, and with a
// checkpoint in it that the next intent must carry.
func syncState(db *DB) (unsynced, carried bool) {
	db.group.mu.Lock()
	defer db.group.mu.Unlock()
	return db.group.unsynced, db.group.carried
}

// pragmaSynchronous checks that the write connection is back to FULL
// after what.
func pragmaSynchronous(t *testing.T, db *DB, what string) {
	t.Helper()
	var sync string
	if err := db.w.QueryRowContext(t.Context(), "PRAGMA synchronous").Scan(&sync); err != nil || sync != "2" {
		t.Errorf("after %s, PRAGMA synchronous = %q (%v), want 2 (FULL)", what, sync, err)
	}
}

// TestWithdrawnInputHasNoAnswerer: a withdrawn question's answered_by is
// NULL, as in the PostgreSQL store; an answered one's names who answered.
func TestWithdrawnInputHasNoAnswerer(t *testing.T) {
	db := openDB(t)
	for _, id := range []string{"inq_a", "inq_w"} {
		if err := db.AskInput(t.Context(), store.InputAsk{ID: id, Call: "call_1", Server: "w", Tool: "w__deploy", Tenant: "acme", User: "ada",
			Mode: "form", Message: "Which?", Schema: json.RawMessage(`{"type":"object"}`), CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.AnswerInput(t.Context(), "inq_a", json.RawMessage(`{"action":"decline"}`), "ada"); err != nil {
		t.Fatal(err)
	}
	if err := db.WithdrawInput(t.Context(), "inq_w"); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]sql.NullString{"inq_a": {String: "ada", Valid: true}, "inq_w": {}} {
		var got sql.NullString
		if err := db.r.QueryRowContext(t.Context(), `SELECT answered_by FROM inputs WHERE id = ?`, id).Scan(&got); err != nil || got != want {
			t.Errorf("%s: answered_by = %+v, %v; want %+v", id, got, err, want)
		}
	}
}
