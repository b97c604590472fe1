package postgres_test

import (
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/postgres"
)

// TestLeases: a key takes as many leases as its limit and refuses the
// next at once; a released place is free at once, an expired one once its
// ttl has passed, and renewing keeps a lease past its first ttl.
func TestLeases(t *testing.T) {
	db := openReplicas(t, 1)[0]
	ctx := t.Context()

	a, err := db.Acquire(ctx, "server/s", 2, "h1", time.Minute)
	if err != nil {
		t.Fatalf("Acquire 1: %v", err)
	}
	if _, err := db.Acquire(ctx, "server/s", 2, "h2", time.Minute); err != nil {
		t.Fatalf("Acquire 2: %v", err)
	}
	if _, err := db.Acquire(ctx, "server/s", 2, "h1", time.Minute); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("Acquire 3 of 2: got %v, want ErrBusy", err)
	}
	// Another key has places of its own, and a larger limit lets one more in.
	if _, err := db.Acquire(ctx, "server/t", 1, "h1", time.Minute); err != nil {
		t.Fatalf("Acquire on another key: %v", err)
	}
	if _, err := db.Acquire(ctx, "server/s", 3, "h1", time.Minute); err != nil {
		t.Fatalf("Acquire 3 of 3: %v", err)
	}

	if err := db.Release(ctx, a); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := db.Release(ctx, a); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Release twice: got %v, want ErrNotFound", err)
	}
	if _, err := db.Acquire(ctx, "server/s", 3, "h2", time.Minute); err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}

	for _, bad := range []struct {
		limit int
		ttl   time.Duration
	}{{0, time.Minute}, {1, 0}} {
		if _, err := db.Acquire(ctx, "server/u", bad.limit, "h1", bad.ttl); err == nil || errors.Is(err, store.ErrBusy) {
			t.Errorf("Acquire with limit %d, ttl %s: got %v, want an error", bad.limit, bad.ttl, err)
		}
	}
}

// TestLeaseExpiry: a lease that is not renewed frees its place once its
// ttl has passed; one its holder renews keeps it; a renewal counts only
// the holder's own unexpired leases.
func TestLeaseExpiry(t *testing.T) {
	url, key := database(t)
	db := open(t, url, key)
	ctx := t.Context()
	const ttl = 400 * time.Millisecond

	if _, err := db.Acquire(ctx, "dead", 1, "gone", ttl); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Acquire(ctx, "kept", 1, "live", ttl); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Acquire(ctx, "forgotten", 1, "gone", ttl); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Acquire(ctx, "dead", 1, "other", ttl); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("Acquire before expiry: got %v, want ErrBusy", err)
	}
	end := time.Now().Add(3 * ttl)
	for time.Now().Before(end) {
		n, err := db.Renew(ctx, "live", ttl)
		if err != nil || n != 1 {
			t.Fatalf("Renew: got %d, %v; want 1, nil", n, err)
		}
		time.Sleep(ttl / 4)
	}
	if _, err := db.Acquire(ctx, "kept", 1, "other", ttl); !errors.Is(err, store.ErrBusy) {
		t.Errorf("Acquire of a renewed lease's key: got %v, want ErrBusy", err)
	}
	if _, err := db.Acquire(ctx, "dead", 1, "other", ttl); err != nil {
		t.Errorf("Acquire after the lease expired: %v", err)
	}
	// An expired lease is not brought back by its holder's renewal.
	if n, err := db.Renew(ctx, "gone", ttl); err != nil || n != 0 {
		t.Errorf("Renew of an expired lease: got %d, %v; want 0, nil", n, err)
	}
	// A renewal dropped the expired lease of a key no one acquired again.
	var rows int
	if err := connect(t, url).QueryRow(ctx, `SELECT count(*) FROM leases WHERE key = 'forgotten'`).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("rows of an expired, forgotten lease: got %d, %v; want 0", rows, err)
	}
}

// TestLeaseLimitAcrossReplicas: 50 callers on two DBs (two replicas) race
// for a key with a limit of 3, each retrying until it gets a place, holding
// it a little and releasing it: never more than 3 hold it at once, and
// every caller gets its turn.
func TestLeaseLimitAcrossReplicas(t *testing.T) {
	replicas := openReplicas(t, 2)
	const limit, callers = 3, 50
	var (
		held crowd
		done atomic.Int64
		wg   sync.WaitGroup
	)
	for i := range callers {
		db := replicas[i%2]
		wg.Go(func() {
			for {
				l, err := db.Acquire(t.Context(), "server/shared", limit, "h", time.Minute)
				if errors.Is(err, store.ErrBusy) {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				held.stay(10 * time.Millisecond)
				if err := db.Release(t.Context(), l); err != nil {
					t.Error(err)
				}
				done.Add(1)
				return
			}
		})
	}
	wg.Wait()
	if got := held.most.Load(); got != limit {
		t.Errorf("at most %d held the key at once, want %d", got, limit)
	}
	if got := done.Load(); got != callers {
		t.Errorf("%d callers got a place, want %d", got, callers)
	}
}

// endHolderSessions terminates the sessions that hold holder's lock, the
// way the server ends a dead client's, and waits until the lock is free.
func endHolderSessions(t *testing.T, url, holder string) {
	t.Helper()
	endSessions(t, url, `objsubid = 2 AND classid::bigint = $1 AND objid::bigint = hashtext($2)::bigint & 4294967295`,
		postgres.LockHolders, holder)
}

// endSessions terminates the one session that holds the advisory locks
// that where selects from pg_locks, and waits until they are free.
func endSessions(t *testing.T, url, where string, args ...any) {
	t.Helper()
	admin := connect(t, url)
	holding := `FROM pg_locks WHERE locktype = 'advisory' AND granted AND ` + where
	var ended int
	if err := admin.QueryRow(t.Context(), `SELECT count(DISTINCT pg_terminate_backend(pid)) `+holding, args...).Scan(&ended); err != nil || ended != 1 {
		t.Fatalf("terminating the session that holds %s: got %d sessions, %v; want 1", where, ended, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var left int
		if err := admin.QueryRow(t.Context(), `SELECT count(*) `+holding, args...).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("locks %s are still held 10 s after their session was terminated", where)
		}
	}
}

// TestLostLeaseHolder: a holder whose session ends (as when its process
// is killed) has its places free at once for another DB, long before their
// ttl. The holder, still alive, takes its lock again at its next Acquire
// or Renew, and its places count again.
func TestLostLeaseHolder(t *testing.T) {
	url, key := database(t)
	a, b := open(t, url, key), open(t, url, key)
	ctx := t.Context()
	const ttl = 10 * time.Minute

	old, err := a.Acquire(ctx, "k", 1, "ha", ttl)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if _, err := b.Acquire(ctx, "k", 1, "hb", ttl); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("Acquire while the holder lives: got %v, want ErrBusy", err)
	}
	endHolderSessions(t, url, "ha")
	if _, err := b.Acquire(ctx, "k", 1, "hb", ttl); err != nil {
		t.Fatalf("Acquire of a dead holder's place: %v", err)
	}
	if err := a.Release(ctx, old); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Release of a lease dropped with its holder's session: got %v, want ErrNotFound", err)
	}

	// a's next Acquire takes the lock again: its lease counts.
	if _, err := a.Acquire(ctx, "k", 2, "ha", ttl); err != nil {
		t.Fatalf("Acquire after the session was lost: %v", err)
	}
	if _, err := b.Acquire(ctx, "k", 2, "hb", ttl); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("Acquire while the holder lives again: got %v, want ErrBusy", err)
	}
	// So does its next Renew, which keeps the leases no one took meanwhile.
	endHolderSessions(t, url, "ha")
	if n, err := a.Renew(ctx, "ha", ttl); err != nil || n != 1 {
		t.Fatalf("Renew after the session was lost: got %d, %v; want 1, nil", n, err)
	}
	if _, err := b.Acquire(ctx, "k", 2, "hb", ttl); !errors.Is(err, store.ErrBusy) {
		t.Errorf("Acquire after the holder renewed: got %v, want ErrBusy", err)
	}
}

// TestLeasesAcrossRestart: a restart of PostgreSQL ends every session,
// live replicas' too, so a lease written before it waits for its holder to
// take its lock again (at its next renewal) or for its ttl; once renewed,
// it is freed at once if its holder's session ends.
func TestLeasesAcrossRestart(t *testing.T) {
	pg := testenv.StartOwnPostgres(t)
	key := filepath.Join(t.TempDir(), "audit.key")
	a := open(t, pg.URL, key)
	ctx := t.Context()
	const ttl = 10 * time.Minute
	if _, err := a.Acquire(ctx, "k", 1, "ha", ttl); err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	pg.Stop()
	pg.Start()

	b := open(t, pg.URL, key)
	if _, err := b.Acquire(ctx, "k", 1, "hb", ttl); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("Acquire of a place taken before the restart: got %v, want ErrBusy", err)
	}
	// a's pool finds its connections closed by the restart: a renewal may
	// fail before one succeeds.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		n, err := a.Renew(ctx, "ha", ttl)
		if err == nil {
			if n != 1 {
				t.Fatalf("Renew after the restart: renewed %d, want 1", n)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Renew after the restart: %v", err)
		}
	}
	if _, err := b.Acquire(ctx, "k", 1, "hb", ttl); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("Acquire of a place renewed after the restart: got %v, want ErrBusy", err)
	}
	endHolderSessions(t, pg.URL, "ha")
	if _, err := b.Acquire(ctx, "k", 1, "hb", ttl); err != nil {
		t.Errorf("Acquire of a dead holder's place: %v", err)
	}
}

// TestLeaseHolderIdle: a database whose sessions end when idle for a
// moment (idle_session_timeout) does not end a live holder's lock, which
// is idle for as long as its places are.
func TestLeaseHolderIdle(t *testing.T) {
	url, key := database(t)
	if _, err := connect(t, url).Exec(t.Context(), `DO $$ BEGIN
	EXECUTE format('ALTER DATABASE %I SET idle_session_timeout = 300', current_database());
END $$`); err != nil {
		t.Fatal(err)
	}
	a, b := open(t, url, key), open(t, url, key)
	ctx := t.Context()
	if _, err := a.Acquire(ctx, "k", 1, "ha", 10*time.Minute); err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	time.Sleep(3 * time.Second) // ten idle timeouts
	// b's pool finds its own idle connections ended: an Acquire may fail
	// before one answers (a new connection, too, when a loaded machine
	// leaves it idle for an idle timeout before its first query).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, err := b.Acquire(ctx, "k", 1, "hb", 10*time.Minute)
		if errors.Is(err, store.ErrBusy) {
			break
		}
		if err == nil || time.Now().After(deadline) {
			t.Fatalf("Acquire of an idle, live holder's place: got %v, want ErrBusy", err)
		}
	}
}

// TestLeaseAfterLostSession: a DB whose session ended while it held only
// its writer lock takes its first lease on a new session, and begins
// intents there too.
func TestLeaseAfterLostSession(t *testing.T) {
	url, key := database(t)
	a := open(t, url, key)
	ctx := t.Context()
	if err := a.Journal().Begin(ctx, intent("a1")); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	endSessions(t, url, `objsubid = 1`)
	if _, err := a.Acquire(ctx, "k", 1, "ha", time.Minute); err != nil {
		t.Fatalf("Acquire after the session was lost: %v", err)
	}
	if err := a.Journal().Begin(ctx, intent("a2")); err != nil {
		t.Fatalf("Begin after the session was lost: %v", err)
	}
	b := open(t, url, key)
	if _, err := b.Acquire(ctx, "k", 1, "hb", time.Minute); !errors.Is(err, store.ErrBusy) {
		t.Errorf("Acquire of a live holder's place: got %v, want ErrBusy", err)
	}
}
