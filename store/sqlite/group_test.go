package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/airlockhq/airlock/store"
)

// TestGroupConcurrent: intents begun and ended by many goroutines at once
// are all on disk, each with its one outcome; a taken id is refused alone,
// and a second End of the same intent loses.
func TestGroupConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	j := db.Journal()
	if err := j.Begin(t.Context(), testIntent("rec_taken")); err != nil {
		t.Fatal(err)
	}
	const n = 64
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprint("rec_", i)
			if err := j.Begin(t.Context(), testIntent(id)); err != nil {
				errs[i] = err
				return
			}
			// Two Ends race: exactly one wins.
			var ends sync.WaitGroup
			var lost [2]error
			for k, o := range []store.Outcome{store.OutcomeSucceeded, store.OutcomeFailed} {
				ends.Go(func() { lost[k] = j.End(t.Context(), id, o, "") })
			}
			ends.Wait()
			if (lost[0] == nil) == (lost[1] == nil) {
				errs[i] = fmt.Errorf("two Ends of %s: got %v and %v, want exactly one ErrConflict", id, lost[0], lost[1])
			} else if err := errors.Join(lost[0], lost[1]); !errors.Is(err, store.ErrConflict) {
				errs[i] = fmt.Errorf("the End that lost: got %v, want ErrConflict", err)
			}
		})
	}
	var taken error
	wg.Go(func() { taken = j.Begin(t.Context(), testIntent("rec_taken")) })
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(taken, store.ErrConflict) {
		t.Errorf("Begin of a taken id among others: got %v, want ErrConflict", taken)
	}
	db.Close()

	// Everything is in the file, as a new DB reads it.
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	recs, err := db.Journal().Records(t.Context(), store.RecordFilter{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(recs), n+1; got != want {
		t.Fatalf("records: got %d, want %d", got, want)
	}
	for _, r := range recs {
		if r.ID == "rec_taken" {
			continue
		}
		if r.Status != store.OutcomeSucceeded && r.Status != store.OutcomeFailed {
			t.Errorf("%s: status %s, want succeeded or failed", r.ID, r.Status)
		}
	}
}

// TestGroupFails: a group whose transaction cannot be written fails every
// write in it, and none of them is on disk; a refusal fails only its own
// write. The first write holds the commit until the others have queued,
// so that they form the next group.
func TestGroupFails(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	insert := func(id string) func(context.Context, *sql.Tx) error {
		return func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO kv (k) VALUES (?)`, id)
			return err
		}
	}
	if _, err := db.w.ExecContext(t.Context(), `CREATE TABLE kv (k TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	broken := errors.New("broken")
	for _, tc := range []struct {
		name  string
		odd   func(context.Context, *sql.Tx) error // the third write of the group
		oddOK error                                // what the third write gets
		want  []string                             // what the group leaves on disk
	}{
		{"fatal", func(context.Context, *sql.Tx) error { return broken }, broken, nil},
		{"refusal", func(context.Context, *sql.Tx) error { return refusal{broken} }, broken, []string{"refusal-0", "refusal-1", "refusal-3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			started, release := make(chan struct{}), make(chan struct{})
			first := make(chan error, 1)
			go func() {
				first <- db.group.do(func(ctx context.Context, tx *sql.Tx) error {
					close(started)
					<-release
					return insert(tc.name+"-first")(ctx, tx)
				})
			}()
			<-started
			var wg sync.WaitGroup
			errs := make([]error, 4)
			for i := range 4 {
				apply := insert(fmt.Sprint(tc.name, "-", i))
				if i == 2 {
					apply = tc.odd
				}
				wg.Go(func() { errs[i] = db.group.do(apply) })
			}
			queued(db, 4)
			close(release)
			if err := <-first; err != nil {
				t.Fatalf("the first group: %v", err)
			}
			wg.Wait()
			for i, err := range errs {
				want := error(nil)
				if i == 2 || tc.want == nil {
					want = tc.oddOK
				}
				if !errors.Is(err, want) || (want == nil) != (err == nil) {
					t.Errorf("write %d: got %v, want %v", i, err, want)
				}
			}
			rows, err := queryAll(t.Context(), db.w, func(s scanner) (string, error) {
				var k string
				return k, s.Scan(&k)
			}, `SELECT k FROM kv WHERE k LIKE ? AND k NOT LIKE '%first' ORDER BY k`, tc.name+"-%")
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(rows) != fmt.Sprint(tc.want) {
				t.Errorf("on disk: got %v, want %v", rows, tc.want)
			}
		})
	}
}

// queued waits until n writes wait behind the group that is committing.
func queued(db *DB, n int) {
	for {
		db.group.mu.Lock()
		got := len(db.group.queue)
		db.group.mu.Unlock()
		if got >= n {
			return
		}
		runtime.Gosched()
	}
}

func testIntent(id string) store.Intent {
	return store.Intent{ID: id, Server: "fs", Tool: "fs__write", RemoteTool: "write", ArgsHash: "sha256:00", Snapshot: "snap_1", Effect: "write"}
}
