package airlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// A tracker knows the calls in flight, so that closing can wait for them
// or cancel them, and refuses new ones once closing has begun.
type tracker struct {
	mu       sync.Mutex
	closing  bool
	inflight map[uint64]context.CancelFunc
	next     uint64
	calls    sync.WaitGroup
}

var errClosing = errors.New("closing")

func (t *tracker) enter(ctx context.Context) (context.Context, func(), error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing {
		return nil, nil, errClosing
	}
	if t.inflight == nil {
		t.inflight = map[uint64]context.CancelFunc{}
	}
	ctx, cancel := context.WithCancel(ctx)
	id := t.next
	t.next++
	t.inflight[id] = cancel
	t.calls.Add(1)
	return ctx, func() {
		t.mu.Lock()
		delete(t.inflight, id)
		t.mu.Unlock()
		cancel()
		t.calls.Done()
	}, nil
}

// stop refuses new calls.
func (t *tracker) stop() {
	t.mu.Lock()
	t.closing = true
	t.mu.Unlock()
}

// drain lets calls in flight finish for up to wait, then cancels them and
// waits as long again. It says what it did.
func (t *tracker) drain(wait time.Duration) (string, error) {
	t.stop()
	done := make(chan struct{})
	go func() { t.calls.Wait(); close(done) }()
	select {
	case <-done:
		return "", nil
	case <-time.After(wait):
	}
	t.mu.Lock()
	n := len(t.inflight)
	for _, cancel := range t.inflight {
		cancel()
	}
	t.mu.Unlock()
	select {
	case <-done:
		return fmt.Sprintf("cancelled %d calls still running after %s", n, wait), nil
	case <-time.After(wait):
		return "", fmt.Errorf("%d calls did not end after being cancelled", n)
	}
}
