package airlock_test

import (
	"context"
	"testing"
	"time"

	airlock "github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/auth/oauth/oauthtest"
)

// TestSubscriptionForPrincipal: a subscription made for another principal
// to a server that keeps credentials per user goes out on that
// principal's lane, keeps the lane leased while it lives (past the lane's
// idle time), is made again on a new connection when the server loses its
// sessions, names the principal in its updates, and gives the lane back
// on Unsubscribe.
func TestSubscriptionForPrincipal(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) { testSubscriptionForPrincipal(t, version) })
	}
}

func testSubscriptionForPrincipal(t *testing.T, version string) {
	t.Cleanup(airlock.SetLaneIdle(200 * time.Millisecond))
	w := newOAuthWorldWith(t, &oauthtest.ResourceOptions{Stateful: version == "2025-11-25", Resources: true})
	w.cfg.Servers[0].AllowedResources = []string{"note://protected/*"}
	w.cfg.Servers[0].ProtocolVersions = []string{version}
	updates := make(chan airlock.ResourceUpdate, 64)
	opts := w.options()
	opts.ResourceUpdated = func(u airlock.ResourceUpdate) { updates <- u }
	h, err := airlock.Open(context.Background(), w.cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	ctx := context.Background()
	if _, err := h.Credentials().Login(ctx, "prot"); err != nil {
		t.Fatal(err)
	}
	alice, bob := h.Principal(), airlock.Principal{Tenant: "acme", User: "bob"}
	bobOpts := w.options()
	bobOpts.Principal, bobOpts.StateDir = bob, h.StateDir()
	if _, err := airlock.OpenCredentials(w.cfg, bobOpts).Login(ctx, "prot"); err != nil {
		t.Fatal(err)
	}
	host := h.BeginTurn(ctx)
	note := airlock.Read{URI: oauthtest.NoteURI}
	asBob := func(do func(*airlock.Snapshot) *airlock.Error) {
		t.Helper()
		s, release, err := h.SnapshotFor(host, bob)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		if e := do(s); e != nil {
			t.Fatalf("for bob: %v", e)
		}
	}
	asBob(func(s *airlock.Snapshot) *airlock.Error { return h.Subscribe(ctx, s, note) })
	if e := h.Subscribe(ctx, host, note); e != nil {
		t.Fatalf("for alice: %v", e)
	}
	time.Sleep(600 * time.Millisecond) // past the lane's idle time
	if !airlock.LaneLeased(h, "prot", bob) {
		t.Fatal("bob's lane was given back while his subscription lives")
	}

	// Each connection's update names whom it is for.
	heard := func(what string, want map[airlock.Principal]bool) {
		t.Helper()
		got := map[airlock.Principal]bool{}
		deadline := time.Now().Add(15 * time.Second)
		for len(got) < len(want) && time.Now().Before(deadline) {
			w.rs.Touch(ctx)
			wait := time.After(300 * time.Millisecond)
		drain:
			for {
				select {
				case u := <-updates:
					if u.Server != "prot" || u.URI != oauthtest.NoteURI {
						t.Errorf("update %+v, want prot's note", u)
					}
					got[u.Principal] = true
				case <-wait:
					break drain
				}
			}
		}
		for p := range want {
			if !got[p] {
				t.Errorf("%s: no update for %s/%s; got %v", what, p.Tenant, p.User, got)
			}
		}
		for p := range got {
			if !want[p] {
				t.Errorf("%s: an update for %s/%s, who is not subscribed", what, p.Tenant, p.User)
			}
		}
	}
	heard("subscribed", map[airlock.Principal]bool{alice: true, bob: true})

	if version == "2025-11-25" {
		// The server loses every session: both subscriptions are made
		// again, bob's on a new connection of his lane. (A 2026-07-28
		// server's sessions are its listen streams; one that ends while
		// the connection works is not opened again.)
		w.rs.EndSessions()
		heard("after the server lost its sessions", map[airlock.Principal]bool{alice: true, bob: true})
	}

	asBob(func(s *airlock.Snapshot) *airlock.Error { return h.Unsubscribe(ctx, s, note) })
	waitFor(t, 5*time.Second, "bob's lane to be given back", func() bool { return !airlock.LaneLeased(h, "prot", bob) })
	heard("bob unsubscribed", map[airlock.Principal]bool{alice: true})
}
