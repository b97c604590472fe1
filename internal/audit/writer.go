package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock/internal/redact"
	"github.com/airlockhq/airlock/store"
)

// Options configures a Writer. The zero value works.
type Options struct {
	// Logger receives what cannot be written: that the trail refuses
	// batches (the events are held and written again, see Writer), events
	// dropped because too many were held, events the trail refuses
	// outright, what was left when Close gave up, and events appended after
	// Close. Nil discards them.
	Logger *slog.Logger
	// Redactor redacts the fields that may carry secrets. Nil redacts the
	// built-in credential formats only.
	Redactor *redact.Redactor
	// RecordValues lists the tools (local names) whose argument and result
	// values are kept, redacted, beside their shape and hash; ["*"] is
	// every tool. It is audit.record_values of the configuration.
	RecordValues []string
	// Now stamps events that have no time. Nil is time.Now.
	Now func() time.Time
}

// A Writer writes events to a trail in the background, in order. Events
// queue up to a bound (past it Append waits) and are written in batches,
// each with one store.Audit.Append. A batch is written 200 ms after its
// first event was appended, or as soon as 100 events wait, whichever
// comes first, and Append waits when 100 more are queued behind a write:
// a process killed outright loses at most that. Its methods are safe for
// concurrent use; Close writes what is queued and stops its goroutine.
//
// A batch the trail refuses (its database is down) is held and written
// again, after a pause that grows from 100 ms to 5 s (jittered), before
// any newer event: the trail keeps the order in which events were
// appended, and its chain links them in that order. The events that arrive
// meanwhile are held behind it, up to 20,000 events in all; past that the
// oldest are dropped, and the log says how many. An event that every trail
// refuses (store.StoreEvent) is dropped and logged, so that it cannot hold
// up the rest.
//
// A trail that wraps another (Unwrap() store.Audit), to send each event
// elsewhere as well, is given each event once: a batch written again goes
// to the trail it wraps.
type Writer struct {
	dst   store.Audit
	again store.Audit // where a batch goes the second time: dst, or the trail dst wraps
	log   *slog.Logger
	now   func() time.Time
	prep  preparer
	queue chan store.Event
	// full wakes the writer before its linger is over when flushAt events
	// are queued; it holds one wake-up at most. closing is closed with the
	// queue: the writer lingers no more. abandon is closed when a Close
	// gives up waiting: the writer stops writing again what fails.
	full        chan struct{}
	closing     chan struct{}
	abandon     chan struct{}
	abandonOnce sync.Once
	done        chan struct{}
	lost        bool // the writer dropped what was left when Close gave up; read after done
	// pending counts the events appended and not yet written or dropped.
	pending atomic.Int64

	mu     sync.RWMutex // held to send, and to close the queue
	closed bool

	// The writer's goroutine alone uses the rest.
	in    <-chan store.Event // the queue; nil once it is closed and drained
	timer *time.Timer        // the linger
	held  backlog
}

// wrapper is a trail that sends events on to another, Unwrap's.
type wrapper interface {
	Unwrap() store.Audit
}

// What a process killed outright (kill -9, a crash, power loss) leaves
// unwritten is bounded: while the trail keeps up, the events of the last
// linger (and of the write under way), or flushAt events, whichever is
// less; when events come faster than the trail takes them, Append waits
// once queueLen are queued behind the batch being written, so that no
// more than batchLen + queueLen are ever unwritten, a few milliseconds of
// events at that rate. (While the trail is down, the backlog holds more:
// see Writer.)
const (
	queueLen = 100
	batchLen = 100
	// flushAt is how many events waiting end the linger.
	flushAt = 100
	// writeTimeout bounds the write of one batch.
	writeTimeout = 30 * time.Second
)

// linger is how long the writer waits for more events before it writes a
// batch: one sync per many calls instead of one per call. A variable for
// the package's tests only.
var linger = 200 * time.Millisecond

// New starts a Writer that writes to dst.
func New(dst store.Audit, opts *Options) *Writer {
	if opts == nil {
		opts = &Options{}
	}
	w := &Writer{dst: dst, again: dst, log: opts.Logger, now: opts.Now, prep: newPreparer(opts),
		queue: make(chan store.Event, queueLen), full: make(chan struct{}, 1), closing: make(chan struct{}),
		abandon: make(chan struct{}), done: make(chan struct{})}
	if u, ok := dst.(wrapper); ok {
		w.again = u.Unwrap()
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if w.now == nil {
		w.now = time.Now
	}
	w.in = w.queue
	w.timer = time.NewTimer(linger)
	w.timer.Stop()
	w.held = backlog{log: w.log, pending: &w.pending, events: make([]store.Event, 0, batchLen)}
	go w.run()
	return w
}

// Append stamps the events that have no time with the current time and
// queues them, in order. The writer takes their Fields maps, and the values
// put in with Record: the caller must not use them afterwards. Append never
// fails: the trail's errors go to the Logger, and so do events appended
// after Close (a call refused because the host is closing still reports
// its result). It does not give up when ctx ends: an event is written even
// if the call that made it was cancelled.
func (w *Writer) Append(ctx context.Context, events ...store.Event) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	for _, e := range events {
		if w.closed {
			w.log.Info("audit event after close", "event", e.Event, "server", e.Server, "tool", e.Tool, "class", e.Class)
			continue
		}
		if e.Time.IsZero() {
			e.Time = w.now()
		}
		w.pending.Add(1)
		w.queue <- e
	}
	if w.pending.Load() >= flushAt {
		w.wake()
	}
}

// wake ends the writer's linger, if it lingers.
func (w *Writer) wake() {
	select {
	case w.full <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// run writes what is queued, oldest first, until the queue is closed and
// everything is written, or until a Close gives up and a write fails.
func (w *Writer) run() {
	defer close(w.done)
	var pause time.Duration
	for {
		if w.held.empty() && !w.gather() {
			return
		}

		// Write the oldest held events. What fails stays held; events the
		// trail refuses outright leave, and the rest is tried at once.
		refused, err := w.write()
		if err == nil {
			pause = 0
			w.held.recovered()
			if !w.held.empty() {
				w.take(-1) // take the queue in behind them, so that Append does not wait
			}
			continue
		}
		if refused {
			continue
		}
		w.held.failed(err)

		// Wait before writing again, holding the events that arrive,
		// unless a Close has given up.
		pause = nextPause(pause)
		if !w.wait(jitter(pause)) {
			w.lost = true
			w.held.abandon(len(w.in))
			return
		}
	}
}

// gather waits for an event, then for more within the linger, and holds
// them, up to a batch. It returns false when the queue is closed and
// empty.
func (w *Writer) gather() bool {
	if w.in == nil {
		return false
	}
	e, ok := <-w.in
	if !ok {
		w.in = nil
		return false
	}
	w.hold(e)
	// Take what else arrives within the linger, up to a batch. The
	// writer sleeps through it rather than waking for each event:
	// flushAt events, or Close, wake it early.
	if len(w.in) < flushAt-1 {
		w.timer.Reset(linger)
		select {
		case <-w.timer.C:
		case <-w.full:
			w.timer.Stop()
		case <-w.closing:
			w.timer.Stop()
		}
	}
	w.take(batchLen - w.held.len())
	return true
}

// take holds up to n queued events (n < 0: all), without waiting for
// more.
func (w *Writer) take(n int) {
	for ; n != 0 && w.in != nil; n-- {
		select {
		case e, ok := <-w.in:
			if !ok {
				w.in = nil // closing: write what there is now
				return
			}
			w.hold(e)
		default:
			return
		}
	}
}

// hold prepares e and holds it for writing.
func (w *Writer) hold(e store.Event) {
	w.prep.prepare(&e)
	w.held.add(e)
}

// write writes the oldest held events, at most a batch: first those given
// to dst already, by a write that failed, to where a batch goes again, then
// the others to dst. refused is true when the write failed and the trail
// refuses some of its events outright (store.StoreEvent): they are dropped.
func (w *Writer) write() (refused bool, err error) {
	batch, dst := w.held.next(batchLen), w.dst
	if w.held.tried > 0 {
		dst = w.again
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := dst.Append(ctx, batch...); err != nil {
		return w.held.refuse(len(batch)) > 0, err
	}
	w.held.written(len(batch))
	return false, nil
}

// wait waits for d, holding the events that arrive meanwhile. It returns
// false when a Close gives up first.
func (w *Writer) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return true
		case <-w.abandon:
			return false
		case e, ok := <-w.in:
			if !ok {
				w.in = nil
				continue
			}
			w.hold(e)
		}
	}
}

// errNotWritten reports that Close returned before every queued event was
// written.
var errNotWritten = errors.New("the audit trail was not written completely before closing")

// Close stops taking events and writes those queued and held, writing
// again what fails. It returns nil when they are written, or an error when
// ctx ends first. The batch being written then finishes in the background,
// and so do the next ones while the trail takes them; once one fails, the
// writer stops and logs how many events it leaves unwritten. Close is
// idempotent.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.queue)
		close(w.closing)
	}
	w.mu.Unlock()
	select {
	case <-w.done:
		if w.lost {
			return errNotWritten
		}
		return nil
	case <-ctx.Done():
		w.abandonOnce.Do(func() { close(w.abandon) })
		return fmt.Errorf("%w (%d events left)", errNotWritten, w.pending.Load())
	}
}
