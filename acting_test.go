package airlock_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	airlock "github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/store"
)

// TestSnapshotFor: a caller acting for several principals through one host
// makes each one's calls for that principal, on a lane of the principal's
// own with the principal's own token, kept while in use and given back
// once idle.
func TestSnapshotFor(t *testing.T) {
	t.Cleanup(airlock.SetLaneIdle(300 * time.Millisecond))
	w, repo, h := partitionWorld(t)
	ctx := context.Background()
	host := h.BeginTurn(ctx)
	alice := h.Principal()

	// Refusals: a name tenancy: would refuse, a task's snapshot.
	if _, _, err := h.SnapshotFor(host, airlock.Principal{Tenant: "acme", User: "bob smith"}); err == nil || !strings.Contains(err.Error(), `user "bob smith"`) {
		t.Errorf("SnapshotFor(bob smith) = %v, want the name refused", err)
	}
	task, err := h.OpenTask(ctx, "t1", &airlock.TaskOptions{Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.SnapshotFor(task.Snapshot(), alice); err == nil || !strings.Contains(err.Error(), "task t1") {
		t.Errorf("SnapshotFor(a task's snapshot) = %v, want it refused", err)
	}
	task.Release()
	// The host's own principal, spelt in full or not at all, is the
	// snapshot itself.
	for _, p := range []airlock.Principal{alice, {}} {
		if s, release, err := h.SnapshotFor(host, p); err != nil || s != host {
			t.Errorf("SnapshotFor(%+v) = %p, %v; want the host's snapshot", p, s, err)
		} else {
			release()
		}
	}

	bob := airlock.Principal{Tenant: "acme", User: "bob"}
	callAs := func(who airlock.Principal) *airlock.Result {
		t.Helper()
		s, release, err := h.SnapshotFor(host, who)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		if s.ID() != host.ID() || s.Generation() != host.Generation() {
			t.Errorf("snapshot for %+v is %s/%d, want the same catalog %s/%d", who, s.ID(), s.Generation(), host.ID(), host.Generation())
		}
		return h.Call(ctx, s, airlock.Call{Name: "prot__read", Arguments: json.RawMessage(`{}`)})
	}

	// Bob has not logged in: alice's login does not serve him.
	r := callAs(bob)
	wantStatus(t, r, airlock.AuthRequired)
	opts := w.options()
	opts.Principal, opts.StateDir = bob, h.StateDir()
	if _, err := airlock.OpenCredentials(w.cfg, opts).Login(ctx, "prot"); err != nil {
		t.Fatal(err)
	}
	seen := len(w.rs.Seen())
	wantStatus(t, callAs(bob), airlock.OK)
	wantStatus(t, callAs(bob), airlock.OK) // released and leased again: the same lane
	time.Sleep(800 * time.Millisecond)     // idle: the lane is given back
	wantStatus(t, callAs(bob), airlock.OK)
	wantStatus(t, call(t, h, "prot__read", `{}`), airlock.OK) // alice, on the host's connection

	tokens := w.rs.Seen()
	aliceTok := tokens[0]
	for _, tok := range tokens[seen : len(tokens)-1] {
		if tok == aliceTok {
			t.Fatal("a call made for bob carried alice's token")
		}
	}
	h.Close()

	// Every result names whom it was made for; bob's first two calls went
	// out on one connection, his third on a new one.
	type made struct{ user, session string }
	var results []made
	for _, e := range auditEvents(t, h, store.EventResult) {
		if e.Tool != "prot__read" {
			continue
		}
		user, _ := e.Fields["user"].(string)
		tenant, _ := e.Fields["tenant"].(string)
		session, _ := e.Fields["session"].(string)
		if tenant != "acme" {
			t.Errorf("result for %s has tenant %q", user, tenant)
		}
		results = append(results, made{user, session})
	}
	users := make([]string, len(results))
	for i, m := range results {
		users[i] = m.user
	}
	if want := []string{"bob", "bob", "bob", "bob", "alice"}; !slices.Equal(users, want) {
		t.Fatalf("results made for %v, want %v", users, want)
	}
	b1, b2, b3, a := results[1].session, results[2].session, results[3].session, results[4].session
	if b1 == "" || b1 != b2 || b3 == b1 || b1 == a || b3 == a {
		t.Errorf("sessions: bob %s, %s, %s; alice %s; want bob's first two on one connection, his third on a new one, alice's her own", b1, b2, b3, a)
	}
}
