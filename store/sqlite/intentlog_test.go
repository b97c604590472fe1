package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/store"
)

// loggedIntents is how many intents the log role begins; it ends the
// first endedIntents of them.
const (
	loggedIntents = 5
	endedIntents  = 2
)

// loggedIntent is the i-th intent the log role begins: each field its own.
func loggedIntent(i int) store.Intent {
	return store.Intent{ID: fmt.Sprint("logged-", i), CallID: fmt.Sprint("call-", i), Server: "fs", Tool: "fs__write_file",
		RemoteTool: "write_file", ArgsHash: fmt.Sprint("sha256:", i), Arguments: json.RawMessage(fmt.Sprintf(`{"path":"f%d.txt"}`, i)),
		Snapshot: "snap_1", Effect: "write", Idempotent: i%2 == 0, Tenant: "acme", User: fmt.Sprint("user-", i),
		CreatedAt: time.Date(2026, 12, 1, 10, 0, i, 123456000, time.UTC)}
}

// logChild begins the logged intents, ends the first of them, says
// "begun" and waits to be killed.
func logChild(ctx context.Context, db interface{ Journal() store.Journal }) int {
	j := db.Journal()
	for i := range loggedIntents {
		if err := j.Begin(ctx, loggedIntent(i)); err != nil {
			fmt.Println(err)
			return 1
		}
	}
	for i := range endedIntents {
		if err := j.End(ctx, loggedIntent(i).ID, store.OutcomeSucceeded, "done"); err != nil {
			fmt.Println(err)
			return 1
		}
	}
	fmt.Println("begun")
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// TestIntentLogPutsBack: a process killed with intents begun leaves its
// intent log; RecoverOpen in another process reads it, puts back the rows
// the database lost (as a power loss before the WAL was synced would take
// them: here, deleted), leaves those it has as they are, ends the open
// ones unknown, and removes the log and the lock file.
func TestIntentLogPutsBack(t *testing.T) {
	for _, lost := range []bool{false, true} {
		t.Run(fmt.Sprint("rows lost: ", lost), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "airlock.db")
			cmd, _, out := startChild(t, "log", path, nil, "")
			if got := readLine(t, out); got != "begun" {
				t.Fatalf("child said %q, want begun", got)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			logs, _ := filepath.Glob(filepath.Join(path+"-writers", "*.intents"))
			if len(logs) != 1 {
				t.Fatalf("intent logs the killed child left: %v, want one", logs)
			}
			if lost {
				raw, err := sql.Open("sqlite", path)
				if err != nil {
					t.Fatal(err)
				}
				res, err := raw.ExecContext(t.Context(), `DELETE FROM intents`)
				if n, _ := res.RowsAffected(); err != nil || n != loggedIntents {
					t.Fatalf("deleting the child's rows: %d, %v", n, err)
				}
				raw.Close()
			}

			j := open(t, path).Journal()
			n, err := j.RecoverOpen(t.Context(), time.Now())
			want := loggedIntents - endedIntents
			if lost {
				want = loggedIntents // their outcomes went with their rows
			}
			if err != nil || n != want {
				t.Fatalf("RecoverOpen: got %d, %v; want %d, nil", n, err, want)
			}
			recs, err := j.Records(t.Context(), store.RecordFilter{All: true})
			if err != nil || len(recs) != loggedIntents {
				t.Fatalf("records after recovery: %d, %v; want %d", len(recs), err, loggedIntents)
			}
			for i, r := range recs {
				begun, status := loggedIntent(i), store.OutcomeUnknown
				if i < endedIntents && !lost {
					begun.Arguments, status = nil, store.OutcomeSucceeded // dropped by End
				}
				if diff := cmp.Diff(begun, r.Intent); diff != "" {
					t.Errorf("intent %d after recovery (-begun +recovered):\n%s", i, diff)
				}
				if r.Status != status {
					t.Errorf("intent %d after recovery: %s, want %s", i, r.Status, status)
				}
			}
			if left, _ := os.ReadDir(path + "-writers"); len(left) != 0 {
				t.Errorf("files left in the writers' directory after recovery: %v", left)
			}
			if n, err := j.RecoverOpen(t.Context(), time.Now()); err != nil || n != 0 {
				t.Errorf("RecoverOpen again: got %d, %v; want 0, nil", n, err)
			}
		})
	}
}
