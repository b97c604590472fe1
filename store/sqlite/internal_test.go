package sqlite

import (
	"database/sql"
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
		{db.w, "user_version", "3"},
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
	if len(migrations) != 3 {
		t.Errorf("update the user_version this test expects to %d", len(migrations))
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
