package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/store"
)

func approvalIDs(as []store.Approval) []string {
	return idsOf(as, func(a store.Approval) string { return a.ID })
}

// grant creates a through one handle and grants it through another.
func grant(t *testing.T, create, decide store.Approvals, a store.Approval) {
	t.Helper()
	if err := create.Create(t.Context(), a); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := decide.Decide(t.Context(), a.ID, true, "ada", ""); err != nil {
		t.Fatalf("Decide: %v", err)
	}
}

func testApprovalCreateGet(t *testing.T, h *harness) {
	ap := h.store().Approvals()
	now := store.UTC(time.Now())
	in := approval("apr_1", "d1", now.Add(789*time.Nanosecond))
	in.Status = store.ApprovalGranted // ignored: a new request is pending
	if err := ap.Create(t.Context(), in); err != nil {
		t.Fatalf("Create: %v", err)
	}
	got, err := ap.Get(t.Context(), "apr_1")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	want := in
	want.Status = store.ApprovalPending
	want.CreatedAt = now
	want.ExpiresAt = store.UTC(in.ExpiresAt)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Get after Create (-want +got):\n%s", diff)
	}
	if _, err := ap.Get(t.Context(), "apr_2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of an unknown id: got %v, want ErrNotFound", err)
	}

	before := store.UTC(time.Now())
	in = approval("apr_2", "d2", time.Time{})
	in.ExpiresAt = time.Now().Add(time.Hour)
	if err := ap.Create(t.Context(), in); err != nil {
		t.Fatalf("Create without a time: %v", err)
	}
	got, err = ap.Get(t.Context(), "apr_2")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.CreatedAt.Before(before) || got.CreatedAt.After(time.Now()) {
		t.Errorf("CreatedAt of an approval created without one: got %v, want the time of Create", got.CreatedAt)
	}
}

func testApprovalCreateRefuses(t *testing.T, h *harness) {
	ap := h.store().Approvals()
	now := store.UTC(time.Now())
	create := func(a store.Approval) error { return ap.Create(t.Context(), a) }
	refused(t, "Create of an approval", approval("apr_bad", "d", now), create, []flaw[store.Approval]{
		{"no id", func(a *store.Approval) { a.ID = "" }},
		{"no digest", func(a *store.Approval) { a.Digest = "" }},
		{"no expiry", func(a *store.Approval) { a.ExpiresAt = time.Time{} }},
		{"expiry before creation", func(a *store.Approval) { a.ExpiresAt = a.CreatedAt.Add(-time.Second) }},
		{"expiry at creation", func(a *store.Approval) { a.ExpiresAt = a.CreatedAt }},
		{"no creation time and expiry passed", func(a *store.Approval) { a.CreatedAt, a.ExpiresAt = time.Time{}, now.Add(-time.Second) }},
	})
	if _, err := ap.Get(t.Context(), "apr_bad"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of a refused approval: got %v, want ErrNotFound", err)
	}
	if err := ap.Create(t.Context(), approval("apr_1", "d1", now)); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := ap.Create(t.Context(), approval("apr_1", "d2", now)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Create of a taken id: got %v, want ErrConflict", err)
	}
	if got, _ := ap.Get(t.Context(), "apr_1"); got.Digest != "d1" {
		t.Errorf("digest after a refused second Create: got %q, want d1", got.Digest)
	}
}

func testApprovalLifecycle(t *testing.T, h *harness) {
	a, b := h.store().Approvals(), h.store().Approvals()
	now := store.UTC(time.Now())
	if err := a.Decide(t.Context(), "apr_none", true, "ada", ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Decide of an unknown id: got %v, want ErrNotFound", err)
	}
	for _, grant := range []bool{true, false} {
		id, digest := fmt.Sprintf("apr_%t", grant), fmt.Sprintf("d_%t", grant)
		if err := a.Create(t.Context(), approval(id, digest, now)); err != nil {
			t.Fatalf("Create: %v", err)
		}
		if _, err := a.Consume(t.Context(), digest, "acme", "ada", now); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Consume of a pending request: got %v, want ErrNotFound", err)
		}
		before := store.UTC(time.Now())
		if err := a.Decide(t.Context(), id, grant, "ada", "looks right"); err != nil {
			t.Fatalf("Decide(%t): %v", grant, err)
		}
		for _, again := range []bool{true, false} {
			if err := b.Decide(t.Context(), id, again, "bob", ""); !errors.Is(err, store.ErrConflict) {
				t.Errorf("Decide(%t) after Decide(%t): got %v, want ErrConflict", again, grant, err)
			}
		}
		got, err := b.Get(t.Context(), id)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		want := store.ApprovalDenied
		if grant {
			want = store.ApprovalGranted
		}
		if got.Status != want || got.DecidedBy != "ada" || got.Note != "looks right" {
			t.Errorf("after Decide(%t): got status %q by %q note %q; want %q by ada", grant, got.Status, got.DecidedBy, got.Note, want)
		}
		if got.DecidedAt.Before(before) || got.DecidedAt.After(time.Now()) {
			t.Errorf("DecidedAt %v is not the time of Decide", got.DecidedAt)
		}

		use := now.Add(time.Minute).Add(456 * time.Nanosecond)
		used, err := b.Consume(t.Context(), digest, "acme", "ada", use)
		if !grant {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Consume of a denied request: got %v, want ErrNotFound", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Consume of a grant: %v", err)
		}
		wantUsed := got
		wantUsed.Status = store.ApprovalUsed
		wantUsed.UsedAt = store.UTC(use)
		if diff := cmp.Diff(wantUsed, used); diff != "" {
			t.Errorf("Consume (-want +got):\n%s", diff)
		}
		if got, _ := a.Get(t.Context(), id); got.Status != store.ApprovalUsed {
			t.Errorf("Get after Consume: got status %q, want used", got.Status)
		}
		if _, err := a.Consume(t.Context(), digest, "acme", "ada", use); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("second Consume of a grant: got %v, want ErrNotFound", err)
		}
		if err := a.Decide(t.Context(), id, true, "ada", ""); !errors.Is(err, store.ErrConflict) {
			t.Errorf("Decide of a used grant: got %v, want ErrConflict", err)
		}
	}
}

func testApprovalExpiry(t *testing.T, h *harness) {
	ap := h.store().Approvals()
	now := store.UTC(time.Now())

	// A request nobody answered in time.
	if err := ap.Create(t.Context(), approval("apr_late", "d_late", now.Add(-2*time.Hour))); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if got, _ := ap.Get(t.Context(), "apr_late"); got.Status != store.ApprovalExpired {
		t.Errorf("Get of a pending request past its expiry: got %q, want expired", got.Status)
	}
	if err := ap.Decide(t.Context(), "apr_late", true, "ada", ""); !errors.Is(err, store.ErrConflict) {
		t.Errorf("granting an expired request: got %v, want ErrConflict", err)
	}
	if got, _ := ap.Get(t.Context(), "apr_late"); got.Status != store.ApprovalExpired || got.DecidedBy != "" {
		t.Errorf("after a refused grant: got status %q decided by %q, want expired and undecided", got.Status, got.DecidedBy)
	}

	// A grant, used too late and then in time.
	g := approval("apr_g", "d_g", now.Add(-30*time.Minute)) // expires in 30 minutes
	if err := ap.Create(t.Context(), g); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := ap.Decide(t.Context(), "apr_g", true, "ada", ""); err != nil {
		t.Fatalf("Decide: %v", err)
	}
	for _, at := range []time.Time{g.ExpiresAt, g.ExpiresAt.Add(time.Hour)} {
		if _, err := ap.Consume(t.Context(), "d_g", "acme", "ada", at); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Consume at %v of a grant expiring at %v: got %v, want ErrNotFound", at, g.ExpiresAt, err)
		}
	}
	if _, err := ap.Consume(t.Context(), "d_g", "acme", "ada", g.ExpiresAt.Add(-time.Microsecond)); err != nil {
		t.Errorf("Consume just before expiry: %v", err)
	}

	// An expired request may still be denied, and then reads as denied.
	old := approval("apr_old", "d_old", now.Add(-90*time.Minute))
	old.ExpiresAt = now.Add(-30 * time.Minute)
	if err := ap.Create(t.Context(), old); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := ap.Decide(t.Context(), "apr_old", false, "ada", ""); err != nil {
		t.Errorf("denying an expired request: %v", err)
	}
	if got, _ := ap.Get(t.Context(), "apr_old"); got.Status != store.ApprovalDenied {
		t.Errorf("a denied request past its expiry: got %q, want denied", got.Status)
	}
}

func testApprovalDigestBinding(t *testing.T, h *harness) {
	ap := h.store().Approvals()
	now := store.UTC(time.Now())
	for i, id := range []string{"apr_1", "apr_2", "apr_3"} {
		grant(t, ap, ap, approval(id, "same", now.Add(time.Duration(i)*time.Second)))
	}
	for _, d := range []string{"other", "Same", "same ", ""} {
		if _, err := ap.Consume(t.Context(), d, "acme", "ada", now); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Consume(%q) with only grants for \"same\": got %v, want ErrNotFound", d, err)
		}
	}
	// Grants for one digest are used oldest first, each once.
	var got []string
	for range 4 {
		a, err := ap.Consume(t.Context(), "same", "acme", "ada", now.Add(time.Minute))
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			t.Fatalf("Consume: %v", err)
		}
		got = append(got, a.ID)
	}
	if diff := cmp.Diff([]string{"apr_1", "apr_2", "apr_3"}, got); diff != "" {
		t.Errorf("grants used (-want +got):\n%s", diff)
	}
}

// testApprovalPrincipalBinding: a grant is used only by a call of the
// tenant and user it was asked for, whatever the digest.
func testApprovalPrincipalBinding(t *testing.T, h *harness) {
	ap := h.store().Approvals()
	now := store.UTC(time.Now())
	grant(t, ap, ap, approval("apr_ada", "same", now))
	for _, p := range []struct{ tenant, user string }{
		{"evilcorp", "eve"}, {"acme", "eve"}, {"evilcorp", "ada"}, {"ACME", "ada"}, {"acme", "Ada"},
		{"acme ", "ada"}, {"acmea", "da"}, {"acme", ""}, {"", "ada"}, {"", ""},
	} {
		if a, err := ap.Consume(t.Context(), "same", p.tenant, p.user, now); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Consume for %q/%q of acme/ada's grant: got %s, %v; want ErrNotFound", p.tenant, p.user, a.ID, err)
		}
	}
	if got, _ := ap.Get(t.Context(), "apr_ada"); got.Status != store.ApprovalGranted {
		t.Errorf("acme/ada's grant after other principals tried it: got %q, want granted", got.Status)
	}

	// An older grant of another principal for the same digest is passed
	// over, and stays for its own principal.
	eve := approval("apr_eve", "same", now.Add(-time.Minute))
	eve.Tenant, eve.User = "evilcorp", "eve"
	grant(t, ap, ap, eve)
	var got []string
	for _, p := range []struct{ tenant, user string }{{"acme", "ada"}, {"acme", "ada"}, {"evilcorp", "eve"}, {"evilcorp", "eve"}} {
		a, err := ap.Consume(t.Context(), "same", p.tenant, p.user, now)
		switch {
		case errors.Is(err, store.ErrNotFound):
			got = append(got, p.user+": none")
		case err != nil:
			t.Fatalf("Consume: %v", err)
		default:
			if a.Tenant != p.tenant || a.User != p.user {
				t.Errorf("Consume for %s/%s returned a grant of %s/%s", p.tenant, p.user, a.Tenant, a.User)
			}
			got = append(got, p.user+": "+a.ID)
		}
	}
	want := []string{"ada: apr_ada", "ada: none", "eve: apr_eve", "eve: none"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("grants used (-want +got):\n%s", diff)
	}
}

// testApprovalPrincipalRace: of callers racing for one grant, only the
// principal it was asked for wins, once; another principal racing alone
// never does, and leaves the grant as it was.
func testApprovalPrincipalRace(t *testing.T, h *harness) {
	as := []store.Approvals{h.store().Approvals(), h.store().Approvals()}
	now := store.UTC(time.Now())
	for _, round := range []struct {
		name    string
		mixed   bool // acme/ada races too; else only evilcorp/eve
		winners int
	}{{"mixed", true, 1}, {"others only", false, 0}} {
		id, digest := "apr_"+round.name, "d_"+round.name
		grant(t, as[0], as[1], approval(id, digest, now))
		won := make([]string, 32)
		errs := Race(len(won), func(i int) error {
			tenant, user := "evilcorp", "eve"
			if round.mixed && i%2 == 0 {
				tenant, user = "acme", "ada"
			}
			_, err := as[i%2].Consume(t.Context(), digest, tenant, user, now)
			won[i] = tenant + "/" + user
			return err
		})
		ok, missed := count(t, errs, store.ErrNotFound)
		if ok != round.winners || missed != len(errs)-round.winners {
			t.Errorf("%s: %d goroutines racing for a grant of acme/ada: got %d wins and %d ErrNotFound, want %d wins",
				round.name, len(errs), ok, missed, round.winners)
		}
		for i, who := range won {
			if errs[i] == nil && who != "acme/ada" {
				t.Errorf("%s: %s used a grant of acme/ada", round.name, who)
			}
		}
		want := store.ApprovalUsed
		if round.winners == 0 {
			want = store.ApprovalGranted
		}
		if got, _ := as[0].Get(t.Context(), id); got.Status != want {
			t.Errorf("%s: the grant after the race: got %q, want %q", round.name, got.Status, want)
		}
	}
}

func testApprovalSingleUseRace(t *testing.T, h *harness) {
	as := []store.Approvals{h.store().Approvals(), h.store().Approvals()}
	now := store.UTC(time.Now())
	for _, grants := range []int{1, 3} {
		digest := fmt.Sprintf("d_%d", grants)
		for i := range grants {
			grant(t, as[0], as[1], approval(fmt.Sprintf("apr_%d_%d", grants, i), digest, now))
		}
		won := make([]string, 32)
		errs := Race(len(won), func(i int) error {
			a, err := as[i%2].Consume(t.Context(), digest, "acme", "ada", now)
			won[i] = a.ID
			return err
		})
		ok, missed := count(t, errs, store.ErrNotFound)
		if ok != grants || missed != len(errs)-grants {
			t.Errorf("%d goroutines racing for %d grants: got %d wins and %d ErrNotFound", len(errs), grants, ok, missed)
		}
		seen := map[string]bool{}
		for i, id := range won {
			if errs[i] != nil {
				continue
			}
			if seen[id] {
				t.Errorf("grant %s was used twice", id)
			}
			seen[id] = true
		}
	}
}

func testApprovalList(t *testing.T, h *harness) {
	ap := h.store().Approvals()
	now := store.UTC(time.Now())
	create := []struct {
		id           string
		at           time.Duration
		tenant, user string
		decide       string // grant, deny, use
	}{
		{"p1", -3 * time.Minute, "acme", "ada", ""},
		{"g1", -5 * time.Minute, "acme", "ada", "grant"},
		{"d1", -4 * time.Minute, "other", "eve", "deny"},
		{"u1", -5 * time.Minute, "acme", "ada", "use"}, // ties with g1: creation order
		{"x1", -2 * time.Hour, "other", "ada", ""},     // expired
		{"p2", -1 * time.Minute, "other", "eve", ""},
	}
	for _, c := range create {
		a := approval(c.id, "d_"+c.id, now.Add(c.at))
		a.Tenant, a.User = c.tenant, c.user
		if err := ap.Create(t.Context(), a); err != nil {
			t.Fatalf("Create: %v", err)
		}
		if c.decide != "" {
			if err := ap.Decide(t.Context(), c.id, c.decide != "deny", "ada", ""); err != nil {
				t.Fatalf("Decide: %v", err)
			}
		}
		if c.decide == "use" {
			if _, err := ap.Consume(t.Context(), "d_"+c.id, "acme", "ada", now); err != nil {
				t.Fatalf("Consume: %v", err)
			}
		}
	}
	// Each approval listed reads the same by Get.
	list := func(ctx context.Context, f store.ApprovalFilter) ([]store.Approval, error) {
		got, err := ap.List(ctx, f)
		for _, a := range got {
			g, err := ap.Get(ctx, a.ID)
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if diff := cmp.Diff(g, a); diff != "" {
				t.Errorf("List and Get disagree on %s (-get +list):\n%s", a.ID, diff)
			}
		}
		return got, err
	}
	checkLists(t, "List", list, approvalIDs, []listCase[store.ApprovalFilter]{
		{"all", store.ApprovalFilter{}, []string{"x1", "g1", "u1", "d1", "p1", "p2"}},
		{"pending", store.ApprovalFilter{Status: store.ApprovalPending}, []string{"p1", "p2"}},
		{"granted", store.ApprovalFilter{Status: store.ApprovalGranted}, []string{"g1"}},
		{"denied", store.ApprovalFilter{Status: store.ApprovalDenied}, []string{"d1"}},
		{"used", store.ApprovalFilter{Status: store.ApprovalUsed}, []string{"u1"}},
		{"expired", store.ApprovalFilter{Status: store.ApprovalExpired}, []string{"x1"}},
		{"tenant", store.ApprovalFilter{Tenant: "other"}, []string{"x1", "d1", "p2"}},
		{"tenant and status", store.ApprovalFilter{Tenant: "other", Status: store.ApprovalPending}, []string{"p2"}},
		{"user", store.ApprovalFilter{User: "eve"}, []string{"d1", "p2"}},
		{"tenant and user", store.ApprovalFilter{Tenant: "other", User: "ada"}, []string{"x1"}},
		{"user and status", store.ApprovalFilter{User: "eve", Status: store.ApprovalPending}, []string{"p2"}},
		{"a user of another tenant", store.ApprovalFilter{Tenant: "acme", User: "eve"}, []string{}},
		{"limit", store.ApprovalFilter{Limit: 2}, []string{"x1", "g1"}},
		{"nothing", store.ApprovalFilter{Tenant: "none"}, []string{}},
	})
}
