package main

import (
	"sync"
	"sync/atomic"
	"time"
)

// workers runs functions on goroutines that it keeps for a while once
// they are done, rather than on a new goroutine each. A call grows its
// goroutine's stack to tens of KiB on its way through the pipeline and
// the encoding of its reply, while a new goroutine starts with a small
// one: growing it again, copy by copy, took 7% of the shell's CPU with
// reads one at a time, and on each call's own time.
type workers struct {
	mu      sync.Mutex
	jobs    chan func() // what an idle worker takes; made on first use
	pending sync.WaitGroup
	idle    atomic.Int32 // workers waiting for a function
}

const (
	// workerIdle is how long a worker waits for another function before
	// it ends.
	workerIdle = 30 * time.Second
	// maxIdleWorkers bounds the workers kept waiting: after a burst of
	// calls, the others end at once, and their stacks with them.
	maxIdleWorkers = 256
)

// Go runs f on an idle worker, or a new one when none is idle.
func (w *workers) Go(f func()) {
	w.pending.Add(1)
	select {
	case w.queue() <- f:
	default:
		go w.work(f)
	}
}

func (w *workers) queue() chan func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.jobs == nil {
		w.jobs = make(chan func())
	}
	return w.jobs
}

func (w *workers) work(f func()) {
	jobs := w.queue()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		f()
		f = nil // what it holds is not kept while idle
		w.pending.Done()
		if w.idle.Add(1) > maxIdleWorkers {
			w.idle.Add(-1)
			return
		}
		idle.Reset(workerIdle)
		var ok bool
		select {
		case f, ok = <-jobs:
		case <-idle.C:
		}
		w.idle.Add(-1)
		if !ok { // timed out, or Close
			return
		}
	}
}

// Close waits until every function given to Go has returned, and ends
// the idle workers. Go must not be called after it.
func (w *workers) Close() {
	w.pending.Wait()
	close(w.queue())
}
