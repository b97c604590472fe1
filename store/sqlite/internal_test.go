package sqlite

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"
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
