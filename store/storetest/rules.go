package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/store"
)

// testApprovalDenial: a denial is found for its digest from the time it
// was decided until since passes it; the newest denial wins, and requests
// that are pending, granted or used are no denial.
func testApprovalDenial(t *testing.T, h *harness) {
	ap := h.store().Approvals()
	now := store.UTC(time.Now())
	if _, err := ap.Denial(t.Context(), "d", "acme", "ada", now.Add(-time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Denial with no requests: got %v, want ErrNotFound", err)
	}
	for _, id := range []string{"apr_p", "apr_g", "apr_u"} {
		if err := ap.Create(t.Context(), approval(id, "d", now)); err != nil {
			t.Fatalf("Create: %v", err)
		}
	}
	if err := ap.Decide(t.Context(), "apr_g", true, "ada", ""); err != nil {
		t.Fatalf("Decide: %v", err)
	}
	if _, err := ap.Denial(t.Context(), "d", "acme", "ada", now.Add(-time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Denial with only pending and granted requests: got %v, want ErrNotFound", err)
	}

	before := store.UTC(time.Now())
	for _, id := range []string{"apr_d1", "apr_d2"} {
		if err := ap.Create(t.Context(), approval(id, "d", now)); err != nil {
			t.Fatalf("Create: %v", err)
		}
		if err := ap.Decide(t.Context(), id, false, "bob", "no: "+id); err != nil {
			t.Fatalf("Decide: %v", err)
		}
	}
	after := store.UTC(time.Now())
	got, err := ap.Denial(t.Context(), "d", "acme", "ada", before)
	if err != nil {
		t.Fatalf("Denial: %v", err)
	}
	if got.ID != "apr_d2" || got.Status != store.ApprovalDenied || got.DecidedBy != "bob" || got.Note != "no: apr_d2" ||
		got.DecidedAt.Before(before) || got.DecidedAt.After(after) {
		t.Errorf("Denial = %+v, want the newest denial apr_d2, by bob, decided between %v and %v", got, before, after)
	}
	if _, err := ap.Denial(t.Context(), "other", "acme", "ada", before); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Denial of another digest: got %v, want ErrNotFound", err)
	}
	if _, err := ap.Denial(t.Context(), "d", "acme", "ada", after.Add(time.Microsecond)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Denial since after the denials: got %v, want ErrNotFound", err)
	}
	// A denial past the request's own expiry still holds until since
	// passes it.
	old := approval("apr_old", "d_old", now.Add(-90*time.Minute))
	old.ExpiresAt = now.Add(-30 * time.Minute)
	if err := ap.Create(t.Context(), old); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := ap.Decide(t.Context(), "apr_old", false, "ada", ""); err != nil {
		t.Fatalf("Decide: %v", err)
	}
	if got, err := ap.Denial(t.Context(), "d_old", "acme", "ada", before); err != nil || got.ID != "apr_old" {
		t.Errorf("Denial of a request denied after it expired: got %s, %v; want apr_old", got.ID, err)
	}
}

// testApprovalDenialPrincipal: a denial holds only for the tenant and user
// the request was asked for.
func testApprovalDenialPrincipal(t *testing.T, h *harness) {
	ap := h.store().Approvals()
	now := store.UTC(time.Now())
	if err := ap.Create(t.Context(), approval("apr_ada", "same", now)); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := ap.Decide(t.Context(), "apr_ada", false, "ada", ""); err != nil {
		t.Fatalf("Decide: %v", err)
	}
	since := now.Add(-time.Minute)
	for _, p := range []struct{ tenant, user string }{
		{"evilcorp", "eve"}, {"acme", "eve"}, {"evilcorp", "ada"}, {"ACME", "ada"}, {"acme", "Ada"}, {"acme", ""}, {"", "ada"}, {"", ""},
	} {
		if a, err := ap.Denial(t.Context(), "same", p.tenant, p.user, since); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Denial for %q/%q of acme/ada's denial: got %s, %v; want ErrNotFound", p.tenant, p.user, a.ID, err)
		}
	}
	if a, err := ap.Denial(t.Context(), "same", "acme", "ada", since); err != nil || a.ID != "apr_ada" {
		t.Errorf("Denial for acme/ada: got %s, %v; want apr_ada", a.ID, err)
	}
}

func testRuleRememberGet(t *testing.T, h *harness) {
	ap := h.store().Approvals()
	in := rule("rule_1", "def_1", store.UTC(time.Now()).Add(789*time.Nanosecond))
	if err := ap.Remember(t.Context(), in); err != nil {
		t.Fatalf("Remember: %v", err)
	}
	got, err := h.store().Approvals().Rule(t.Context(), "rule_1")
	if err != nil {
		t.Fatalf("Rule: %v", err)
	}
	want := in
	want.CreatedAt = store.UTC(in.CreatedAt)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Rule after Remember (-want +got):\n%s", diff)
	}
	if _, err := ap.Rule(t.Context(), "rule_2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Rule of an unknown id: got %v, want ErrNotFound", err)
	}

	before := store.UTC(time.Now())
	if err := ap.Remember(t.Context(), rule("rule_2", "def_2", time.Time{})); err != nil {
		t.Fatalf("Remember without a time: %v", err)
	}
	got, _ = ap.Rule(t.Context(), "rule_2")
	if got.CreatedAt.Before(before) || got.CreatedAt.After(time.Now()) {
		t.Errorf("CreatedAt of a rule remembered without one: got %v, want the time of Remember", got.CreatedAt)
	}
}

func testRuleRefuses(t *testing.T, h *harness) {
	ap := h.store().Approvals()
	now := store.UTC(time.Now())
	remember := func(r store.AllowRule) error { return ap.Remember(t.Context(), r) }
	refused(t, "Remember of a rule", rule("rule_bad", "def", now), remember, []flaw[store.AllowRule]{
		{"no id", func(r *store.AllowRule) { r.ID = "" }},
		{"no server", func(r *store.AllowRule) { r.Server = "" }},
		{"no tool", func(r *store.AllowRule) { r.Tool = "" }},
		{"no definition", func(r *store.AllowRule) { r.Definition = "" }},
		{"no tenant", func(r *store.AllowRule) { r.Tenant = "" }},
		{"no user", func(r *store.AllowRule) { r.User = "" }},
	})
	if _, err := ap.Rule(t.Context(), "rule_bad"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Rule of a refused rule: got %v, want ErrNotFound", err)
	}
	if err := ap.Remember(t.Context(), rule("rule_1", "def_1", now)); err != nil {
		t.Fatalf("Remember: %v", err)
	}
	if err := ap.Remember(t.Context(), rule("rule_1", "def_2", now)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Remember of a taken id: got %v, want ErrConflict", err)
	}
	if err := ap.Remember(t.Context(), rule("rule_2", "def_1", now)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Remember of a second rule for one definition and principal: got %v, want ErrConflict", err)
	}
	other := rule("rule_3", "def_1", now)
	other.User = "bob"
	if err := ap.Remember(t.Context(), other); err != nil {
		t.Errorf("Remember of the same definition for another user: %v", err)
	}
}

// testRuleBinding: a rule answers only its own definition and principal.
func testRuleBinding(t *testing.T, h *harness) {
	ap := h.store().Approvals()
	if err := ap.Remember(t.Context(), rule("rule_ada", "same", store.UTC(time.Now()))); err != nil {
		t.Fatalf("Remember: %v", err)
	}
	for _, c := range []struct{ definition, tenant, user string }{
		{"other", "acme", "ada"}, {"Same", "acme", "ada"}, {"same ", "acme", "ada"}, {"", "acme", "ada"},
		{"same", "evilcorp", "eve"}, {"same", "acme", "eve"}, {"same", "evilcorp", "ada"}, {"same", "ACME", "ada"},
		{"same", "acme", "Ada"}, {"same", "acme", ""}, {"same", "", "ada"}, {"same", "", ""},
	} {
		if r, err := ap.Remembered(t.Context(), c.definition, c.tenant, c.user); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Remembered(%q, %q, %q) of acme/ada's rule for \"same\": got %s, %v; want ErrNotFound",
				c.definition, c.tenant, c.user, r.ID, err)
		}
	}
	if r, err := ap.Remembered(t.Context(), "same", "acme", "ada"); err != nil || r.ID != "rule_ada" {
		t.Errorf("Remembered for acme/ada: got %s, %v; want rule_ada", r.ID, err)
	}
}

func testRuleListForget(t *testing.T, h *harness) {
	ap := h.store().Approvals()
	now := store.UTC(time.Now())
	for _, c := range []struct {
		id           string
		at           time.Duration
		tenant, user string
	}{
		{"r1", -3 * time.Minute, "acme", "ada"},
		{"r2", -5 * time.Minute, "acme", "ada"},
		{"r3", -4 * time.Minute, "other", "eve"},
		{"r4", -5 * time.Minute, "other", "ada"}, // ties with r2: the order remembered
	} {
		r := rule(c.id, "def_"+c.id, now.Add(c.at))
		r.Tenant, r.User = c.tenant, c.user
		if err := ap.Remember(t.Context(), r); err != nil {
			t.Fatalf("Remember: %v", err)
		}
	}
	ids := func(f store.RuleFilter) []string {
		t.Helper()
		rules, err := ap.Rules(t.Context(), f)
		if err != nil {
			t.Fatalf("Rules: %v", err)
		}
		return idsOf(rules, func(r store.AllowRule) string { return r.ID })
	}
	for _, tc := range []struct {
		name string
		f    store.RuleFilter
		want []string
	}{
		{"all", store.RuleFilter{}, []string{"r2", "r4", "r3", "r1"}},
		{"tenant", store.RuleFilter{Tenant: "other"}, []string{"r4", "r3"}},
		{"user", store.RuleFilter{User: "ada"}, []string{"r2", "r4", "r1"}},
		{"tenant and user", store.RuleFilter{Tenant: "acme", User: "ada"}, []string{"r2", "r1"}},
		{"nothing", store.RuleFilter{Tenant: "acme", User: "eve"}, []string{}},
	} {
		if diff := cmp.Diff(tc.want, ids(tc.f)); diff != "" {
			t.Errorf("Rules(%s) (-want +got):\n%s", tc.name, diff)
		}
	}

	// Forgotten through another handle, a rule is gone for every handle.
	if err := h.store().Approvals().Forget(t.Context(), "r2"); err != nil {
		t.Fatalf("Forget: %v", err)
	}
	if err := ap.Forget(t.Context(), "r2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Forget of a forgotten rule: got %v, want ErrNotFound", err)
	}
	if _, err := ap.Remembered(t.Context(), "def_r2", "acme", "ada"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Remembered of a forgotten rule: got %v, want ErrNotFound", err)
	}
	if diff := cmp.Diff([]string{"r4", "r3", "r1"}, ids(store.RuleFilter{})); diff != "" {
		t.Errorf("Rules after Forget (-want +got):\n%s", diff)
	}
	// The same tool may be remembered again once forgotten.
	if err := ap.Remember(t.Context(), rule("r5", "def_r2", now)); err != nil {
		t.Errorf("Remember after Forget: %v", err)
	}
}
