package store

import (
	"context"
	"sync"
)

// A LaterBeginner is a Journal that can also begin an intent whose record
// is written after the intent is durable: the host begins its calls' so,
// and sends a call once its intent is durable, while the record is being
// written.
type LaterBeginner interface {
	// BeginLater makes in durable as Begin does, and returns once it is,
	// or with the error that says it is not (the call must not be sent
	// then). Its record may be written after it returns: reads and End
	// through the same handle wait for it, and Close waits for it; other
	// handles may not find it until it is written. BeginLater does not
	// look for a taken id: in.ID must be new, one that NewID made for it.
	BeginLater(ctx context.Context, in Intent) error
}

// A LaterEnder is a Journal that can also record an outcome without its
// caller waiting for the write. The host ends a call's intent this way
// when the call's answer is known (succeeded or failed): the outcome need
// not be on disk before the caller sees the result, since a crash before
// it is written leaves the intent open, which recovery marks unknown and
// nothing ever sends again.
type LaterEnder interface {
	// EndLater records the outcome of the intent with the given id as End
	// does, but may return before it is written (a backend may hold it
	// for a few milliseconds, to write it with others). done, if not nil,
	// is called once with End's error, when that is known: before
	// EndLater returns, or on the goroutine that writes it, which done
	// must not hold up. Reads through the same handle (Get, Records,
	// Resolve, LateAnswer) wait for the outcomes EndLater took before
	// them, and Close waits for all of them.
	EndLater(id string, outcome Outcome, detail string, done func(error))
}

// Later counts writes whose callers do not wait for them, and lets a
// reader wait for those started before it: what a backend's BeginLater
// and EndLater need, so that a handle reads its own writes. The zero value
// is ready to use; it is safe for concurrent use.
type Later struct {
	mu      sync.Mutex
	settled sync.Cond       // broadcast when a write finishes
	next    uint64          // the ticket of the next write
	running map[uint64]bool // the tickets of the writes under way
	wg      sync.WaitGroup  // every write under way, for Close
	once    sync.Once
}

func (l *Later) init() {
	l.once.Do(func() {
		l.settled.L = &l.mu
		l.running = map[uint64]bool{}
	})
}

// Go runs write on a goroutine of its own and returns at once.
func (l *Later) Go(write func()) {
	done := l.Add()
	go func() {
		defer done()
		write()
	}()
}

// Add notes a write that has started elsewhere; the write calls done,
// once, when it has finished.
func (l *Later) Add() (done func()) {
	l.init()
	l.mu.Lock()
	t := l.next
	l.next++
	l.running[t] = true
	l.mu.Unlock()
	l.wg.Add(1)
	return func() {
		l.mu.Lock()
		delete(l.running, t)
		l.settled.Broadcast()
		l.mu.Unlock()
		l.wg.Done()
	}
}

// Wait returns once every write that Go or Add started before Wait was
// called has finished. Writes started meanwhile do not hold it up.
func (l *Later) Wait() {
	l.init()
	l.mu.Lock()
	defer l.mu.Unlock()
	before := l.next
	for l.runningBefore(before) {
		l.settled.Wait()
	}
}

func (l *Later) runningBefore(t uint64) bool {
	for r := range l.running {
		if r < t {
			return true
		}
	}
	return false
}

// Close waits for every write under way, whenever it started.
func (l *Later) Close() { l.wg.Wait() }
