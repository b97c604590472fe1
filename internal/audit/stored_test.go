package audit_test

import (
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/redact"
	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/sqlite"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// verdict stands for the host's named string types (policy.Verdict,
// policy.Effect), which are stored as their strings.
type verdict string

// storedEvents are events of every kind the host writes, with what must
// be redacted in them: in the fields the writer redacts, in the values
// put in with Record (keys, sensitive keys, neighbours of an AWS key id),
// and text that JSON escapes.
func storedEvents(t0 time.Time) []store.Event {
	const secret = "s3cr3t-value-0123"
	var events []store.Event
	add := func(e store.Event) {
		e.Time = t0.Add(time.Duration(len(events)) * time.Millisecond)
		events = append(events, e)
	}
	add(store.Event{Event: "server_start", Server: "echo"})
	add(store.Event{Event: "server_ready", Server: "echo", Fields: map[string]any{"protocol_version": "2026-07-28", "tools": 1}})
	add(readResult())
	fields := map[string]any{
		"decision": verdict("deny"), "reason": "hook said " + secret + " <&> \u2028", "error": "Authorization: Bearer abcdEFGH1234ijklMNOP5678",
		"note": "password=hunter2hunter2Xy9", "queue_wait_ms": int64(12), "ratio": 0.25, "ok": true, "none": nil,
		"tenant": "default", "user": "ロボット", "trace_id": "28e1366261ea7caf9d18ba9668d4c0e7", "bytes": []byte("xyz"),
	}
	args := map[string]any{
		"text": "key " + secret, "n": json.Number("1.50"), "big": json.Number("9007199254740993"), "f": 1e21,
		"password": "plain", "Api-Key": "abc", "nested": map[string]any{"token": []any{"a", "b", ""}, "list": []any{1.0, "x", nil, true, map[string]any{"k": "v"}, []any{}}},
		"id": "AKIAIOSFODNN7EXAMPLE", "key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "html": "<b>&amp;</b>", "ctl": "a\nb\tc\x00",
		"sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD": "a key as a key", "sk-abcdefghijklmnopqrstuvwxyz0123456789ABCE": "another",
		"": "empty key", "é": "ü", "emoji 🙂": "🙂",
	}
	audit.Record(fields, "args", "fs__write", args)
	audit.Record(fields, "result", "fs__write", json.RawMessage(`{"n": 1, "m": 1.0, "e": 1e2, "text": "key `+secret+`", "list": [1, "a", 2, "b", {"x": 1}, {"x": "y"}]}`))
	audit.Record(fields, "bad", "fs__write", json.RawMessage(`{} x`))
	audit.Record(fields, "content", "fs__write", []any{
		map[string]any{"type": "text", "text": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"},
		map[string]any{"type": "image", "artifact": "art_1", "media_type": "image/png", "size": int64(1234)},
		map[string]any{"type": "resource_link", "uri": "https://user:pa55w0rd@example.com/x", "name": "x"},
	})
	add(store.Event{Event: store.EventDecision, Server: "fs", Tool: "fs__write", Snapshot: "snap_1", Fields: fields})
	for i := range 100 {
		f := map[string]any{"decision": verdict("allow"), "attempt": i, "reason": fmt.Sprintf("allowed %d", i), "call": fmt.Sprintf("call_%026x", i)}
		audit.Record(f, "args", "echo__echo", map[string]any{"text": strings.Repeat("x", i), "i": float64(i)})
		add(store.Event{Event: store.EventResult, Server: "echo", Tool: "echo__echo", Snapshot: "snap_2", Class: "ok", DurationMS: int64(i), Fields: f})
	}
	add(store.Event{Event: "server_stop", Server: "echo", Class: "error", Fields: map[string]any{"error": "exit status 1: " + secret}})
	return events
}

// TestWriterStores: what the writer stores, to the byte, for events of
// every kind, with their links: the chain covers these bytes, and a trail
// written by one version must read and verify alike in the next.
func TestWriterStores(t *testing.T) {
	dir := t.TempDir()
	key := strings.Repeat("0123456789abcdef", 4)
	if err := os.WriteFile(filepath.Join(dir, "audit.key"), []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "airlock.db")
	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w := audit.New(db.Audit(), &audit.Options{Redactor: redact.New([]string{"s3cr3t-value-0123"}), RecordValues: []string{"fs__write"}})
	w.Append(t.Context(), storedEvents(time.Date(2030, 1, 2, 3, 4, 5, 6789, time.UTC))...)
	closeWriter(t, w)
	if r, err := db.Audit().Verify(t.Context()); err != nil || !r.Intact {
		t.Fatalf("Verify = %+v, %v; want an intact chain", r, err)
	}

	raw, err := sql.Open("sqlite", path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rows, err := raw.Query(`SELECT time, event, server, tool, snapshot, class, duration_ms, fields, chain_n, chain_prev, chain_sum FROM events ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got strings.Builder
	for rows.Next() {
		var (
			tm, d, n                      int64
			event, server, tool, snap, cl string
			fields                        sql.NullString
			prev, sum                     []byte
		)
		if err := rows.Scan(&tm, &event, &server, &tool, &snap, &cl, &d, &fields, &n, &prev, &sum); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&got, "%d %d %q %q %q %q %q %d %s\n\t%s\n", n, tm, event, server, tool, snap, cl, d, hex.EncodeToString(sum), fields.String)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "stored.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("stored events (-want +got):\n%s", diff)
	}
}
