package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestAnnounce: what one replica announces on a topic, the others' Watch
// hears; a Watch whose connection is cut connects again and says it may
// have missed something, then hears what comes next.
func TestAnnounce(t *testing.T) {
	url, key := database(t)
	a, b := open(t, url, key), open(t, url, key)
	var mu sync.Mutex
	var got []string
	heard := make(chan struct{}, 16)
	missed := make(chan struct{}, 4)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Watch(ctx, "catalog", func(p string) {
			mu.Lock()
			got = append(got, p)
			mu.Unlock()
			heard <- struct{}{}
		}, func() { missed <- struct{}{} })
	}()
	defer func() { cancel(); <-done }()

	wait := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	// The watch may not listen yet: announce until it hears.
	announce := func(payload string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			if err := a.Announce(t.Context(), "catalog", payload); err != nil {
				t.Fatal(err)
			}
			select {
			case <-heard:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("the watch never heard %q", payload)
			}
		}
	}
	announce("login prot")
	if err := a.Announce(t.Context(), "other", "not for the catalog"); err != nil {
		t.Fatal(err)
	}

	// Cut the watch's connection: it comes back and says so.
	if _, err := connect(t, url).Exec(t.Context(), `
SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN "airlock_catalog"' AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	wait(missed, "the watch to connect again")
	announce("login other")

	mu.Lock()
	defer mu.Unlock()
	for _, p := range got {
		if p != "login prot" && p != "login other" {
			t.Errorf("heard %q on the catalog topic", p)
		}
	}
}
