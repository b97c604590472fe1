package sqlite_test

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/sqlite"
)

// trail makes a database with ten chained events, appended in three
// batches (seq and position 1 to 10), and returns its path.
func trail(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "airlock.db")
	db := open(t, path)
	appendEvents(t, db, 4, 3, 3)
	db.Close()
	return path
}

// appendEvents appends batches of events of the given sizes.
func appendEvents(t *testing.T, db *sqlite.DB, sizes ...int) {
	t.Helper()
	t0 := time.Now().Add(-time.Hour)
	for b, n := range sizes {
		var batch []store.Event
		for i := range n {
			batch = append(batch, store.Event{Time: t0.Add(time.Duration(b*10+i) * time.Second), Event: store.EventResult,
				Server: "fs", Tool: "fs__write_file", Snapshot: "snap_1", Class: "ok", DurationMS: 7,
				Fields: map[string]any{"args_hash": "sha256:ab", "n": i}})
		}
		if err := db.Audit().Append(t.Context(), batch...); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
}

// tamper runs SQL on the database at path as anyone who can write the file
// could, without the store.
func tamper(t *testing.T, path string, stmts ...string) {
	t.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, s := range stmts {
		if _, err := raw.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// verify opens the database at path as a new process would and verifies
// its trail.
func verify(t *testing.T, path string) store.ChainReport {
	t.Helper()
	r, err := open(t, path).Audit().Verify(t.Context())
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return r
}

// A found is what a test expects of a break: its kind, the event it names
// (seq and position; 0 for none) and the positions missing.
type found struct {
	Kind                   store.BreakKind
	Seq, Position          int64
	MissingFrom, MissingTo int64
	Event                  string
}

func foundIn(r store.ChainReport) *found {
	b := r.Break
	if b == nil {
		return nil
	}
	f := &found{Kind: b.Kind, MissingFrom: b.MissingFrom, MissingTo: b.MissingTo}
	if b.At != nil {
		f.Seq, f.Position, f.Event = b.At.Seq, b.At.Position, b.At.Event
	}
	return f
}

// TestAuditTampering: every way of editing the events table with SQL is
// reported, naming the first event that does not follow and how.
func TestAuditTampering(t *testing.T) {
	const result = store.EventResult
	insert := `INSERT INTO events (time, event, server, tool, snapshot, class, duration_ms, fields, chain_n, chain_prev, chain_sum) `
	for _, tc := range []struct {
		name   string
		sql    []string
		want   *found // nil: intact
		detail string
	}{
		{"untouched", nil, nil, ""},
		{"edit a fixed field", []string{`UPDATE events SET tool = 'fs__delete_file' WHERE seq = 5`},
			&found{Kind: store.BreakChanged, Seq: 5, Position: 5, Event: result}, "edited"},
		{"edit an extra field", []string{`UPDATE events SET fields = json_set(fields, '$.args_hash', 'sha256:cd') WHERE seq = 5`},
			&found{Kind: store.BreakChanged, Seq: 5, Position: 5, Event: result}, "edited"},
		{"edit the time", []string{`UPDATE events SET time = time + 1 WHERE seq = 2`},
			&found{Kind: store.BreakChanged, Seq: 2, Position: 2, Event: result}, "edited"},
		{"edit an event and its sum", []string{`UPDATE events SET class = 'denied', chain_sum = randomblob(32) WHERE seq = 5`},
			&found{Kind: store.BreakChanged, Seq: 5, Position: 5, Event: result}, "edited"},
		{"edit the first event", []string{`UPDATE events SET server = 'x' WHERE seq = 1`},
			&found{Kind: store.BreakChanged, Seq: 1, Position: 1, Event: result}, "edited"},
		{"edit the newest event", []string{`UPDATE events SET server = 'x' WHERE seq = 10`},
			&found{Kind: store.BreakChanged, Seq: 10, Position: 10, Event: result}, "edited"},
		{"delete one in the middle", []string{`DELETE FROM events WHERE seq = 5`},
			&found{Kind: store.BreakDeleted, Seq: 6, Position: 6, MissingFrom: 5, MissingTo: 5, Event: result}, "event #5 was deleted"},
		{"delete several", []string{`DELETE FROM events WHERE seq BETWEEN 4 AND 6`},
			&found{Kind: store.BreakDeleted, Seq: 7, Position: 7, MissingFrom: 4, MissingTo: 6, Event: result}, "events #4–#6 were deleted"},
		{"delete the first", []string{`DELETE FROM events WHERE seq = 1`},
			&found{Kind: store.BreakDeleted, Seq: 2, Position: 2, MissingFrom: 1, MissingTo: 1, Event: result}, "event #1 was deleted"},
		{"delete the newest", []string{`DELETE FROM events WHERE seq = 10`},
			&found{Kind: store.BreakDeleted, Seq: 9, Position: 9, MissingFrom: 10, MissingTo: 10, Event: result}, "goes on to #10"},
		{"delete every event", []string{`DELETE FROM events`},
			&found{Kind: store.BreakDeleted, MissingFrom: 1, MissingTo: 10}, "events #1–#10 were deleted"},
		{"delete the newest and the head", []string{`DELETE FROM events WHERE seq = 10`, `DELETE FROM audit_head`},
			&found{Kind: store.BreakDeleted, Seq: 9, Position: 9, Event: result}, "head record is missing"},
		{"delete the newest and move the head back", []string{`DELETE FROM events WHERE seq = 10`,
			`UPDATE audit_head SET n = 9, sum = (SELECT chain_sum FROM events WHERE seq = 9)`},
			&found{Kind: store.BreakChanged, Seq: 9, Position: 9, Event: result}, "does not match its seal"},
		{"reorder two events", []string{`UPDATE events SET seq = -1 WHERE seq = 4`, `UPDATE events SET seq = 4 WHERE seq = 5`, `UPDATE events SET seq = 5 WHERE seq = -1`},
			&found{Kind: store.BreakReordered, Seq: 4, Position: 5, MissingFrom: 4, MissingTo: 4, Event: result}, "reordered"},
		{"move an event to the end", []string{`UPDATE events SET seq = 11 WHERE seq = 3`},
			&found{Kind: store.BreakReordered, Seq: 4, Position: 4, MissingFrom: 3, MissingTo: 3, Event: result}, "reordered"},
		{"insert an event without a link", []string{insert + `VALUES (0, 'approval_granted', 'fs', 'fs__write_file', '', '', 0, NULL, NULL, NULL, NULL)`},
			&found{Kind: store.BreakInserted, Seq: 11, Event: store.EventApprovalGranted}, "no link"},
		{"insert a forged link at the end", []string{insert + `SELECT time, 'approval_granted', server, tool, snapshot, class, 0, NULL, 11, chain_sum, randomblob(32) FROM events WHERE seq = 10`},
			&found{Kind: store.BreakInserted, Seq: 11, Position: 11, Event: store.EventApprovalGranted}, "after the chain's head"},
		{"insert a forged link in the middle", []string{`UPDATE events SET seq = seq + 100 WHERE seq > 5`,
			`INSERT INTO events SELECT 6, time, 'approval_granted', server, tool, snapshot, class, 0, NULL, 6, chain_sum, randomblob(32) FROM events WHERE seq = 5`},
			&found{Kind: store.BreakInserted, Seq: 6, Position: 6, Event: store.EventApprovalGranted}, "links across it to #5"},
		{"insert a copy", []string{insert + `SELECT time, event, server, tool, snapshot, class, duration_ms, fields, chain_n, chain_prev, chain_sum FROM events WHERE seq = 3`},
			&found{Kind: store.BreakInserted, Seq: 11, Position: 3, Event: result}, "copy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := trail(t)
			tamper(t, path, tc.sql...)
			r := verify(t, path)
			if diff := cmp.Diff(tc.want, foundIn(r)); diff != "" {
				t.Errorf("break (-want +got):\n%s\ndetail: %+v", diff, r.Break)
			}
			if r.Intact != (tc.want == nil) {
				t.Errorf("Intact = %v, want %v", r.Intact, tc.want == nil)
			}
			if tc.want != nil && !strings.Contains(r.Break.Detail, tc.detail) {
				t.Errorf("detail = %q, want it to say %q", r.Break.Detail, tc.detail)
			}
		})
	}
}

// TestAuditTamperingStaysOnRecord: after the newest events were deleted,
// events appended later do not hide it, whether the head was left or
// deleted with them.
func TestAuditTamperingStaysOnRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		sql  []string
		want found
	}{
		{"head left", []string{`DELETE FROM events WHERE seq >= 9`},
			found{Kind: store.BreakDeleted, Seq: 9, Position: 11, MissingFrom: 9, MissingTo: 10, Event: store.EventResult}},
		{"head deleted", []string{`DELETE FROM events WHERE seq >= 9`, `DELETE FROM audit_head`},
			found{Kind: store.BreakDeleted, Seq: 9, Position: 9, Event: store.EventChainBreak}},
		{"head edited", []string{`UPDATE audit_head SET seal = randomblob(32)`},
			found{Kind: store.BreakChanged, Seq: 11, Position: 11, Event: store.EventChainBreak}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := trail(t)
			tamper(t, path, tc.sql...)
			appendEvents(t, open(t, path), 2)
			r := verify(t, path)
			if diff := cmp.Diff(&tc.want, foundIn(r)); diff != "" {
				t.Errorf("break (-want +got):\n%s\ndetail: %+v", diff, r.Break)
			}
		})
	}
}

// TestAuditRolledBack: what the chain cannot see. Whoever kept a copy of
// an older head record can delete the newest events and put it back; the
// trail verifies, and only the head, compared with one recorded elsewhere,
// tells.
func TestAuditRolledBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	db := open(t, path)
	appendEvents(t, db, 9)
	var n int64
	var sum, seal []byte
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := raw.QueryRow(`SELECT n, sum, seal FROM audit_head`).Scan(&n, &sum, &seal); err != nil {
		t.Fatal(err)
	}
	appendEvents(t, db, 1)
	recorded := verify(t, path).Head
	if _, err := raw.Exec(`DELETE FROM events WHERE seq = 10`); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE audit_head SET n = ?, sum = ?, seal = ?`, n, sum, seal); err != nil {
		t.Fatal(err)
	}
	r := verify(t, path)
	if !r.Intact || r.Head.Position != 9 {
		t.Fatalf("Verify after a rollback: got intact %v, head %+v; want intact at #9 (the chain cannot see it)", r.Intact, r.Head)
	}
	if recorded.Position != 10 || recorded.Sum == r.Head.Sum {
		t.Errorf("the head recorded before the rollback (%+v) does not tell it from the head after (%+v)", recorded, r.Head)
	}
}

// TestAuditKey: the key lives in a file beside the database, 0600; a
// trail whose key is gone cannot be verified, and one whose key was
// replaced fails at its first event.
func TestAuditKey(t *testing.T) {
	path := trail(t)
	keyPath := filepath.Join(filepath.Dir(path), "audit.key")
	fi, err := os.Stat(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("audit.key has mode %v, want 0600", fi.Mode().Perm())
	}
	if err := os.Remove(keyPath); err != nil {
		t.Fatal(err)
	}
	if _, err := open(t, path).Audit().Verify(t.Context()); !errors.Is(err, store.ErrNoChainKey) {
		t.Errorf("Verify without the key: got %v, want ErrNoChainKey", err)
	}
	appendEvents(t, open(t, path), 1) // makes a new key
	r := verify(t, path)
	want := &found{Kind: store.BreakChanged, Seq: 1, Position: 1, Event: store.EventResult}
	if diff := cmp.Diff(want, foundIn(r)); diff != "" {
		t.Errorf("break with a new key (-want +got):\n%s", diff)
	}
	if !strings.Contains(r.Break.Detail, "audit key") {
		t.Errorf("detail = %q, want it to name the key as a cause", r.Break.Detail)
	}

	for _, tc := range []struct {
		content string
		mode    os.FileMode
		want    string
	}{
		{"not hex\n", 0o600, "malformed"},
		{strings.Repeat("ab", 32), 0o644, "chmod 600"},
	} {
		if err := os.Remove(keyPath); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keyPath, []byte(tc.content), tc.mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(keyPath, tc.mode)
		for _, err := range []error{
			open(t, path).Audit().Append(t.Context(), store.Event{Event: store.EventCallSent}),
			func() error { _, err := open(t, path).Audit().Verify(t.Context()); return err }(),
		} {
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), keyPath) {
				t.Errorf("with a key file %q, mode %v: got %v, want an error that says %q without the path", tc.content, tc.mode, err, tc.want)
			}
		}
	}
}

// TestAuditChainAcrossProcesses: processes appending to one database at
// once make one linear chain.
func TestAuditChainAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	db := open(t, path)
	const procs = 3
	children := race(t, "audit", path, procs)
	appendEvents(t, db, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5)
	for _, c := range children {
		if res := c.result(t); res.AppendErr != "" {
			t.Errorf("a child's Append failed: %s", res.AppendErr)
		}
		c.cmd.Wait()
	}
	r := verify(t, path)
	const total = (procs + 1) * childAppends * 5
	if !r.Intact || r.Verified != total || r.Events != total {
		t.Errorf("Verify: got intact %v, %d of %d events verified, break %+v; want all %d", r.Intact, r.Verified, r.Events, r.Break, total)
	}
}
