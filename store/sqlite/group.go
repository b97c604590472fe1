package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io/fs"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A committer commits the journal's writes (its rows and outcomes) in
// groups: the writes that arrive while one group commits are committed
// together, in one transaction, by the first of them to arrive. A write
// whose caller waits (do) and that finds nothing committing is committed
// at once, alone; its caller returns only once it is committed (or has
// failed). A write nobody waits for (doLater) lingers up to laterLinger
// for more, unless a waiting write or a read (flush) comes first; once one
// is due, what is due is committed, and intents' rows that wait for their
// outcomes (up to rowLinger) stay queued.
//
// The caller at the head of the queue commits the group, then hands the
// queue to the next waiting caller; writes nobody waits for are committed
// by a goroutine of their own (linger), which ends once the queue is
// empty or a caller waits at its head.
//
// A group is committed with synchronous=NORMAL: to the WAL, without an
// fsync, which a killed process does not lose. The committer syncs the
// WAL within relaxedSync of a commit (or sooner, when a commit of the
// DB's other writes, which are synced, does it first), and at once when
// the intent log asks it to (cover). A crash may take the last rows: those
// still queued, or, on a power loss, those not synced yet. An outcome so
// lost leaves its intent open, read as unknown and never sent again; an
// intent's row is put back from the intent log, which is written before
// its call is sent (intentlog.go).
type committer struct {
	db  *sql.DB // the DB's one write connection
	wal string  // the path of the database's WAL file

	mu    sync.Mutex
	busy  bool       // a group is committing
	queue []*pending // writes waiting for the next group, in order
	// unsynced is set by a relaxed group's commit and cleared by a
	// durable one's, or by syncWAL; armed says syncWAL is due.
	unsynced, armed bool
	// lingering says a goroutine waits to commit writes nobody waits for
	// (linger), which nudge, holding one wake-up at most, ends early.
	lingering bool
	nudge     chan struct{}
	// hurry, set by a flush while a group commits, ends the next linger
	// before it begins.
	hurry bool
	// carried is set by a relaxed commit that the next intent must carry
	// to the disk (carry), and cleared, as unsynced is, by cover.
	carried bool
	timer   *time.Timer
	closed  bool
	// stmts are the statements writes run (the journal's, and the audit
	// trail's inserts), prepared once (prepare): to prepare a statement
	// costs more than to run it, and there is one connection to write on.
	// Written only by prepare, before any write.
	stmts map[string]*sql.Stmt
}

// A pending write waits in the queue for its group's commit.
type pending struct {
	apply func(ctx context.Context, tx *sql.Tx) error
	err   error         // the write's outcome, set before done is closed
	done  chan struct{} // closed when the write is committed or has failed
	lead  chan struct{} // told when this write is to commit the next group; nil for a later one
	// later, for a write nobody waits for (doLater), is told the write's
	// outcome once it is known.
	later func(error)
	// due, for a write nobody waits for, is when it must be committed at
	// the latest (UnixNano): a linger ends then (soon brings it nearer).
	due atomic.Int64
}

const (
	// maxGroup bounds the writes of one transaction.
	maxGroup = 512
	// groupTimeout bounds the commit of one group: it may wait for
	// another process's write for up to busyTimeout.
	groupTimeout = 3 * busyTimeout
	// relaxedSync bounds how long a relaxed write stays unsynced once
	// committed.
	relaxedSync = 10 * time.Millisecond
)

// prepare prepares queries on db, for exec. A statement that cannot be
// prepared (a database that cannot be written may refuse) is run
// unprepared, and fails then if it must.
func (c *committer) prepare(ctx context.Context, queries ...string) {
	c.stmts = map[string]*sql.Stmt{}
	for _, q := range queries {
		if st, err := c.db.PrepareContext(ctx, q); err == nil {
			c.stmts[q] = st
		}
	}
}

// exec runs query, a statement of a write, in the group's transaction tx.
func (c *committer) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := c.stmts[query]; st != nil {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// queryRow runs query, a query of one row, in tx, prepared if prepare did.
func (c *committer) queryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if st := c.stmts[query]; st != nil {
		return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// close syncs what relaxed writes left unsynced (all of the WAL when
// full: an intent log is about to be removed) and closes the prepared
// statements, before the DB's connection.
func (c *committer) close(full bool) {
	c.mu.Lock()
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
	}
	c.armed = false
	c.mu.Unlock()
	if full {
		c.cover()
	} else {
		c.syncWAL()
	}
	for _, st := range c.stmts {
		st.Close()
	}
}

// relaxedCommitted notes a relaxed group's commit: the WAL is synced
// within relaxedSync, unless a durable group does it first.
func (c *committer) relaxedCommitted() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unsynced = true
	if c.armed || c.closed {
		return
	}
	c.armed = true
	if c.timer == nil {
		c.timer = time.AfterFunc(relaxedSync, c.syncDue)
	} else {
		c.timer.Reset(relaxedSync)
	}
}

func (c *committer) syncDue() {
	c.mu.Lock()
	c.armed = false
	c.mu.Unlock()
	c.syncWAL()
}

// syncWAL syncs the WAL file when a relaxed commit left it unsynced.
func (c *committer) syncWAL() {
	c.mu.Lock()
	unsynced := c.unsynced
	c.mu.Unlock()
	if unsynced {
		c.cover()
	}
}

// cover syncs the WAL file, whatever the commits before left unsynced:
// once it returns nil, every transaction committed before it was called
// is on disk. A WAL that is gone was checkpointed into the database,
// which SQLite synced.
func (c *committer) cover() error {
	c.mu.Lock()
	c.unsynced, c.carried = false, false
	c.mu.Unlock()
	f, err := os.OpenFile(c.wal, os.O_RDWR, 0)
	if err == nil {
		err = f.Sync()
		f.Close()
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		// Tried again by the next relaxed commit, or made good by the
		// next synced one.
		c.mu.Lock()
		c.unsynced, c.carried = true, true
		c.mu.Unlock()
	}
	return err
}

// carry notes a relaxed commit just made that the next intent must carry
// to the disk: Begin syncs the WAL (cover) before it returns while one is
// unsynced.
func (c *committer) carry() {
	c.mu.Lock()
	c.carried = true
	c.mu.Unlock()
}

// carrying reports whether a relaxed commit that the next intent must
// carry is unsynced.
func (c *committer) carrying() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.carried
}

// A refusal is an error of one write that the database refused on its
// own (a unique id taken), leaving the group's transaction whole: the
// other writes of the group go on. Any other error fails the group.
type refusal struct{ error }

func (r refusal) Unwrap() error { return r.error }

// do commits apply, in a group, and returns its error: the refusal's
// error for a write refused alone, or the group's when the transaction
// could not be written. apply runs inside the group's transaction and must
// touch only its own rows.
func (c *committer) do(apply func(ctx context.Context, tx *sql.Tx) error) error {
	return c.enqueue(&pending{apply: apply})
}

// doLater is do for a write its caller does not wait for: it is queued
// at once, behind every write queued before it and ahead of every write
// queued after it, and done is told its outcome once it is committed (or
// has failed), on the goroutine that commits it, which must not wait for
// done. With nothing committing, a goroutine of its own commits it, after
// a linger.
func (c *committer) doLater(apply func(ctx context.Context, tx *sql.Tx) error, done func(error)) {
	c.queueLater(newLater(apply, done, laterLinger))
}

// newLater makes a write for queueLater that may wait up to within.
func newLater(apply func(ctx context.Context, tx *sql.Tx) error, done func(error), within time.Duration) *pending {
	p := &pending{apply: apply, done: make(chan struct{}), later: done}
	p.due.Store(time.Now().Add(within).UnixNano())
	return p
}

// soon brings a write's commit, queued by queueLater, to within
// laterLinger from now, if it was due later.
func (p *pending) soon() {
	due := time.Now().Add(laterLinger).UnixNano()
	for {
		was := p.due.Load()
		if was <= due || p.due.CompareAndSwap(was, due) {
			return
		}
	}
}

// queueLater queues p, a write nobody waits for, as doLater does.
func (c *committer) queueLater(p *pending) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queue = append(c.queue, p)
	if !c.busy {
		c.busy = true
		c.lingering = true
		go c.linger()
	}
}

// laterLinger is how long writes nobody waits for (an outcome that
// EndLater queues) may wait for more before they are committed, unless a
// waiting write, or a read, comes first: the writes of many calls share a
// transaction. With relaxedSync after it, an outcome is on disk within
// 20 ms.
const laterLinger = 10 * time.Millisecond

// rowLinger is how long the row of an intent that BeginLater made durable
// in its log may wait, unless its outcome comes first (then laterLinger
// from then): a call that is answered within it has its row and outcome
// written in one INSERT, where there would be an INSERT and an UPDATE.
// Another process sees an intent in flight up to rowLinger late. A
// variable for the package's tests only.
var rowLinger = 100 * time.Millisecond

// flush ends a linger now, if one is under way, and the next one before
// it begins if a group is committing: what is queued is committed without
// waiting for more.
func (c *committer) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hurry = c.busy
	if c.lingering {
		select {
		case c.nudge <- struct{}{}:
		default: // nudged already
		}
	}
}

// linger waits until a queued write is due, or a waiting write is queued
// (nudge), then commits what is queued. It looks again at least every
// laterLinger, for writes that soon made due sooner.
func (c *committer) linger() {
	t := time.NewTimer(laterLinger)
	defer t.Stop()
	all := false // all that is queued, or what is due
	for !all {
		c.mu.Lock()
		wait := time.Until(time.Unix(0, c.firstDue()))
		all = c.hurry
		c.mu.Unlock()
		if all || wait <= 0 {
			break
		}
		t.Reset(min(wait, laterLinger))
		select {
		case <-t.C:
		case <-c.nudge:
			all = true
		}
	}
	c.mu.Lock()
	c.lingering, c.hurry = false, false
	c.mu.Unlock()
	c.lead(all)
}

// firstDue is when the first queued write is due (UnixNano): at once (0)
// for a write its caller waits for. c.mu is held.
func (c *committer) firstDue() int64 {
	first := int64(math.MaxInt64)
	for _, p := range c.queue {
		first = min(first, p.due.Load())
	}
	return first
}

func (c *committer) enqueue(p *pending) error {
	p.done, p.lead = make(chan struct{}), make(chan struct{}, 1)
	c.mu.Lock()
	c.queue = append(c.queue, p)
	if c.busy {
		c.mu.Unlock()
		c.flush() // p waits: end a linger
		select {
		case <-p.done:
			return p.err
		case <-p.lead:
		}
	} else {
		c.busy = true
		c.mu.Unlock()
	}
	// p is at the head of the queue.
	c.lead(true)
	return p.err
}

// lead takes a group from the queue, commits it, and hands the queue to
// the next write that arrived meanwhile: to its waiting caller, or, for a
// write nobody waits for, to a goroutine of its own. The group is the head
// of the queue with all, or else the writes that are due, or nearly.
func (c *committer) lead(all bool) {
	c.mu.Lock()
	group := c.take(all)
	cut := all && len(c.queue) > 0 // by maxGroup
	c.mu.Unlock()
	c.commit(group)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case len(c.queue) == 0:
		c.busy = false
		c.queue = nil // let the backing array go
	case c.queue[0].lead != nil:
		c.queue[0].lead <- struct{}{}
	case slices.ContainsFunc(c.queue, func(p *pending) bool { return p.lead != nil }):
		go c.lead(true) // a caller waits behind them
	default:
		// What maxGroup left of all that was asked for goes on at once.
		c.hurry = c.hurry || cut
		c.lingering = true
		go c.linger()
	}
}

// take takes a group from the queue: its head with all; else the writes
// due within half a laterLinger, in their order, leaving the others (rows
// waiting for their outcomes) queued. Writes that are not due do not
// depend on one another: the outcome of a queued row is written with it
// (queuedRow). c.mu is held.
func (c *committer) take(all bool) []*pending {
	if all {
		n := min(len(c.queue), maxGroup)
		group := c.queue[:n:n]
		c.queue = c.queue[n:]
		return group
	}
	soon := time.Now().Add(laterLinger / 2).UnixNano()
	var group, rest []*pending
	for _, p := range c.queue {
		if len(group) < maxGroup && p.due.Load() <= soon {
			group = append(group, p)
		} else {
			rest = append(rest, p)
		}
	}
	c.queue = rest
	return group
}

// commit writes a group in one transaction and tells each write how it
// went. A failure other than a refusal fails every write of the group:
// nothing of it was committed.
func (c *committer) commit(group []*pending) {
	defer func() {
		for _, p := range group {
			close(p.done)
			if p.later != nil {
				p.later(p.err)
			}
		}
	}()
	fail := func(err error) {
		for _, p := range group {
			p.err = err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	conn, relaxed, done, err := c.writeConn(ctx)
	if err != nil {
		fail(err)
		return
	}
	defer done()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		fail(err)
		return
	}
	for _, p := range group {
		err := p.apply(ctx, tx)
		var r refusal
		if errors.As(err, &r) {
			p.err = r.error
			continue
		}
		if err != nil {
			tx.Rollback()
			fail(err)
			return
		}
	}
	if err := tx.Commit(); err != nil {
		fail(err)
		return
	}
	c.committed(relaxed)
}

// writeConn takes the write connection for one transaction, which done
// gives back, set to commit without a sync (synchronous = NORMAL, set back
// by done); relaxed says whether it is (a PRAGMA that fails leaves the
// commit synced).
func (c *committer) writeConn(ctx context.Context) (conn *sql.Conn, relaxed bool, done func(), err error) {
	if conn, err = c.db.Conn(ctx); err != nil {
		return nil, false, nil, err
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = NORMAL`); err != nil {
		return conn, false, func() { conn.Close() }, nil // committed with the sync, then
	}
	return conn, true, func() {
		if _, err := conn.ExecContext(context.Background(), `PRAGMA synchronous = FULL`); err != nil {
			conn.Raw(func(any) error { return driver.ErrBadConn }) // never reused relaxed
		}
		conn.Close()
	}, nil
}

// committed notes a commit: a relaxed one's WAL is synced within
// relaxedSync, unless a durable commit does it first; a durable one's sync
// covers the WAL before it.
func (c *committer) committed(relaxed bool) {
	if relaxed {
		c.relaxedCommitted()
		return
	}
	c.mu.Lock()
	c.unsynced = false
	c.mu.Unlock()
}

// relaxedTx runs fn in a transaction of its own on the write connection,
// outside the groups, committed as a relaxed group is: to the WAL without
// a sync of its own. For writes that need none and are not the journal's:
// the audit trail's batches, which a killed process does not lose once
// they are in the WAL, and which a power loss may cost relaxedSync of.
func (c *committer) relaxedTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	conn, relaxed, done, err := c.writeConn(ctx)
	if err != nil {
		return err
	}
	defer done()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	c.committed(relaxed)
	return nil
}
