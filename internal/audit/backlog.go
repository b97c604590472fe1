package audit

import (
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock/store"
)

const (
	// maxHeld bounds the events a writer holds while its trail cannot be
	// written. The event the host writes for most calls takes about three
	// kilobytes held (more with audit.record_values): the bound keeps an
	// outage to some 60 megabytes, and covers a few minutes of a replica
	// making a hundred calls a second, time for a database to restart or
	// fail over.
	maxHeld = 20_000
	// firstPause and maxPause bound the pause before a failed batch is
	// written again: short enough to notice a restarted database at once,
	// long enough not to hammer one that is down.
	firstPause = 100 * time.Millisecond
	maxPause   = 5 * time.Second
	// reportEvery spaces the log lines of a long outage.
	reportEvery = time.Minute
)

// nextPause returns the pause after prev (0 before the first): twice as
// long, from firstPause up to maxPause.
func nextPause(prev time.Duration) time.Duration {
	return min(max(2*prev, firstPause), maxPause)
}

// jitter returns d less up to half of it at random, so that the replicas
// that lost one database do not all write again at the same moment.
func jitter(d time.Duration) time.Duration {
	return d - rand.N(d/2)
}

// A backlog holds the events a writer has taken from its queue and not
// written yet, oldest first, up to maxHeld, and reports to the log what
// it drops and how the trail fails and recovers. The writer's goroutine
// alone uses it.
type backlog struct {
	log     *slog.Logger
	pending *atomic.Int64 // the writer's count of events appended and not yet written or dropped
	events  []store.Event
	// tried is how many of the oldest events a write that failed gave to
	// the trail already.
	tried int

	dropped   int       // events dropped and not reported yet
	droppedAt time.Time // when dropped events were last reported
	failures  int       // writes failed in a row
	failedAt  time.Time // when the failures were last reported; zero while the trail takes writes
}

func (b *backlog) empty() bool { return len(b.events) == 0 }
func (b *backlog) len() int    { return len(b.events) }

// add holds e, after the others. Past maxHeld the oldest are dropped:
// reported at once, then at most once per reportEvery.
func (b *backlog) add(e store.Event) {
	b.events = append(b.events, e)
	over := len(b.events) - maxHeld
	if over <= 0 {
		return
	}
	clear(b.events[:over])
	b.events = b.events[over:]
	b.tried = max(0, b.tried-over)
	b.pending.Add(int64(-over))
	b.dropped += over
	if time.Since(b.droppedAt) >= reportEvery {
		b.reportDropped()
	}
}

// next returns the events to write next, at most n: the oldest, and of
// those a write gave to the trail already, only those.
func (b *backlog) next(n int) []store.Event {
	if b.tried > 0 {
		n = min(n, b.tried)
	}
	return b.events[:min(n, len(b.events))]
}

// written lets go of the n oldest events, which the trail has taken.
func (b *backlog) written(n int) {
	clear(b.events[:n])
	if n == len(b.events) {
		b.events = b.events[:0] // the same array, for the next batch
	} else {
		b.events = b.events[n:]
	}
	b.tried = max(0, b.tried-n)
	b.pending.Add(int64(-n))
}

// refuse notes that a write of the n oldest events failed, and drops
// those that every trail refuses (store.StoreEvent), which would fail
// every write again. It returns how many it dropped.
func (b *backlog) refuse(n int) int {
	b.tried = max(b.tried, n)
	now := time.Now()
	kept := b.events[:0]
	for _, e := range b.events[:n] {
		if _, err := store.StoreEvent(e, now); err != nil {
			b.log.Error("cannot write the audit trail: it refuses an event, which is dropped", "event", e.Event, "server", e.Server, "tool", e.Tool, "error", err)
			continue
		}
		kept = append(kept, e)
	}
	refused := n - len(kept)
	if refused > 0 {
		rest := copy(b.events[len(kept):], b.events[n:])
		clear(b.events[len(kept)+rest:])
		b.events = b.events[:len(kept)+rest]
		b.tried -= refused
		b.pending.Add(int64(-refused))
	}
	return refused
}

// failed reports that a write failed with err: at once, then at most once
// per reportEvery while the trail keeps failing.
func (b *backlog) failed(err error) {
	b.failures++
	if !b.failedAt.IsZero() && time.Since(b.failedAt) < reportEvery {
		return
	}
	b.log.Error("cannot write the audit trail; its events are held and written again when it takes them",
		"held", len(b.events), "failed_writes", b.failures, "error", err)
	b.failedAt = time.Now()
	b.reportDropped()
}

// recovered notes that a write succeeded, and reports it if writes had
// failed.
func (b *backlog) recovered() {
	if b.failures > 0 {
		b.log.Info("the audit trail is written again", "held", len(b.events), "failed_writes", b.failures)
		b.failures, b.failedAt = 0, time.Time{}
	}
	b.reportDropped()
}

// reportDropped logs how many events were dropped since the last report,
// if any were.
func (b *backlog) reportDropped() {
	if b.dropped == 0 {
		return
	}
	b.log.Error("audit events dropped: too many were held while the audit trail could not be written",
		"events", b.dropped, "max_held", maxHeld)
	b.dropped, b.droppedAt = 0, time.Now()
}

// abandon reports the events left when the writer stops without writing
// them: those held, and queued more.
func (b *backlog) abandon(queued int) {
	b.reportDropped()
	b.log.Error("audit events not written before closing: the audit trail cannot be written", "events", len(b.events)+queued)
}
