package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// relaxedSync bounds how long an outcome committed without a flush of its
// own (journal.End) may stay off the disk.
const relaxedSync = 20 * time.Millisecond

// relaxedRetry is how long a flush that failed waits to be tried again.
const relaxedRetry = time.Second

// An outcomeFlusher keeps the promise that journal.End makes for the
// outcomes it commits asynchronously (synchronous_commit off, for that
// transaction only): each is on disk within relaxedSync. A synchronous
// commit flushes the WAL up to its own commit record, and with it every
// commit before it, so the next intent that commits (journal.Begin)
// covers the outcomes committed before it began; if none comes in time,
// the flusher commits a write of its own, synchronously: the last such
// outcome's row, touched without a change. A crash (of the server's
// machine: a killed process loses nothing the server committed) in that
// window loses outcomes only, never an intent: their calls read unknown,
// as calls whose answer never came, and are never sent again.
type outcomeFlusher struct {
	pool *pgxpool.Pool

	mu sync.Mutex
	// ended counts the outcomes committed asynchronously, of which the
	// first flushed are known to be on disk; last is the intent id of
	// the newest.
	ended, flushed uint64
	last           string
	armed, closed  bool
	timer          *time.Timer
}

// noteEnded notes an outcome of intent id committed asynchronously: it is
// flushed within relaxedSync.
func (f *outcomeFlusher) noteEnded(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ended++
	f.last = id
	f.arm(relaxedSync)
}

// arm schedules a flush in d, unless one is scheduled already. f.mu is held.
func (f *outcomeFlusher) arm(d time.Duration) {
	if f.armed || f.closed {
		return
	}
	f.armed = true
	if f.timer == nil {
		f.timer = time.AfterFunc(d, f.due)
	} else {
		f.timer.Reset(d)
	}
}

// mark returns how many outcomes were committed asynchronously so far: a
// synchronous commit that begins after mark covers them (covered).
func (f *outcomeFlusher) mark() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ended
}

// covered notes that the first n outcomes are on disk.
func (f *outcomeFlusher) covered(n uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushed = max(f.flushed, n)
}

func (f *outcomeFlusher) due() {
	f.mu.Lock()
	f.armed = false
	f.mu.Unlock()
	f.flush(context.Background())
}

// flush commits a write synchronously when outcomes may not be on disk
// yet. A write that fails is tried again after relaxedRetry (the next
// intent's commit may cover the outcomes first).
func (f *outcomeFlusher) flush(ctx context.Context) {
	f.mu.Lock()
	n, id := f.ended, f.last
	if f.flushed >= n {
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// The row that the newest outcome wrote, written again as it is: a
	// new row version, so WAL, so a commit that waits for its flush. A
	// row gone since was deleted by a commit of its own, after it.
	if _, err := f.pool.Exec(ctx, `UPDATE intents SET ended_at = ended_at WHERE id = $1`, id); err != nil {
		f.mu.Lock()
		f.arm(relaxedRetry)
		f.mu.Unlock()
		return
	}
	f.covered(n)
}

// close flushes what is not on disk yet and stops the timer, before the
// pool closes.
func (f *outcomeFlusher) close() {
	f.mu.Lock()
	f.closed = true
	if f.timer != nil {
		f.timer.Stop()
	}
	f.armed = false
	f.mu.Unlock()
	f.flush(context.Background())
}
