package main

import (
	"bufio"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// auditedProject is a project whose audit trail three status runs
// wrote, and that trail's lines as audit --json prints them, which says
// nothing on stderr.
func auditedProject(t *testing.T) (dir string, lines []string) {
	t.Helper()
	dir = t.TempDir()
	writeFile(t, filepath.Join(dir, "airlock.yaml"), testServerYAML(t, `["*"]`))
	for range 3 {
		runCLI(t, dir, "", "status").want(t, 0)
	}
	r := runCLI(t, dir, "", "audit", "--json").want(t, 0)
	lines = strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) < 6 || r.stderr != "" {
		t.Fatalf("three status runs wrote %d audit events, stderr %q; want at least 6, and nothing said:\n%s", len(lines), r.stderr, r.stdout)
	}
	return dir, lines
}

// TestAuditVerify: `audit verify` exits 0 on an untouched trail and 1,
// naming the first broken event and how, after the database was edited
// with SQL; 3 when the key is gone.
func TestAuditVerify(t *testing.T) {
	dir, lines := auditedProject(t)
	n := len(lines)
	eventAt := func(seq int) string { return decode(t, lines[seq-1])["event"].(string) }

	r := runCLI(t, dir, "", "audit", "verify").want(t, 0)
	if want := fmt.Sprintf("The audit trail is intact: %d events, %d chained.\nHead: seq %d (#%d)", n, n, n, n); !strings.HasPrefix(r.stdout, want) {
		t.Errorf("audit verify = %q, want it to start with %q", r.stdout, want)
	}
	v := decode(t, runCLI(t, dir, "", "audit", "verify", "--json").want(t, 0).stdout)
	head, _ := v["head"].(map[string]any)
	if v["intact"] != true || v["events"] != float64(n) || v["verified"] != float64(n) || v["break"] != nil ||
		head["position"] != float64(n) || head["event"] != eventAt(n) || len(head["sum"].(string)) != 64 {
		t.Errorf("audit verify --json = %v, want intact with %d events and its head", v, n)
	}
	runCLI(t, dir, "", "audit", "verify", "extra").want(t, 2)

	for _, tc := range []struct {
		name string
		sql  string
		text string         // in the text output
		want map[string]any // the break in --json; "at" is checked by seq
		seq  int
	}{
		{"changed", `UPDATE events SET server = 'elsewhere' WHERE seq = 5`,
			"The audit trail is broken: changed at seq 5 (#5)", map[string]any{"kind": "changed"}, 5},
		{"deleted", `DELETE FROM events WHERE seq = 5`,
			"The audit trail is broken: deleted at seq 6 (#6)", map[string]any{"kind": "deleted", "missing_from": 5.0, "missing_to": 5.0}, 6},
		{"newest deleted", fmt.Sprintf(`DELETE FROM events WHERE seq = %d`, n),
			fmt.Sprintf("The audit trail is broken: deleted at seq %d (#%d)", n-1, n-1), map[string]any{"kind": "deleted", "missing_from": float64(n), "missing_to": float64(n)}, n - 1},
		{"inserted", `INSERT INTO events (time, event, server, tool, snapshot, class, duration_ms) VALUES (0, 'approval_granted', 'w', '', '', '', 0)`,
			fmt.Sprintf("The audit trail is broken: inserted at seq %d,", n+1), map[string]any{"kind": "inserted"}, n + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			copyDir := tampered(t, dir, tc.sql)
			r := runCLI(t, copyDir, "", "audit", "verify").want(t, 1)
			if !strings.HasPrefix(r.stdout, tc.text) {
				t.Errorf("audit verify = %q, want it to start with %q", r.stdout, tc.text)
			}
			v := decode(t, runCLI(t, copyDir, "", "audit", "verify", "--json").want(t, 1).stdout)
			b, _ := v["break"].(map[string]any)
			if v["intact"] != false || b == nil {
				t.Fatalf("audit verify --json = %v, want a break", v)
			}
			for k, want := range tc.want {
				if b[k] != want {
					t.Errorf("break[%q] = %v, want %v", k, b[k], want)
				}
			}
			at, _ := b["at"].(map[string]any)
			wantEvent := "approval_granted"
			if tc.seq <= n {
				wantEvent = eventAt(tc.seq)
			}
			if at["seq"] != float64(tc.seq) || at["event"] != wantEvent || at["time"] == nil {
				t.Errorf("break at %v, want seq %d, event %s and its time", at, tc.seq, wantEvent)
			}
			if d, _ := b["detail"].(string); d == "" {
				t.Error("the break has no detail")
			}
		})
	}

	// Whoever can write the database but not read the key may strip the
	// whole chain, or delete every event with the head: the mark beside
	// the key says the trail was chained, and the next append says so in
	// the trail too.
	for _, sql := range []string{
		`UPDATE events SET chain_n = NULL, chain_prev = NULL, chain_sum = NULL; DELETE FROM audit_head`,
		`DELETE FROM events; DELETE FROM audit_head`,
	} {
		copyDir := tampered(t, dir, sql)
		for _, after := range []string{"", "another append"} {
			if after != "" {
				runCLI(t, copyDir, "", "status").want(t, 0)
			}
			r := runCLI(t, copyDir, "", "audit", "verify").want(t, 1)
			if !strings.Contains(r.stdout, "The audit trail is broken: deleted") || !strings.Contains(r.stdout, "stripped") {
				t.Errorf("%s, then %q: audit verify = %q, want a break that says the chain was stripped", sql, after, r.stdout)
			}
		}
	}

	if err := os.Remove(filepath.Join(dir, ".airlock", "audit.key")); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, dir, "", "audit", "verify").want(t, 3)
	if !strings.Contains(r.stderr, "key is missing") {
		t.Errorf("audit verify without the key: stderr = %q, want it to say the key is missing", r.stderr)
	}
}

// tampered copies the project dir and runs the SQL statements stmts on
// the copy's database, as someone who can write it but not read the key
// could; it returns the copy.
func tampered(t *testing.T, dir, stmts string) string {
	t.Helper()
	copyDir := t.TempDir()
	if err := os.CopyFS(copyDir, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(copyDir, ".airlock", "audit.key"), 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(copyDir, ".airlock", "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(stmts)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	return copyDir
}

// TestAuditNewest: audit shows the newest events, oldest first, as tail
// does, and says on stderr how many older ones it left out and how to see
// them; nothing is said when nothing was left out.
func TestAuditNewest(t *testing.T) {
	dir, lines := auditedProject(t)
	n := len(lines)
	r := runCLI(t, dir, "", "audit", "--json", "--limit", "2").want(t, 0)
	if got, want := strings.TrimSpace(r.stdout), strings.Join(lines[n-2:], "\n"); got != want {
		t.Errorf("audit --limit 2:\n%s\nwant the newest two:\n%s", got, want)
	}
	if want := fmt.Sprintf("airlock: %d older events since ", n-2); !strings.HasPrefix(r.stderr, want) ||
		!strings.Contains(r.stderr, fmt.Sprintf("airlock audit --since 24h0m0s --limit %d\n", n)) {
		t.Errorf("audit --limit 2: stderr = %q, want it to say %q and how to see them all", r.stderr, want)
	}
	r = runCLI(t, dir, "", "audit", "--limit", "1").want(t, 0)
	if got := strings.Count(r.stdout, "\n"); got != 1 || !strings.Contains(r.stderr, "older events") {
		t.Errorf("audit --limit 1 (text): %d lines, stderr %q; want one line and a note", got, r.stderr)
	}
}

// TestAuditFollow: audit --follow prints the newest events, then each new
// one as another process writes it, and ends with exit 0 when
// interrupted.
func TestAuditFollow(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "airlock.yaml"), testServerYAML(t, `["*"]`))
	runCLI(t, dir, "", "status").want(t, 0)
	before := strings.Count(runCLI(t, dir, "", "audit", "--json").want(t, 0).stdout, "\n")

	cmd := exec.Command(airlockBin, "audit", "--follow", "--json", "--limit", "1")
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func(what string) map[string]any {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("audit --follow ended before %s; stderr: %s", what, stderr.String())
			}
			return decode(t, l)
		case <-time.After(20 * time.Second):
			t.Fatalf("audit --follow printed no %s", what)
		}
		return nil
	}
	next("newest event")
	runCLI(t, dir, "", "call", "w__sneaky").want(t, 5) // approval required
	var got []string
	for !strings.Contains(strings.Join(got, ","), "result") {
		got = append(got, next("new event")["event"].(string))
	}
	for _, want := range []string{"server_start", "decision", "approval_requested", "result"} {
		if !strings.Contains(strings.Join(got, ","), want) {
			t.Errorf("audit --follow printed %v, want %s among them", got, want)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("audit --follow after an interrupt: %v, want exit 0; stderr: %s", err, stderr.String())
	}
	if want := fmt.Sprintf("airlock: %d older events", before-1); !strings.HasPrefix(stderr.String(), want) {
		t.Errorf("stderr = %q, want it to start with %q", stderr.String(), want)
	}
}

// TestGovernanceUnreadableStore: the governance commands exit 3, not 2,
// when the store cannot be read (here a database file that is not one),
// and say why.
func TestGovernanceUnreadableStore(t *testing.T) {
	dir, _ := auditedProject(t)
	db := filepath.Join(dir, ".airlock", "airlock.db")
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(db + suffix)
	}
	writeFile(t, db, strings.Repeat("not a database\n", 512))
	for _, args := range [][]string{{"approvals", "list"}, {"recovery", "list"}, {"audit"}, {"audit", "verify"}} {
		r := runCLI(t, dir, "", args...).want(t, 3)
		if !strings.Contains(r.stderr, "not a database") {
			t.Errorf("%s: stderr %q, want it to say why", strings.Join(args, " "), r.stderr)
		}
	}
}
