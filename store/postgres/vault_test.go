package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/store/postgres"
)

// TestVault: sealed values saved through one replica are loaded through
// another, replaced and removed; a missing name is not found.
func TestVault(t *testing.T) {
	ra, rb := twoReplicas(t)
	a, b := ra.Vault(), rb.Vault()
	ctx := t.Context()
	if _, found, err := b.Load(ctx, "n1"); found || err != nil {
		t.Fatalf("Load of a missing name: found %t, %v", found, err)
	}
	if err := a.Save(ctx, "n1", []byte("sealed-1")); err != nil {
		t.Fatal(err)
	}
	if err := a.Save(ctx, "n1", []byte("sealed-2")); err != nil {
		t.Fatal(err)
	}
	if v, found, err := b.Load(ctx, "n1"); !found || err != nil || string(v) != "sealed-2" {
		t.Fatalf("Load through the other replica = %q, %t, %v; want the newest value", v, found, err)
	}
	if err := b.Remove(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if err := b.Remove(ctx, "n1"); err != nil {
		t.Errorf("Remove of a missing name: %v", err)
	}
	if _, found, _ := a.Load(ctx, "n1"); found {
		t.Error("a removed name is still found")
	}
}

// TestVaultLock: a vault's lock is held by one replica at a time; a
// waiter whose context ends gives up; a lock given back, or whose holder's
// connection is gone, is taken by the next.
func TestVaultLock(t *testing.T) {
	url, key := database(t)
	a, b := open(t, url, key).Vault(), open(t, url, key).Vault()

	// Exclusive across replicas, and only for the one name.
	var (
		holders crowd
		wg      sync.WaitGroup
	)
	for i := range 8 {
		v := a
		if i%2 == 1 {
			v = b
		}
		wg.Go(func() {
			unlock, err := v.Lock(context.Background(), "token")
			if err != nil {
				t.Error(err)
				return
			}
			holders.stay(5 * time.Millisecond)
			unlock()
		})
	}
	wg.Wait()
	if most := holders.most.Load(); most != 1 {
		t.Errorf("%d holders of one lock at once, want 1", most)
	}

	unlock, err := a.Lock(t.Context(), "token")
	if err != nil {
		t.Fatal(err)
	}
	other, err := b.Lock(t.Context(), "another")
	if err != nil {
		t.Fatalf("the lock of another name: %v", err)
	}
	other()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := b.Lock(ctx, "token"); err == nil || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("Lock while another replica holds it: %v, want to give up when the context ends", err)
	}
	unlock()
	lockSoon(t, b, "token", "once it was given back")()

	// A holder whose session ends (a replica that died) loses the lock.
	held, err := a.Lock(t.Context(), "token")
	if err != nil {
		t.Fatal(err)
	}
	defer held()
	if _, err := connect(t, url).Exec(t.Context(), `
SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND granted`, int64(0x61736563)); err != nil {
		t.Fatal(err)
	}
	lockSoon(t, b, "token", "after its holder's session ended")()
}

// lockSoon takes v's lock of name within a few seconds and returns its
// unlock, failing the test if it cannot; when says when, for the message.
func lockSoon(t *testing.T, v postgres.Vault, name, when string) func() {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	unlock, err := v.Lock(ctx, name)
	if err != nil {
		t.Fatalf("Lock %s: %v", when, err)
	}
	return unlock
}
