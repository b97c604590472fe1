package postgres_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/store"
)

// TestTurnCalls: a turn counts its calls up to its limit and counts no
// more, each key on its own; a turn whose ttl passes without a call starts
// again from zero, and the expired turns of keys no one calls again are
// dropped.
func TestTurnCalls(t *testing.T) {
	url, key := database(t)
	db := open(t, url, key)
	ctx := t.Context()

	count := func(key string, limit int, ttl time.Duration) int {
		t.Helper()
		n, err := db.CountTurnCall(ctx, key, limit, ttl)
		if err != nil {
			t.Fatalf("CountTurnCall %s: %v", key, err)
		}
		return n
	}
	for i, want := range []int{1, 2, 3, 4, 4} {
		if got := count("a", 3, time.Minute); got != want {
			t.Errorf("call %d of turn a: got %d, want %d", i+1, got, want)
		}
	}
	if got := count("b", 3, time.Minute); got != 1 {
		t.Errorf("first call of turn b: got %d, want 1", got)
	}

	const ttl = 200 * time.Millisecond
	count("short", 1, ttl)
	count("forgotten", 1, ttl)
	if got := count("short", 1, ttl); got != 2 {
		t.Errorf("second call of a turn of 1 before it expired: got %d, want 2", got)
	}
	time.Sleep(2 * ttl)
	if got := count("short", 1, ttl); got != 1 {
		t.Errorf("call of an expired turn: got %d, want 1 (it starts again)", got)
	}
	var rows int
	if err := connect(t, url).QueryRow(ctx, `SELECT count(*) FROM turn_calls WHERE key = 'forgotten'`).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("rows of an expired, forgotten turn: got %d, %v; want 0", rows, err)
	}

	for _, bad := range []struct {
		limit int
		ttl   time.Duration
	}{{0, time.Minute}, {1, 0}} {
		if _, err := db.CountTurnCall(ctx, "c", bad.limit, bad.ttl); err == nil {
			t.Errorf("CountTurnCall with limit %d, ttl %s: got no error", bad.limit, bad.ttl)
		}
	}
}

// TestTurnCallsAcrossReplicas: 60 calls of one turn on two DBs (two
// replicas) at once, with a limit of 10: exactly 10 are counted, each
// count given once, and the rest are refused.
func TestTurnCallsAcrossReplicas(t *testing.T) {
	a, b := twoReplicas(t)
	dbs := []store.Turns{a, b}
	const limit, calls = 10, 60
	var (
		refused atomic.Int64
		mu      sync.Mutex
		seen    = map[int]int{}
		wg      sync.WaitGroup
	)
	for i := range calls {
		db := dbs[i%2]
		wg.Go(func() {
			n, err := db.CountTurnCall(t.Context(), "shared", limit, time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			if n > limit {
				refused.Add(1)
				return
			}
			mu.Lock()
			seen[n]++
			mu.Unlock()
		})
	}
	wg.Wait()
	for n := 1; n <= limit; n++ {
		if seen[n] != 1 {
			t.Errorf("count %d given %d times, want once", n, seen[n])
		}
	}
	if got := refused.Load(); got != calls-limit {
		t.Errorf("%d calls refused, want %d", got, calls-limit)
	}
}
