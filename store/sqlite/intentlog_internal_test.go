package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/store"
)

const testWriter = "0123456789abcdef0123456789"

func logIntent(i int, size int) store.Intent {
	return store.Intent{ID: fmt.Sprint("rec_", i), Server: "fs", Tool: "fs__write", RemoteTool: "write", ArgsHash: "h",
		Arguments: []byte(fmt.Sprintf(`{"text":%q}`, strings.Repeat("x", size))), Effect: "write"}
}

// newTestLog makes a log in a directory of its own whose cover and flush
// count their calls.
func newTestLog(t *testing.T) (l *intentLog, covers, flushes *atomic.Int32) {
	t.Helper()
	covers, flushes = new(atomic.Int32), new(atomic.Int32)
	l, err := createLog(t.TempDir(), testWriter, func() error { covers.Add(1); return nil }, func() { flushes.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.close)
	return l, covers, flushes
}

func appendSettled(t *testing.T, l *intentLog, in store.Intent) {
	t.Helper()
	if err := l.appendIntent(in); err != nil {
		t.Fatalf("append %s: %v", in.ID, err)
	}
	l.settle()
}

func readIDs(t *testing.T, path string) []string {
	t.Helper()
	ins, err := readLog(path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, in := range ins {
		ids = append(ids, in.ID)
	}
	return ids
}

// TestLogReadStops: reading a log stops at a record whose checksum fails,
// one cut short, and one whose sequence number does not follow: what a
// torn write, or an earlier pass, leaves.
func TestLogReadStops(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(rec []byte) // the third record, header included
	}{
		{"checksum", func(rec []byte) { rec[logHeader+3] ^= 1 }},
		{"cut short", func(rec []byte) { clear(rec[logHeader+5:]) }},
		{"length past the end", func(rec []byte) { binary.LittleEndian.PutUint32(rec, 1<<30) }},
		{"sequence", func(rec []byte) { binary.LittleEndian.PutUint64(rec[8:], 99) }},
		{"zeros", func(rec []byte) { clear(rec) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _, _ := newTestLog(t)
			var offs []int64
			for i := range 4 {
				offs = append(offs, l.off)
				appendSettled(t, l, logIntent(i, 10))
			}
			rec := make([]byte, offs[3]-offs[2])
			if _, err := l.f.ReadAt(rec, offs[2]); err != nil {
				t.Fatal(err)
			}
			tc.spoil(rec)
			if _, err := l.f.WriteAt(rec, offs[2]); err != nil {
				t.Fatal(err)
			}
			if got, want := readIDs(t, l.path), []string{"rec_0", "rec_1"}; !equal(got, want) {
				t.Errorf("read: got %v, want %v", got, want)
			}
		})
	}
}

func equal(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

// TestLogVoid: a Begin refused after its record was written (a taken id)
// voids it, so that recovery puts back the first intent, not the refused
// one.
func TestLogVoid(t *testing.T) {
	db := openDB(t)
	first := logIntent(1, 10)
	if err := db.Journal().Begin(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	again := first
	again.Server = "other"
	if err := db.Journal().Begin(t.Context(), again); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Begin of a taken id: %v, want ErrConflict", err)
	}
	ins, err := readLog(db.log.path)
	if err != nil || len(ins) != 1 || ins[0].Server != "fs" {
		t.Errorf("the log after a refused Begin: %+v, %v; want the first intent alone", ins, err)
	}
}

// TestLogRestart: a log that is full starts again at its start, once every
// record of the pass has settled (their rows flushed, not left to linger)
// and cover has made their rows durable;
// the records of the earlier pass are not read again; and a record larger
// than the log grows it.
func TestLogRestart(t *testing.T) {
	defer func(n int64) { logSize = n }(logSize)
	logSize = 4096
	l, covers, flushes := newTestLog(t)
	enc, _ := json.Marshal(logEntry{Intent: new(logIntent(0, 300))})
	size := int64(logHeader + len(enc)) // of every record below: their ids have one digit
	i := 0
	for ; l.off+2*size <= logSize; i++ { // room for one more below

		appendSettled(t, l, logIntent(i, 300))
	}
	if covers.Load() != 0 {
		t.Fatalf("cover was called before the log was full")
	}
	// One record not settled: the next pass waits for it.
	if err := l.appendIntent(logIntent(i, 300)); err != nil {
		t.Fatal(err)
	}
	i++
	done := make(chan error, 1)
	next := i
	go func() { done <- l.appendIntent(logIntent(next, 300)) }()
	select {
	case err := <-done:
		t.Fatalf("an append that starts the log again returned (%v) before the pass's last record settled", err)
	case <-time.After(100 * time.Millisecond):
	}
	if covers.Load() != 0 {
		t.Errorf("cover was called before the pass's last record settled")
	}
	if flushes.Load() != 1 {
		t.Errorf("the append that waits for the pass's last record flushed %d times, want once: its row need not linger", flushes.Load())
	}
	l.settle()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	l.settle()
	if covers.Load() != 1 {
		t.Errorf("cover was called %d times, want once", covers.Load())
	}
	if got, want := readIDs(t, l.path), []string{fmt.Sprint("rec_", next)}; !equal(got, want) {
		t.Errorf("read after the log started again: got %v, want %v", got, want)
	}

	big := logIntent(100, int(logSize))
	appendSettled(t, l, big)
	if l.size <= logSize {
		t.Errorf("the log's size after a record larger than it: %d", l.size)
	}
	if got, want := readIDs(t, l.path), []string{"rec_100"}; !equal(got, want) {
		t.Errorf("read after a large record: got %v, want %v", got, want)
	}
	appendSettled(t, l, logIntent(101, 10))
	if got, want := readIDs(t, l.path), []string{"rec_100", "rec_101"}; !equal(got, want) {
		t.Errorf("read after a large record and another: got %v, want %v", got, want)
	}
}

// TestBeginLaterRowRefused: an intent BeginLater made durable whose row the
// database then refuses (its id was taken) stays in the log, which takes
// nothing more: every later Begin fails, saying why, so that no call goes
// out whose intent the journal cannot hold.
func TestBeginLaterRowRefused(t *testing.T) {
	db := openDB(t)
	j := db.Journal().(journal)
	first := logIntent(1, 10)
	if err := j.BeginLater(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	again := first
	again.Server = "other"
	if err := j.BeginLater(t.Context(), again); err != nil {
		t.Fatalf("BeginLater of a taken id: %v (it does not look)", err)
	}
	if got, err := j.Get(t.Context(), first.ID); err != nil || got.Server != "fs" {
		t.Errorf("the first intent after a second with its id: %+v, %v", got, err)
	}
	err := j.BeginLater(t.Context(), logIntent(2, 10))
	if err == nil || !strings.Contains(err.Error(), "refused until Airlock restarts") {
		t.Errorf("BeginLater after a refused row: %v, want the log stopped", err)
	}
	if err := j.Begin(t.Context(), logIntent(3, 10)); err == nil {
		t.Error("Begin after a refused row: nil error, want the log stopped")
	}
	if ids := readIDs(t, db.log.path); !equal(ids, []string{"rec_1", "rec_1"}) {
		t.Errorf("the log after a refused row: %v, want both records kept", ids)
	}
}

// TestLaterWritesCommitted: the row BeginLater queued, and an outcome
// EndLater queued for another intent, reach the database by themselves
// (laterLinger), without a read through their handle, and the WAL they
// left is synced.
func TestLaterWritesCommitted(t *testing.T) {
	db := openDB(t)
	path := db.path
	j := db.Journal().(journal)
	if err := j.Begin(t.Context(), logIntent(1, 10)); err != nil {
		t.Fatal(err)
	}
	if err := j.BeginLater(t.Context(), logIntent(2, 10)); err != nil {
		t.Fatal(err)
	}
	j.EndLater("rec_1", store.OutcomeSucceeded, "", nil)
	deadline := time.Now().Add(10 * time.Second)
	if r, err := readWhen(t, path, "rec_1", ended); r.Status != store.OutcomeSucceeded {
		t.Fatalf("rec_1 through another handle 10 s later: %q, %v; want succeeded", r.Status, err)
	}
	if r, err := readWhen(t, path, "rec_2", func(store.Record) bool { return true }); err != nil || r.Status != store.OutcomeOpen {
		t.Fatalf("rec_2 through another handle 10 s later: %q, %v; want open", r.Status, err)
	}
	for unsynced, carried := syncState(db); unsynced || carried; unsynced, carried = syncState(db) {
		if time.Now().After(deadline) {
			t.Fatal("the WAL is still unsynced 10 s after the later writes")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRowWaitsForItsOutcome: the row of an intent that BeginLater queued
// waits, beyond laterLinger, for the intent's outcome, which EndLater then
// writes with it in one INSERT; and once the outcome is in, the row is
// committed without waiting any longer (soon).
func TestRowWaitsForItsOutcome(t *testing.T) {
	defer func(d time.Duration) { rowLinger = d }(rowLinger)
	rowLinger = time.Hour // only the outcome can bring the row's commit
	db := openDB(t)
	// Count the UPDATEs of intents: an outcome written on its own is one.
	for _, q := range []string{`CREATE TABLE intent_updates (id TEXT)`,
		`CREATE TRIGGER count_updates AFTER UPDATE ON intents BEGIN INSERT INTO intent_updates VALUES (new.id); END`} {
		if _, err := db.w.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	j := db.Journal().(journal)
	if err := j.BeginLater(t.Context(), logIntent(1, 10)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * laterLinger) // longer than an outcome may wait
	endErr := make(chan error, 1)
	j.EndLater("rec_1", store.OutcomeSucceeded, "", func(err error) { endErr <- err })
	if err := <-endErr; err != nil {
		t.Fatal(err)
	}
	// Not flushed by a read through db: the row and outcome must reach
	// the database by themselves, long before the hour is up.
	if r, err := readWhen(t, db.path, "rec_1", ended); r.Status != store.OutcomeSucceeded {
		t.Fatalf("another handle 10 s after the outcome: %q, %v; want succeeded", r.Status, err)
	}
	var updates int
	if err := db.w.QueryRow(`SELECT count(*) FROM intent_updates`).Scan(&updates); err != nil {
		t.Fatal(err)
	}
	if updates != 0 {
		t.Errorf("the outcome was written as %d UPDATE(s), want none: the row should have waited for it", updates)
	}
}

// readWhen reads intent id through a handle of its own on the database at
// path, which does not hurry the writes another handle queued, until ok
// says so of it or 10 s have passed, and returns what it read last.
func readWhen(t *testing.T, path, id string, ok func(store.Record) bool) (store.Record, error) {
	t.Helper()
	other, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := other.Journal().Get(context.Background(), id)
		if (err == nil && ok(r)) || time.Now().After(deadline) {
			return r, err
		}
		time.Sleep(time.Millisecond)
	}
}

// ended says whether an intent has an outcome.
func ended(r store.Record) bool { return r.Status != store.OutcomeOpen }

// TestLaterWriteSoon: a write queued to wait long is committed once soon
// says its time has come, and not before.
func TestLaterWriteSoon(t *testing.T) {
	db := openDB(t)
	committed := make(chan error, 1)
	p := newLater(func(context.Context, *sql.Tx) error { return nil }, func(err error) { committed <- err }, time.Hour)
	db.group.queueLater(p)
	select {
	case err := <-committed:
		t.Fatalf("a write due in an hour was committed (%v) without a flush, before soon", err)
	case <-time.After(5 * laterLinger):
	}
	p.soon()
	select {
	case err := <-committed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a write was not committed 10 s after soon")
	}
}

// TestFlushPastMaxGroup: a flush commits everything queued, even more than
// one group holds, however long the writes could have waited.
func TestFlushPastMaxGroup(t *testing.T) {
	db := openDB(t)
	const n = maxGroup + 100
	var committed sync.WaitGroup
	committed.Add(n)
	for range n {
		db.group.queueLater(newLater(func(context.Context, *sql.Tx) error { return nil }, func(error) { committed.Done() }, time.Hour))
	}
	db.group.flush()
	testenv.Returns(t, fmt.Sprintf("%d writes due in an hour, all committed after a flush", n), committed.Wait)
}

// TestCloseKeepsBrokenLog: an intent whose call went out (BeginLater
// returned) but whose row the database refused (a full disk, say) is kept
// in the intent log, which says that a restart puts it back. Closing the
// store cleanly must not throw that record away: the next start recovers
// the call as unknown instead of losing it.
func TestCloseKeepsBrokenLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	// The database refuses the row, as a full disk would.
	if _, err := db.w.Exec(`CREATE TRIGGER refuse BEFORE INSERT ON intents WHEN new.id = 'rec_lost'
BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`); err != nil {
		t.Fatal(err)
	}
	j := db.Journal().(journal)
	in := logIntent(1, 10)
	in.ID = "rec_lost"
	if err := j.BeginLater(t.Context(), in); err != nil {
		t.Fatal(err) // durable in the log: the call is sent now
	}
	db.awaitLater()
	if err := j.BeginLater(t.Context(), logIntent(2, 10)); err == nil {
		t.Fatal("BeginLater after a refused row succeeded; want the log stopped")
	}
	if _, err := db.w.Exec(`DROP TRIGGER refuse`); err != nil { // the disk has room again
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Logf("close: %v", err)
	}

	db2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if _, err := db2.Journal().RecoverOpen(context.Background(), now()); err != nil {
		t.Fatal(err)
	}
	r, err := db2.Journal().Get(context.Background(), "rec_lost")
	if err != nil || r.Status != store.OutcomeUnknown {
		t.Fatalf("the intent of a sent call whose row was refused, after a clean close and a start: %+v, %v; want it unknown", r.Status, err)
	}
}

// TestRefusedRowWrittenLater: once the database takes writes again, the
// next Begin first writes the row it refused earlier (open: its call may
// have gone out), and goes on; the host need not be restarted. While it
// still refuses, every Begin is refused.
func TestRefusedRowWrittenLater(t *testing.T) {
	db := openDB(t)
	if _, err := db.w.Exec(`CREATE TRIGGER refuse BEFORE INSERT ON intents
BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`); err != nil {
		t.Fatal(err)
	}
	j := db.Journal().(journal)
	in := logIntent(1, 10)
	if err := j.BeginLater(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	db.awaitLater()
	if err := j.BeginLater(t.Context(), logIntent(2, 10)); err == nil {
		t.Fatal("BeginLater while the database refuses rows succeeded")
	}
	if _, err := db.w.Exec(`DROP TRIGGER refuse`); err != nil {
		t.Fatal(err)
	}
	if err := j.BeginLater(t.Context(), logIntent(3, 10)); err != nil {
		t.Fatalf("BeginLater once the database takes rows again: %v", err)
	}
	if r, err := j.Get(t.Context(), in.ID); err != nil || r.Status != store.OutcomeOpen {
		t.Errorf("the refused intent once the database takes rows again: %q, %v; want it open", r.Status, err)
	}
	if r, err := j.Get(t.Context(), "rec_3"); err != nil || r.Status != store.OutcomeOpen {
		t.Errorf("the next intent: %q, %v; want it open", r.Status, err)
	}
}
