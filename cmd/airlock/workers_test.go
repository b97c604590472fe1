package main

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/testenv"
)

// One function at a time runs on one worker, kept between them; as many
// at once run side by side; Close waits for them all and ends the
// workers.
func TestWorkers(t *testing.T) {
	var w workers
	before := runtime.NumGoroutine()
	var ran atomic.Int32
	ids := map[string]bool{}
	for range 100 {
		id := make(chan string, 1)
		w.Go(func() {
			ran.Add(1)
			id <- goroutineID()
		})
		ids[<-id] = true
		waitIdle(t, &w)
		time.Sleep(time.Millisecond) // for the worker to wait for the next
	}
	if len(ids) > 10 {
		t.Errorf("100 functions one after another ran on %d goroutines, want one kept for them all (a few at most)", len(ids))
	}

	// Ten that wait for each other must all be running at once.
	release := make(chan struct{})
	var started atomic.Int32
	for range 10 {
		w.Go(func() {
			started.Add(1)
			<-release
			ran.Add(1)
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for started.Load() < 10 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := started.Load(); n != 10 {
		t.Fatalf("%d of 10 functions running at once, want all", n)
	}
	closed := make(chan struct{})
	go func() {
		w.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while functions were still running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-closed
	if n := ran.Load(); n != 110 {
		t.Errorf("%d functions ran, want 110", n)
	}
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine() - before; n > 0 {
		t.Errorf("%d workers left after Close", n)
	}
}

// waitIdle waits until every function given to w has returned.
func waitIdle(t *testing.T, w *workers) {
	t.Helper()
	testenv.Returns(t, "every function given to the workers returned", w.pending.Wait)
}

// goroutineID is the number of the goroutine that calls it, as its stack
// trace gives it.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf = bytes.TrimPrefix(buf, []byte("goroutine "))
	return string(buf[:bytes.IndexByte(buf, ' ')])
}

// TestWorkersIdleBound: after a burst of functions, no more than
// maxIdleWorkers stay waiting; the others end as soon as they are done.
func TestWorkersIdleBound(t *testing.T) {
	var w workers
	defer w.Close()
	before := runtime.NumGoroutine()
	release := make(chan struct{})
	var started sync.WaitGroup
	const burst = maxIdleWorkers + 50
	started.Add(burst)
	for range burst {
		w.Go(func() {
			started.Done()
			<-release
		})
	}
	started.Wait()
	close(release)
	waitIdle(t, &w)
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine()-before > maxIdleWorkers && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine() - before; n > maxIdleWorkers {
		t.Errorf("%d goroutines left after a burst of %d, want at most %d idle workers", n, burst, maxIdleWorkers)
	}
	if n := w.idle.Load(); n > maxIdleWorkers {
		t.Errorf("%d idle workers, want at most %d", n, maxIdleWorkers)
	}
}
