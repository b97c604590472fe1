package audit

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/redact"
	"github.com/airlockhq/airlock/store"
)

// Options configures a Writer. The zero value works.
type Options struct {
	// Logger receives what cannot be written: batches the trail refused,
	// and events appended after Close. Nil discards them.
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
// each with one store.Audit.Append. Its methods are safe for concurrent
// use; Close stops its goroutine.
type Writer struct {
	dst   store.Audit
	log   *slog.Logger
	now   func() time.Time
	prep  preparer
	queue chan store.Event
	// full wakes the writer before its linger is over when a batch is
	// queued; it holds one wake-up at most. closing is closed with the
	// queue: the writer lingers no more.
	full    chan struct{}
	closing chan struct{}
	done    chan struct{}

	mu     sync.RWMutex // held to send, and to close the queue
	closed bool
}

const (
	queueLen = 4096
	batchLen = 512
	// linger is how long the writer waits for more events before it
	// writes a batch: one sync per many calls instead of one per call.
	linger = 200 * time.Millisecond
	// writeTimeout bounds the write of one batch.
	writeTimeout = 30 * time.Second
)

// New starts a Writer that writes to dst.
func New(dst store.Audit, opts *Options) *Writer {
	if opts == nil {
		opts = &Options{}
	}
	w := &Writer{dst: dst, log: opts.Logger, now: opts.Now, prep: newPreparer(opts),
		queue: make(chan store.Event, queueLen), full: make(chan struct{}, 1), closing: make(chan struct{}), done: make(chan struct{})}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if w.now == nil {
		w.now = time.Now
	}
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
		w.queue <- e
	}
	if len(w.queue) >= batchLen {
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

func (w *Writer) run() {
	defer close(w.done)
	batch := make([]store.Event, 0, batchLen)
	timer := time.NewTimer(linger)
	timer.Stop()
	for e := range w.queue {
		batch = append(batch[:0], e)
		// Take what else arrives within the linger, up to a batch. The
		// writer sleeps through it rather than waking for each event: a
		// full batch, or Close, wakes it early.
		if len(w.queue) < batchLen-1 {
			timer.Reset(linger)
			select {
			case <-timer.C:
			case <-w.full:
				timer.Stop()
			case <-w.closing:
				timer.Stop()
			}
		}
	more:
		for len(batch) < batchLen {
			select {
			case e, ok := <-w.queue:
				if !ok {
					break more // closing: write what there is now
				}
				batch = append(batch, e)
			default:
				break more
			}
		}
		w.write(batch)
	}
}

func (w *Writer) write(batch []store.Event) {
	for i := range batch {
		w.prep.prepare(&batch[i])
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := w.dst.Append(ctx, batch...); err != nil {
		w.log.Error("cannot write the audit trail", "events", len(batch), "error", err)
	}
}

// errNotWritten reports that Close returned before every queued event was
// written.
var errNotWritten = errors.New("the audit trail was not written completely before closing")

// Close stops taking events and writes those queued. It returns nil when
// they are written, or an error when ctx ends first (the last batches are
// then still written in the background). Close is idempotent.
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
		return nil
	case <-ctx.Done():
		return errNotWritten
	}
}
