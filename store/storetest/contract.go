package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/store"
)

// fields decodes v's JSON into a map, to check it as a script would.
func fields(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("json.Unmarshal: %v", err)
	}
	return m
}

// pick returns the named entries of m; a missing one is reported as
// "<missing>".
func pick(m map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		v, ok := m[k]
		if !ok {
			v = "<missing>"
		}
		out[k] = v
	}
	return out
}

func rfc3339(t time.Time) string { return t.Format(time.RFC3339Nano) }

// testRecoveryJSON checks the fields of `recovery list --json`.
func testRecoveryJSON(t *testing.T, h *harness) {
	j := h.store().Journal()
	created := base()
	if err := j.Begin(t.Context(), intent("rec_1", created)); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	keys := []string{"id", "server", "tool", "status", "args_hash", "created_at", "resolved"}
	check := func(status string, resolved bool) {
		t.Helper()
		r, err := j.Get(t.Context(), "rec_1")
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		want := map[string]any{
			"id": "rec_1", "server": "fs", "tool": "fs__write_file", "status": status,
			"args_hash": "sha256:rec_1", "created_at": rfc3339(created), "resolved": resolved,
		}
		if diff := cmp.Diff(want, pick(fields(t, r), keys...)); diff != "" {
			t.Errorf("record JSON when %s (-want +got):\n%s", status, diff)
		}
	}
	check("open", false)
	if err := j.End(t.Context(), "rec_1", store.OutcomeUnknown, "timeout"); err != nil {
		t.Fatalf("End: %v", err)
	}
	check("unknown", false)
	if err := j.Resolve(t.Context(), "rec_1", store.ResolutionApplied, "", "ada"); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	check("unknown", true)
	r, _ := j.Get(t.Context(), "rec_1")
	if got := fields(t, r)["resolution"]; got != "applied" {
		t.Errorf("resolution in record JSON: got %v, want applied", got)
	}
	want := map[string]any{"content": "[REDACTED:secret]", "path": "notes/rec_1.txt"}
	if diff := cmp.Diff(want, fields(t, r)["arguments"]); diff != "" {
		t.Errorf("arguments in record JSON (-want +got):\n%s", diff)
	}

	// A record without arguments (written before they were kept) has no
	// "arguments".
	in := intent("rec_2", created)
	in.Arguments = nil
	if err := j.Begin(t.Context(), in); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	r, _ = j.Get(t.Context(), "rec_2")
	if got, ok := fields(t, r)["arguments"]; ok || r.Arguments != nil {
		t.Errorf("a record without arguments: JSON has %v, Arguments %q; want neither", got, r.Arguments)
	}
}

// testApprovalJSON checks the fields of `approvals list --json` through
// every status: tenant and user are there whatever they are.
func testApprovalJSON(t *testing.T, h *harness) {
	ap := h.store().Approvals()
	now := store.UTC(time.Now())
	keys := []string{"id", "server", "tool", "summary", "status", "created_at", "expires_at", "tenant", "user", "target"}
	check := func(id string, created time.Time, status store.ApprovalStatus) {
		t.Helper()
		a, err := ap.Get(t.Context(), id)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		want := map[string]any{
			"id": id, "server": "fs", "tool": "fs__write_file", "summary": "write_file path=src/a.go",
			"status": string(status), "created_at": rfc3339(created), "expires_at": rfc3339(created.Add(time.Hour)),
			"tenant": "acme", "user": "ada", "target": "fs-server --root /srv",
		}
		if diff := cmp.Diff(want, pick(fields(t, a), keys...)); diff != "" {
			t.Errorf("approval JSON when %s (-want +got):\n%s", status, diff)
		}
	}
	for _, tc := range []struct {
		id      string
		created time.Time
		steps   func(id string) error
		status  store.ApprovalStatus
	}{
		{"apr_p", now, func(string) error { return nil }, store.ApprovalPending},
		{"apr_g", now, func(id string) error { return ap.Decide(t.Context(), id, true, "ada", "") }, store.ApprovalGranted},
		{"apr_d", now, func(id string) error { return ap.Decide(t.Context(), id, false, "ada", "") }, store.ApprovalDenied},
		{"apr_u", now, func(id string) error {
			if err := ap.Decide(t.Context(), id, true, "ada", ""); err != nil {
				return err
			}
			_, err := ap.Consume(t.Context(), "d_apr_u", "acme", "ada", now)
			return err
		}, store.ApprovalUsed},
		{"apr_x", now.Add(-2 * time.Hour), func(string) error { return nil }, store.ApprovalExpired},
	} {
		if err := ap.Create(t.Context(), approval(tc.id, "d_"+tc.id, tc.created)); err != nil {
			t.Fatalf("Create: %v", err)
		}
		if err := tc.steps(tc.id); err != nil {
			t.Fatalf("%s: %v", tc.id, err)
		}
		check(tc.id, tc.created, tc.status)
	}
}

// testRuleJSON checks the fields of `approvals rules --json`.
func testRuleJSON(t *testing.T, h *harness) {
	ap := h.store().Approvals()
	created := base()
	if err := ap.Remember(t.Context(), rule("rule_1", "sha256:d", created)); err != nil {
		t.Fatalf("Remember: %v", err)
	}
	r, err := ap.Rule(t.Context(), "rule_1")
	if err != nil {
		t.Fatalf("Rule: %v", err)
	}
	want := map[string]any{
		"id": "rule_1", "server": "fs", "tool": "fs__write_file", "definition": "sha256:d", "tenant": "acme", "user": "ada",
		"created_at": rfc3339(created), "created_by": "ada", "approval": "apr_rule_1",
	}
	if diff := cmp.Diff(want, fields(t, r)); diff != "" {
		t.Errorf("rule JSON (-want +got):\n%s", diff)
	}
}

// testAuditJSON checks one line of `audit --json`: the fixed fields are
// always there, the extra ones beside them.
func testAuditJSON(t *testing.T, h *harness) {
	a := h.store().Audit()
	at := base()
	in := []store.Event{
		{Time: at, Event: store.EventServerReady, Server: "fs"},
		{Time: at, Event: store.EventResult, Server: "fs", Tool: "fs__read_file", Snapshot: "snap_1", Class: "ok",
			DurationMS: 42, Fields: map[string]any{"args_hash": "sha256:ab", "decision": "allow"}},
	}
	for _, e := range in {
		if err := a.Append(t.Context(), e); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	got, err := a.Events(t.Context(), time.Time{}, 0)
	if err != nil || len(got) != 2 {
		t.Fatalf("Events: got %d events, %v; want 2", len(got), err)
	}
	want := []map[string]any{
		{"time": rfc3339(at), "event": "server_ready", "server": "fs", "tool": "", "snapshot": "", "class": "", "duration_ms": 0.0},
		{"time": rfc3339(at), "event": "result", "server": "fs", "tool": "fs__read_file", "snapshot": "snap_1", "class": "ok",
			"duration_ms": 42.0, "args_hash": "sha256:ab", "decision": "allow"},
	}
	for i, e := range got {
		if diff := cmp.Diff(want[i], fields(t, e)); diff != "" {
			t.Errorf("audit JSON line %d (-want +got):\n%s", i, diff)
		}
		var back store.Event
		b, _ := json.Marshal(e)
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("json.Unmarshal of an audit line: %v", err)
		}
		if diff := cmp.Diff(e, back); diff != "" {
			t.Errorf("audit JSON line %d does not read back (-stored +read):\n%s", i, diff)
		}
	}
}
