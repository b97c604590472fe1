package airlock

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/airlockhq/airlock/store"
)

// auditLog writes the audit trail in the background, in order, so that a
// call never waits on the disk for it: the journal, not the audit trail, is
// what guarantees that no write is lost. Events queue up to a bound (past it
// a call waits) and are written in batches. Close writes what is queued.
type auditLog struct {
	dst     store.Audit
	log     *slog.Logger
	prepare func(*store.Event) // finishes an event on the writer, off the call's path
	queue   chan store.Event
	done    chan struct{}

	mu     sync.RWMutex // held to send, and to close the queue
	closed bool
}

const (
	auditQueue = 4096
	auditBatch = 512
	// auditLinger is how long the writer waits for more events before it
	// commits a batch: one sync per many calls instead of one per call.
	auditLinger = 200 * time.Millisecond
)

func newAuditLog(dst store.Audit, log *slog.Logger, prepare func(*store.Event)) *auditLog {
	a := &auditLog{dst: dst, log: log, prepare: prepare, queue: make(chan store.Event, auditQueue), done: make(chan struct{})}
	go a.run()
	return a
}

// append queues an event. After close (a call refused because the host is
// closing still reports its result) the event goes to the log instead.
func (a *auditLog) append(e store.Event) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		a.log.Info("audit event after close", "event", e.Event, "server", e.Server, "tool", e.Tool, "class", e.Class)
		return
	}
	a.queue <- e
}

func (a *auditLog) run() {
	defer close(a.done)
	batch := make([]store.Event, 0, auditBatch)
	for e := range a.queue {
		batch = append(batch[:0], e)
		// Take what else arrives within the linger, up to a batch.
		linger := time.NewTimer(auditLinger)
	more:
		for len(batch) < auditBatch {
			select {
			case e, ok := <-a.queue:
				if !ok {
					break more // closing: write what there is now
				}
				batch = append(batch, e)
			case <-linger.C:
				break more
			}
		}
		linger.Stop()
		a.write(batch)
	}
}

func (a *auditLog) write(batch []store.Event) {
	if a.prepare != nil {
		for i := range batch {
			a.prepare(&batch[i])
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.dst.Append(ctx, batch...); err != nil {
		a.log.Error("cannot write the audit trail", "events", len(batch), "error", err)
	}
}

// close writes the queued events, waiting at most d.
func (a *auditLog) close(d time.Duration) {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.queue)
	}
	a.mu.Unlock()
	select {
	case <-a.done:
	case <-time.After(d):
		a.log.Error("the audit trail was not written completely before closing")
	}
}
