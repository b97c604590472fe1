// Package postgres is the store backend for several replicas of a host: one
// PostgreSQL database that every replica opens, through
// github.com/jackc/pgx/v5.
//
// Durability and concurrency:
//
//   - Every connection runs with synchronous_commit = on, whatever the
//     server's default: an intent is on the server's disk (and on its
//     synchronous standbys, if it has any) when Begin returns, and so is a
//     consumed grant.
//   - Every state change that must happen at most once (End, Resolve,
//     Decide, Consume, LateAnswer, a job's settling) is a single
//     conditional UPDATE; PostgreSQL lets only one of several racing
//     transactions, in any number of processes, find the row still in the
//     state it needs.
//   - Each DB that begins intents or creates jobs holds a session-level
//     advisory lock on a connection of its own, for as long as it is open,
//     keyed by its writer id, which every intent it begins and every job
//     it creates records. PostgreSQL drops the lock when that session
//     ends: the process exited or crashed, its machine went away, or Close
//     closed it. RecoverOpen ends the open intents of a writer only if it
//     can take that writer's lock, so intents in flight in a live replica
//     stay open. Begin writes an intent only while its own lock is held
//     (it checks pg_locks in the same statement), so an intent is never
//     recorded under a lock that is already gone. Jobs are created, and
//     settled as lost by RecoverJobs and Job, the same way.
//   - Appends to the audit trail are serialized by a transaction-level
//     advisory lock: each append reads the chain's newest link, links its
//     events and seals the new head in one transaction, so that every
//     replica extends one chain, and positions (Tail) grow in commit order.
//   - Leases (store.Leases: the places under max_concurrency and the
//     tenant cap that replicas share) are rows with an expiry that the
//     server's clock decides; one key's acquirers are serialized by a
//     transaction-level advisory lock, so a limit holds whatever number
//     of replicas race for it. The same session that holds the writer
//     lock holds a lock for each lease holder, so that the leases of a
//     holder whose session has ended are freed at once, not at expiry.
//   - The schema is versioned (the table schema_migrations); Open applies
//     what is missing under a transaction-level advisory lock, so replicas
//     starting together apply each migration once, and refuses a database
//     that a newer Airlock has written.
//
// The audit trail's key is not kept in the database: it is read from a file
// (see store.LoadChainKey) whose path Open is given, and made by the first
// Append if there is none. Every replica must be given the same key file
// (copy it to each machine, mode 0600): a replica with another key breaks
// the chain for all.
//
// Errors never hold the password: errors about the connection name the
// host, port and database, and a URL is shown with its password removed.
//
// The host and the CLI import postgres; everything else uses package store.
package postgres

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/internal/sqlrow"
)

// connectTimeout bounds each attempt to connect when the URL sets no
// connect_timeout: a host must not hang at start on a database that does
// not answer.
const connectTimeout = 10 * time.Second

// Options configure Open. The zero value is the default.
type Options struct {
	// Password is the database password, for a URL without one (the host
	// reads it from the environment variable store.password_env names).
	// Empty: the URL's, else PGPASSWORD or ~/.pgpass, as libpq does.
	Password string
	// MaxConns caps the connections of the pool queries run on; 0 is
	// pgxpool's default (the larger of 4 and the number of CPUs). A DB
	// that begins intents, creates jobs or takes leases holds one more, for
	// its locks.
	MaxConns int32
}

// A DB is a store in one PostgreSQL database. It is safe for concurrent use
// by several goroutines; several DBs, in one process or many, on one
// machine or many, may share a database.
type DB struct {
	pool    *pgxpool.Pool
	conn    *pgx.ConnConfig // what the writer lock's connection is opened with
	keyFile string
	flusher *outcomeFlusher // flushes the outcomes journal.End commits asynchronously
	// later writes the outcomes that EndLater took, which this DB's
	// reads and Close wait for.
	later store.Later

	mu     sync.Mutex
	sess   *session        // opened by the first Begin, Acquire or Renew
	key    store.ChainKey  // the audit trail's, read by the first Append or Verify
	mark   store.ChainMark // the mark, beside the key, that the trail was chained
	closed bool
}

var _ store.Store = (*DB)(nil)

// Open connects to the database at url (postgres://USER@HOST:PORT/DATABASE,
// or any connection string pgx accepts) and brings its schema up to date.
// keyFile is the path of the audit trail's key file, made by the first
// Append if there is none; every replica that shares the database must be
// given the same file. Open fails if the database cannot be reached, needs
// a schema change it cannot make, or was written by a newer Airlock.
func Open(ctx context.Context, url, keyFile string, opts *Options) (*DB, error) {
	if opts == nil {
		opts = &Options{}
	}
	if keyFile == "" {
		return nil, errors.New("open store: no audit key file given")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open store: %s is not a PostgreSQL URL (postgres://USER@HOST:PORT/DATABASE)", redactURL(url))
	}
	cc := cfg.ConnConfig
	if opts.Password != "" {
		cc.Password = opts.Password
	}
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = connectTimeout
	}
	// Never relaxed, whatever the server or the URL says.
	cc.RuntimeParams["synchronous_commit"] = "on"
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open store: %s", connectError(cc, err))
	}
	db := &DB{pool: pool, conn: cc, keyFile: keyFile, flusher: &outcomeFlusher{pool: pool}}
	if err := db.migrate(ctx); err != nil {
		pool.Close()
		var ce *pgconn.ConnectError
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("open store: %s", connectError(cc, err))
		}
		return nil, fmt.Errorf("open store: %w", err)
	}
	return db, nil
}

// connectError says which database could not be reached, and why, without
// the password: pgx names the user and database, never the password.
func connectError(cc *pgx.ConnConfig, err error) string {
	msg := err.Error()
	if cc.Password != "" {
		msg = strings.ReplaceAll(msg, cc.Password, "xxxxx")
	}
	return fmt.Sprintf("cannot connect to PostgreSQL at host %s port %d, database %q (is it running, and does the URL name it?): %s",
		cc.Host, cc.Port, cc.Database, msg)
}

// redactURL returns s with its password replaced by xxxxx, or a fixed text
// when s cannot be read as a URL (and so the password not be found in it).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		return "the store URL"
	}
	// password, and the passphrase of a client key (sslpassword): any
	// parameter that names a password, in any case.
	if q := u.Query(); len(q) > 0 {
		hidden := false
		for k := range q {
			if strings.Contains(strings.ToLower(k), "password") {
				q[k] = []string{"xxxxx"}
				hidden = true
			}
		}
		if hidden {
			u.RawQuery = q.Encode()
		}
	}
	return fmt.Sprintf("%q", u.Redacted())
}

// Journal returns the write-ahead journal.
func (db *DB) Journal() store.Journal { return journal{db} }

// Approvals returns the approval requests.
func (db *DB) Approvals() store.Approvals { return approvals{db} }

// Audit returns the audit trail.
func (db *DB) Audit() store.Audit { return audit{db} }

// ToolLists returns the cache of tool lists.
func (db *DB) ToolLists() store.ToolLists { return toolLists{db} }

// Close closes the database's connections. Intents this DB began and did
// not end become recoverable by RecoverOpen, in this process or another,
// and the leases of the holders it held locks for count as a dead
// process's: closing its session releases its locks.
func (db *DB) Close() error {
	db.later.Close()
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil
	}
	db.closed = true
	db.flusher.close()
	var err error
	if db.sess != nil {
		err = db.sess.release()
		db.sess = nil
	}
	db.pool.Close()
	return err
}

// A session is a connection of a DB's own on which it holds its
// session-level advisory locks: the writer lock of the intents it begins
// (taken by the first Begin) and the lock of each lease holder it acquires
// for (taken by the holder's first Acquire or Renew). PostgreSQL releases
// them all when the session ends: the process exited or crashed, its
// machine went away, or Close closed it. A DB whose session was lost while
// it lives opens a new one and takes its locks again before it writes
// under them: until then, its intents and leases count as a dead
// process's. Its connection is used only under the DB's mutex.
type session struct {
	conn    *pgx.Conn
	pid     uint32              // the backend process of conn, as pg_locks names it
	writer  int64               // the writer id intents record, and its lock's key; 0 until the first Begin
	holders map[string]struct{} // the lease holders whose lock it holds
}

// release unlocks the session's locks and ends it. Ending the session
// alone would release them too, but only once the server has read the
// goodbye, after Close has returned: a RecoverOpen or an Acquire right
// after might still find the locks held. A session already lost has
// nothing to unlock.
func (s *session) release() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
	return s.conn.Close(ctx)
}

// lockedSession returns the DB's session, opening it the first time, or a
// new one in place of stale (a session found lost). db.mu is held.
func (db *DB) lockedSession(ctx context.Context, stale *session) (*session, error) {
	if db.closed {
		return nil, errors.New("the store is closed")
	}
	if db.sess != nil && db.sess == stale {
		db.dropSession()
	}
	if db.sess != nil {
		return db.sess, nil
	}
	conn, err := pgx.ConnectConfig(ctx, db.conn)
	if err != nil {
		return nil, errors.New(connectError(db.conn, err))
	}
	// The session is idle for as long as its locks are uncontested: an
	// idle_session_timeout (PostgreSQL 14 and later; older servers refuse
	// the name) must not end it under a live process.
	if _, err := conn.Exec(ctx, `SET idle_session_timeout = 0`); err != nil && conn.IsClosed() {
		return nil, err
	}
	db.sess = &session{conn: conn, pid: conn.PgConn().PID(), holders: map[string]struct{}{}}
	return db.sess, nil
}

// dropSession ends the DB's session, whose connection failed: the next
// lock opens a new one. db.mu is held.
func (db *DB) dropSession() {
	db.sess.release()
	db.sess = nil
}

// lock returns the DB's session, or a new one in place of stale, with a
// lock taken by take unless take finds it already held. A session whose
// connection take finds closed (its backend ended since it was opened) is
// replaced, once.
func (db *DB) lock(ctx context.Context, stale *session, take func(*session) error) (*session, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	for try := 0; ; try++ {
		s, err := db.lockedSession(ctx, stale)
		if err != nil {
			return nil, err
		}
		err = take(s)
		if err == nil {
			return s, nil
		}
		if !s.conn.IsClosed() {
			return nil, err
		}
		db.dropSession()
		if try == 1 {
			return nil, err
		}
	}
}

// writerLock returns the session under which this DB begins intents, with
// its writer lock taken, on a new session in place of stale (one whose
// lock was found lost).
func (db *DB) writerLock(ctx context.Context, stale *session) (*session, error) {
	s, err := db.lock(ctx, stale, func(s *session) error {
		if s.writer != 0 {
			return nil
		}
		// A random key is taken at the first try but for a collision with
		// a live writer's, which try_lock reports instead of waiting for it.
		for range 3 {
			id := newWriterID()
			var ok bool
			if err := s.conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, id).Scan(&ok); err != nil {
				return err
			}
			if ok {
				s.writer = id
				return nil
			}
		}
		return errors.New("no free writer id")
	})
	if err != nil {
		return nil, fmt.Errorf("cannot lock the journal: %w", err)
	}
	return s, nil
}

// holderLock returns the session on which this DB holds holder's lock,
// taking it the first time, on a new session in place of stale (one whose
// lock was found lost). A holder's lock is shared: several DBs may hold
// one holder's, and a holder lives while any of them does.
func (db *DB) holderLock(ctx context.Context, holder string, stale *session) (*session, error) {
	s, err := db.lock(ctx, stale, func(s *session) error {
		if _, ok := s.holders[holder]; ok {
			return nil
		}
		var ok bool
		if err := s.conn.QueryRow(ctx, `SELECT pg_try_advisory_lock_shared($1, hashtext($2))`, lockHolders, holder).Scan(&ok); err != nil {
			return err
		}
		if !ok { // only a foreign session takes these locks exclusively
			return errors.New("another session holds its lock exclusively")
		}
		s.holders[holder] = struct{}{}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot lock lease holder %s: %w", holder, err)
	}
	return s, nil
}

// ownWriter returns this DB's writer id, or 0 if it has begun nothing.
func (db *DB) ownWriter() int64 {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.sess == nil {
		return 0
	}
	return db.sess.writer
}

// settleGone settles, by settle, the rows of the table that open selects
// (a condition), of each of their writers but this DB's own whose lock it
// can take, in a transaction that holds the lock (whileGone); it returns
// how many rows it settled in all.
func (db *DB) settleGone(ctx context.Context, table, open string, settle func(tx pgx.Tx, writer int64) (int, error)) (int, error) {
	rows, err := db.pool.Query(ctx, `SELECT DISTINCT writer FROM `+table+` WHERE `+open)
	if err != nil {
		return 0, fmt.Errorf("cannot read the %s: %w", table, err)
	}
	writers, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, fmt.Errorf("cannot read the %s: %w", table, err)
	}
	return sqlrow.SettleWriters(writers, db.ownWriter(), func(w int64) (n int, err error) {
		_, err = db.whileGone(ctx, w, func(tx pgx.Tx) (err error) {
			n, err = settle(tx, w)
			return err
		})
		return n, err
	})
}

// whileGone runs settle in a transaction that holds the lock of writer,
// if the lock is free, and says whether it was. A writer whose lock is
// free has no session left, and a new one never takes its id.
func (db *DB) whileGone(ctx context.Context, writer int64, settle func(pgx.Tx) error) (gone bool, err error) {
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, writer).Scan(&gone); err != nil || !gone {
			return err
		}
		return settle(tx)
	})
	return gone, err
}

// newWriterID returns a random non-zero writer id.
func newWriterID() int64 {
	for {
		var b [8]byte
		rand.Read(b[:]) // never fails (crypto/rand panics instead)
		if id := int64(binary.BigEndian.Uint64(b[:])); id != 0 {
			return id
		}
	}
}

// Advisory locks of the two-key form, in a space of Airlock's own: they
// never meet the writer locks, which use the one-key form.
const (
	lockSpace      = 0x61726c6b // "arlk"
	lockMigrations = 1
	lockAudit      = 2
	// lockSecrets is the space of the vault's locks, one per secret
	// (Vault.Lock).
	lockSecrets = 0x61736563 // "asec"
)

// advisoryLocks is the FROM and WHERE of a query of the advisory locks
// granted in this database, in pg_locks, to which the query adds the lock
// it looks for. A one-key lock on
// k shows as classid = k >> 32, objid = k & 0xffffffff, objsubid = 1; a
// two-key lock on (k1, k2) as classid = k1, objid = k2 (as unsigned 32-bit
// numbers), objsubid = 2.
const advisoryLocks = `FROM pg_locks WHERE locktype = 'advisory' AND granted
	AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`

// writerHeld is the condition that the writer lock on the key writer (a
// parameter, such as "$14") is held by the session whose backend process
// is pid (another): a session lost since it took the lock holds it no
// more.
func writerHeld(writer, pid string) string {
	return `EXISTS (SELECT 1 ` + advisoryLocks + ` AND pid = ` + pid + ` AND objsubid = 1
	AND classid::bigint = (` + writer + `::bigint >> 32) & 4294967295 AND objid::bigint = ` + writer + `::bigint & 4294967295)`
}

// lockReleaseTimeout bounds giving back a session-level lock.
const lockReleaseTimeout = 10 * time.Second

// lockHolders is the first key of the shared session-level locks of lease
// holders (leases.go); the second is hashtext of the holder. Two holders
// that share a hash share a lock: one lives, for Acquire, while the other
// does, and its places wait for their ttl.
const lockHolders = 0x61726c68 // "arlh"

// lockLeases is the first key of the advisory locks that serialize the
// acquirers of one lease key (leases.go); the second is the key's hash.
// It is a space of its own, so that no hash meets the locks above.
const lockLeases = 0x61726c73 // "arls"

// isUnique reports whether err is a unique or primary key violation.
func isUnique(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// utc returns a time the driver read as the store returns times: in UTC.
func utc(t time.Time) time.Time { return t.UTC() }

// inserted is sqlrow.Inserted for this driver's unique violations.
func inserted(err error, taken, failed string) error {
	return sqlrow.Inserted(err, isUnique(err), taken, failed)
}

// found is sqlrow.Found for this driver: no row is store.ErrNotFound.
func found(err error, missing, failed string) error {
	return sqlrow.Found(err, pgx.ErrNoRows, missing, failed)
}

// now is the current time as the store keeps it.
func now() time.Time { return store.UTC(time.Now()) }

// limit turns a filter's limit into PostgreSQL's "no limit" (NULL) when it
// is not positive.
func limit(n int) *int {
	if n <= 0 {
		return nil
	}
	return &n
}
