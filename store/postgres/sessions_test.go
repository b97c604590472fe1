package postgres_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/store"
)

// TestSessions: a session recorded through one handle is found through
// another (another replica), with its owner and state; a touch changes the
// state and keeps it alive; one not seen for idle is gone and a touch does
// not bring it back; an ended one is gone; the id itself is not stored.
func TestSessions(t *testing.T) {
	url, key := database(t)
	a, b := open(t, url, key), open(t, url, key)
	ctx := t.Context()

	s := store.Session{ID: "sid-one", Owner: "alice", State: []byte(`{"logLevel":"info"}`)}
	if err := a.OpenSession(ctx, s, time.Hour); err != nil {
		t.Fatalf("OpenSession: %v", err)
	}
	if err := b.OpenSession(ctx, s, time.Hour); !errors.Is(err, store.ErrConflict) {
		t.Errorf("OpenSession of a taken id: got %v, want ErrConflict", err)
	}
	got, err := b.Session(ctx, "sid-one", time.Hour)
	if err != nil || got.Owner != "alice" || string(got.State) != `{"logLevel": "info"}` || got.SeenAt.IsZero() {
		t.Fatalf("Session from another handle: %+v (state %s), %v", got, got.State, err)
	}
	if err := b.TouchSession(ctx, "sid-one", []byte(`{"logLevel":"debug"}`), time.Hour); err != nil {
		t.Fatalf("TouchSession: %v", err)
	}
	if err := a.TouchSession(ctx, "sid-one", nil, time.Hour); err != nil {
		t.Fatalf("TouchSession without a state: %v", err)
	}
	if got, err = a.Session(ctx, "sid-one", time.Hour); err != nil || !strings.Contains(string(got.State), "debug") {
		t.Errorf("state after a touch: %s, %v", got.State, err)
	}
	if _, err := a.Session(ctx, "sid-other", time.Hour); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Session of an unknown id: %v, want ErrNotFound", err)
	}

	// Not seen within idle: gone, and a touch does not revive it.
	if err := a.OpenSession(ctx, store.Session{ID: "sid-idle", State: []byte(`{}`)}, time.Hour); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if _, err := b.Session(ctx, "sid-idle", 10*time.Millisecond); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Session not seen within idle: %v, want ErrNotFound", err)
	}
	if err := b.TouchSession(ctx, "sid-idle", nil, 10*time.Millisecond); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TouchSession of an expired session: %v, want ErrNotFound", err)
	}
	if _, err := b.Session(ctx, "sid-idle", 10*time.Millisecond); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Session after touching an expired one: %v, want ErrNotFound", err)
	}

	if err := b.EndSession(ctx, "sid-one"); err != nil {
		t.Fatalf("EndSession: %v", err)
	}
	if err := b.EndSession(ctx, "sid-one"); err != nil {
		t.Errorf("EndSession twice: %v", err)
	}
	if _, err := a.Session(ctx, "sid-one", time.Hour); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Session after its end: %v, want ErrNotFound", err)
	}
	if err := a.TouchSession(ctx, "sid-one", nil, time.Hour); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TouchSession after its end: %v, want ErrNotFound", err)
	}

	// The table never holds an id in the clear.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM gateway_sessions WHERE id LIKE 'sid-%'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d rows keyed by the session id itself (%v)", n, err)
	}
}
