// Package sqlite is the embedded store backend: one SQLite database file in
// the host's state directory, through modernc.org/sqlite (no cgo).
//
// Durability and concurrency:
//
//   - The database is in WAL mode with synchronous=FULL on every connection
//     that writes, so every commit (approval use, remembered rules) is
//     synced to disk before it returns. FULL is set connection-wide rather
//     than per statement: a consumed grant must survive a power loss as
//     surely as an intent. The journal's writes and the audit trail's
//     batches are the exceptions, below.
//   - An intent is durable when Begin returns: it is written, checksummed,
//     to its writer's intent log ("<file>-writers/<id>.intents", a
//     preallocated file of its own) with O_DSYNC, while its row is
//     committed to the database without a sync of its own
//     (intentlog.go). BeginLater returns once the log record is synced and
//     commits the row after it. The log is the redo of a crash: RecoverOpen
//     puts back, from a dead writer's log, the rows the database does not
//     have, before it ends that writer's open intents unknown.
//   - The journal's rows and outcomes are committed in groups (group.go),
//     to the WAL without an fsync: writes a caller waits for at once, with
//     what is queued; writes nobody waits for as soon as a read through
//     the DB needs them, or else EndLater's outcomes within 10 ms and
//     BeginLater's rows within 100 ms, or with their outcome, in one
//     INSERT. The WAL is synced within 10 ms of a commit, and before an
//     intent log is reused. A crash takes outcomes of the last 20 ms at
//     most (never an intent, which its log keeps): their intents read as
//     unknown, never as sent again. The audit trail's batches, too, are
//     committed without a sync of their own.
//   - Writes in one process go through one connection; writers in other
//     processes wait on SQLite's lock for up to the busy timeout. Every
//     state change that must happen at most once (End, Resolve, Decide,
//     Consume, a job's settling) is a single conditional UPDATE, which
//     SQLite runs under its write lock, so racing goroutines and processes
//     cannot both win.
//   - Each DB that begins intents or creates jobs holds an advisory lock on
//     a file of its own beside the database ("<file>-writers/"). The kernel
//     drops the lock when the process dies, which is how RecoverOpen tells
//     an intent left by a crashed process from one that is still in
//     flight, and RecoverJobs and Job a job.
//   - The database and its -wal and -shm files are created with mode 0600.
//   - The audit trail is chained (store.ChainLink) under a key kept in the
//     file audit.key beside the database (mode 0600), made by the first
//     Append. Links are computed inside the appending transaction, under
//     the write lock, so that every process extends the same chain.
//
// A database that cannot be written (a read-only file or directory) can
// still be opened if it can be read and its schema is current; Begin then
// fails, and the host refuses the call.
//
// The host and the CLI import sqlite; everything else uses package store.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/internal/sqlrow"
)

// busyTimeout is how long a write waits for another process's write to
// finish before it fails.
const busyTimeout = 10 * time.Second

// readers is the size of the read pool: WAL lets readers run alongside the
// writer.
const readers = 4

// A DB is a store in one SQLite file. It is safe for concurrent use by
// several goroutines; several DBs, in one process or many, may share a
// file.
type DB struct {
	w    *sql.DB // one connection, BEGIN IMMEDIATE, synchronous=FULL
	r    *sql.DB // read-only connections
	path string
	// group commits the journal's intents and outcomes on w, many
	// callers' in one transaction when they arrive together.
	group committer

	// later counts the journal's writes that their callers did not wait
	// for (BeginLater's rows, EndLater's outcomes), which this DB's reads
	// and Close wait for.
	later store.Later
	// rows are the rows BeginLater queued that no commit has taken yet,
	// by intent id.
	rowsMu sync.Mutex
	rows   map[string]*queuedRow

	mu     sync.Mutex
	writer *writerLock     // taken by the first Begin
	log    *intentLog      // the writer's, made by the first Begin
	key    store.ChainKey  // the audit trail's, read by the first Append or Verify
	mark   store.ChainMark // the mark, beside the key, that the trail was chained
	closed bool
}

var _ store.Store = (*DB)(nil)

// Open opens the database at path, creating it (and its directory) if
// needed, and brings its schema up to date. It fails if the database cannot
// be read, or needs a schema change and cannot be written, or was written
// by a newer Airlock.
func Open(path string) (*DB, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, errors.New("open store: the database path must be a file name without ? or #")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := create(path); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	params := url.Values{
		"_busy_timeout": {fmt.Sprint(busyTimeout.Milliseconds())},
		"_txlock":       {"immediate"}, // take the write lock up front: no failed upgrade mid-transaction
		"_journal_mode": {"WAL"},
		"_synchronous":  {"FULL"},
	}
	w, err := sql.Open("sqlite", path+"?"+params.Encode())
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	w.SetMaxOpenConns(1)
	// The journal mode is persistent and was set by whoever created the
	// file; a reader that tried to set it again would need to write.
	params.Del("_journal_mode")
	params.Del("_txlock")
	params.Set("_query_only", "1")
	r, err := sql.Open("sqlite", path+"?"+params.Encode())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	r.SetMaxOpenConns(readers)
	db := &DB{w: w, r: r, path: path, group: committer{db: w, wal: path + "-wal", nudge: make(chan struct{}, 1)},
		rows: map[string]*queuedRow{}}
	if err := db.migrateRetrying(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	db.group.prepare(context.Background(), beginQuery, endQuery, endedQuery, insertOne, insertMany, saveRunQuery,
		headQuery, sqlrow.HeadQuery, sqlrow.LastLinkQuery)
	return db, nil
}

// migrateRetrying migrates, trying again while the database is busy: when
// several processes open a new file at once, the first connection's switch
// to WAL mode needs the file to itself, and SQLite answers a connection
// that meets it busy without waiting.
func (db *DB) migrateRetrying(ctx context.Context) error {
	deadline := time.Now().Add(busyTimeout)
	for {
		err := db.migrate(ctx)
		var coded interface{ Code() int }
		if err == nil || !errors.As(err, &coded) || coded.Code()&0xff != sqliteBusy || time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Duration(10+rand.IntN(40)) * time.Millisecond)
	}
}

// sqliteBusy is SQLite's primary result code SQLITE_BUSY.
const sqliteBusy = 5

// create makes an empty database file with mode 0600 if there is none:
// SQLite gives new files 0644, and its -wal and -shm files copy the mode of
// the database.
func create(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		return f.Close()
	case errors.Is(err, fs.ErrExist):
		return nil
	case errors.Is(err, fs.ErrPermission):
		return nil // SQLite says whether the directory can be read
	}
	return err
}

// Journal returns the write-ahead journal.
func (db *DB) Journal() store.Journal { return journal{db} }

// Approvals returns the approval requests.
func (db *DB) Approvals() store.Approvals { return approvals{db} }

// Audit returns the audit trail.
func (db *DB) Audit() store.Audit { return audit{db} }

// Close closes the database, once the rows BeginLater queued and the
// outcomes EndLater took are written.
// Intents this DB began and did not end become recoverable by RecoverOpen.
func (db *DB) Close() error {
	db.group.flush()
	db.later.Close()
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil
	}
	db.closed = true
	// The WAL is synced before the intent log goes: every row the log
	// stands for is then on disk.
	db.group.close(db.log != nil)
	if db.log != nil {
		if db.log.keep() {
			// The log stopped because it holds a record whose row the
			// database did not take (a call that may have been sent):
			// it is kept for the next start to put back (replayLogs).
			db.log.f.Close()
		} else {
			db.log.close()
		}
		db.log = nil
	}
	err := errors.Join(db.w.Close(), db.r.Close())
	if db.writer != nil {
		db.writer.release()
		db.writer = nil
	}
	return err
}

// writerID returns the id under which this DB begins intents, taking its
// writer lock the first time.
func (db *DB) writerID() (string, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.writerLocked()
}

// writerLocked is writerID for a caller that holds db.mu.
func (db *DB) writerLocked() (string, error) {
	if db.closed {
		return "", errors.New("the store is closed")
	}
	if db.writer == nil {
		l, err := lockWriter(db.writersDir(), store.NewID(""))
		if err != nil {
			return "", fmt.Errorf("cannot lock the journal: %w", err)
		}
		db.writer = l
	}
	return db.writer.id, nil
}

// awaitLater waits for the journal's writes that this DB's callers did not
// wait for (BeginLater, EndLater), committing them now if they linger: a
// read through this DB sees them.
func (db *DB) awaitLater() {
	db.group.flush()
	db.later.Wait()
}

// intentLog returns the id under which this DB begins intents and the
// log that makes them durable, making both the first time.
func (db *DB) intentLog() (string, *intentLog, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	id, err := db.writerLocked()
	if err != nil {
		return "", nil, err
	}
	if db.log == nil {
		l, err := createLog(db.writersDir(), id, db.group.cover, db.group.flush)
		if err != nil {
			return "", nil, fmt.Errorf("cannot make the journal's intent log: %w", err)
		}
		db.log = l
	}
	return id, db.log, nil
}

// ownWriter returns this DB's writer id, or "" if it has begun nothing.
func (db *DB) ownWriter() string {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.writer == nil {
		return ""
	}
	return db.writer.id
}

func (db *DB) writersDir() string { return db.path + "-writers" }

// settleGone settles, by settle, the rows of the table that open selects
// (a condition), of each of their writers but this DB's own that is gone,
// holding its lock file while it does (whileGone); it returns how many
// rows it settled in all.
func (db *DB) settleGone(ctx context.Context, table, open string, settle func(writer string) (int, error)) (int, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT DISTINCT writer FROM `+table+` WHERE `+open)
	if err != nil {
		return 0, fmt.Errorf("cannot read the %s: %w", table, err)
	}
	writers, err := scanAll(rows, func(row scanner) (string, error) {
		var w string
		err := row.Scan(&w)
		return w, err
	})
	if err != nil {
		return 0, fmt.Errorf("cannot read the %s: %w", table, err)
	}
	return sqlrow.SettleWriters(writers, db.ownWriter(), func(w string) (n int, err error) {
		_, err = db.whileGone(w, func() (err error) {
			n, err = settle(w)
			return err
		})
		return n, err
	})
}

// whileGone runs settle if writer is gone, holding its lock file while
// settle runs, and says whether it was.
func (db *DB) whileGone(writer string, settle func() error) (bool, error) {
	gone, done := writerGone(db.writersDir(), writer)
	if !gone {
		return false, nil
	}
	defer done()
	return true, settle()
}

// sweepWriters removes the lock files of writers that have gone with no
// intent open (a process that crashed between calls), so that they do not
// pile up.
func (db *DB) sweepWriters(own string) {
	ents, err := os.ReadDir(db.writersDir())
	if err != nil {
		return
	}
	for _, e := range ents {
		if id := e.Name(); id != own && writerIDRE.MatchString(id) {
			if gone, done := writerGone(db.writersDir(), id); gone {
				done()
			}
		}
	}
}

// isUnique reports whether err is a unique or primary key violation.
func isUnique(err error) bool {
	var se *msqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}

// A scanner is a row: *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// queryAll runs a query on q and returns every row, as scan reads it.
func queryAll[T any](ctx context.Context, q *sql.DB, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return scanAll(rows, scan)
}

// scanAll reads every row of rows, as scan reads it, nil for none, and
// closes rows.
func scanAll[T any](rows *sql.Rows, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// micros and fromMicros convert between times and what the database holds:
// microseconds since the Unix epoch, UTC.
func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(n int64) time.Time { return time.UnixMicro(n).UTC() }

// now is the current time as the store keeps it.
func now() time.Time { return store.UTC(time.Now()) }

// limit turns a filter's limit into SQLite's "no limit" (-1) when it is not
// positive.
func limit(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// inserted is sqlrow.Inserted for this driver's unique violations.
func inserted(err error, taken, failed string) error {
	return sqlrow.Inserted(err, isUnique(err), taken, failed)
}

// found is sqlrow.Found for this driver: no row is store.ErrNotFound.
func found(err error, missing, failed string) error {
	return sqlrow.Found(err, sql.ErrNoRows, missing, failed)
}
