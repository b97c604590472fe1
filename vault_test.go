package airlock_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/internal/testenv"
)

// sharedWorld is an OAuth world whose hosts keep their store, logins
// included, in one PostgreSQL database, under one secret key.
func sharedWorld(t *testing.T) *oauthWorld {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	t.Setenv("AIRLOCK_SECRET_KEY", base64.StdEncoding.EncodeToString(key))
	w := newOAuthWorld(t, false)
	w.cfg.Store.URL = testenv.PostgresDatabase(t)
	return w
}

// openReplicas opens two hosts of w, each with a state directory of its
// own, and counts the times each is told its catalog may have changed.
func openReplicas(t *testing.T, w *oauthWorld) (hosts [2]*airlock.Host, told *[2]atomic.Int64) {
	t.Helper()
	told = new([2]atomic.Int64)
	for i := range hosts {
		opts := w.options()
		opts.StateDir = t.TempDir()
		opts.CatalogChanged = func() { told[i].Add(1) }
		h, err := airlock.Open(context.Background(), w.cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		hosts[i] = h
	}
	// Each replica listens from a goroutine of its own: one that has yet
	// to would not hear what the test does next.
	testenv.WaitListening(t, w.cfg.Store.URL, "catalog", len(hosts))
	return hosts, told
}

// TestLoginSharedByReplicas: with store.url set, a login made through one
// replica is kept, sealed, in the database, and another replica (another
// host, another state directory) calls the OAuth server with it at once,
// with nobody logging in again; the database holds neither the token nor
// the partitions' names in the clear.
func TestLoginSharedByReplicas(t *testing.T) {
	w := sharedWorld(t)
	ctx := context.Background()

	a := w.open(t)
	if st := a.Servers()[0]; st.Status != airlock.StatusAuthRequired {
		t.Fatalf("replica a before any login: %s", st.Status)
	}
	if _, err := a.Credentials().Login(ctx, "prot"); err != nil {
		t.Fatalf("Login through replica a: %v", err)
	}
	a.BeginTurn(ctx)
	wantStatus(t, call(t, a, "prot__read", `{}`), airlock.OK)

	opts := w.options()
	opts.StateDir = t.TempDir()
	b, err := airlock.Open(ctx, w.cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if st := b.Servers()[0]; st.Status != airlock.StatusReady {
		t.Fatalf("replica b, after a login through replica a: %s (%v), want ready", st.Status, st.Err)
	}
	wantStatus(t, call(t, b, "prot__read", `{}`), airlock.OK)
	if n := w.opens.Load(); n != 1 {
		t.Errorf("%d logins in a browser, want the one through replica a", n)
	}

	conn, err := pgx.Connect(ctx, w.cfg.Store.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT name, value FROM secrets`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	hexName := regexp.MustCompile(`^[0-9a-f]{64}$`)
	for rows.Next() {
		var name string
		var value []byte
		if err := rows.Scan(&name, &value); err != nil {
			t.Fatal(err)
		}
		n++
		if !hexName.MatchString(name) {
			t.Errorf("a secret is named %q in the database, want a hash", name)
		}
		if json.Valid(value) || strings.Contains(string(value), "token") || strings.Contains(string(value), "prot") {
			t.Errorf("a secret's value is in the clear: %.80q", value)
		}
	}
	if n == 0 {
		t.Fatal("no secret in the database: the login went somewhere else")
	}
}

// TestLoginReachesRunningReplicas: two replicas run, their OAuth server
// waiting for a login; a person logs in with airlock auth login (here: the
// credentials of a configuration, with no host). Both replicas hear of it
// from the store (Options.CatalogChanged, as the gateway turns on) and
// connect the server at their next safe point, without anyone calling it.
func TestLoginReachesRunningReplicas(t *testing.T) {
	w := sharedWorld(t)
	ctx := context.Background()

	hosts, told := openReplicas(t, w)
	for i, h := range hosts {
		if st := h.Servers()[0]; st.Status != airlock.StatusAuthRequired {
			t.Fatalf("replica %d before the login: %s", i, st.Status)
		}
	}
	before := [2]int64{told[0].Load(), told[1].Load()}

	cli := w.options()
	cli.StateDir = t.TempDir()
	if _, err := airlock.OpenCredentials(w.cfg, cli).Login(ctx, "prot"); err != nil {
		t.Fatalf("airlock auth login: %v", err)
	}
	for i, h := range hosts {
		waitFor(t, 10*time.Second, fmt.Sprintf("replica %d to hear of the login", i), func() bool { return told[i].Load() > before[i] })
		h.BeginTurn(ctx) // the gateway's turn, on CatalogChanged
		if st := h.Servers()[0]; st.Status != airlock.StatusReady {
			t.Fatalf("replica %d after the login and a turn: %s (%v), want ready", i, st.Status, st.Err)
		}
		wantStatus(t, call(t, h, "prot__read", `{}`), airlock.OK)
	}
}

// TestLogoutReachesRunningReplicas: two replicas use a login; a person
// logs out with airlock auth logout. Both hear of it and drop the login
// they held in memory, with its still valid access token: their next
// call needs a login, and nothing brings the token back.
func TestLogoutReachesRunningReplicas(t *testing.T) {
	w := sharedWorld(t)
	ctx := context.Background()
	cli := w.options()
	cli.StateDir = t.TempDir()
	creds := airlock.OpenCredentials(w.cfg, cli)
	if _, err := creds.Login(ctx, "prot"); err != nil {
		t.Fatal(err)
	}

	hosts, told := openReplicas(t, w)
	for _, h := range hosts {
		wantStatus(t, call(t, h, "prot__read", `{}`), airlock.OK)
	}
	before := [2]int64{told[0].Load(), told[1].Load()}
	if err := creds.Logout(ctx, "prot"); err != nil {
		t.Fatalf("airlock auth logout: %v", err)
	}
	for i, h := range hosts {
		waitFor(t, 10*time.Second, fmt.Sprintf("replica %d to hear of the logout", i), func() bool { return told[i].Load() > before[i] })
		r := call(t, h, "prot__read", `{}`)
		wantStatus(t, r, airlock.AuthRequired)
		h.BeginTurn(ctx)
		wantStatus(t, call(t, h, "prot__read", `{}`), airlock.AuthRequired)
	}
}
