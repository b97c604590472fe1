package airlock_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
)

var (
	carol = airlock.Principal{Tenant: "acme", User: "carol"}
	eve   = airlock.Principal{Tenant: "evilcorp", User: "eve"}
)

// sharedStore is one store that several hosts use, as replicas or several
// command lines on one state directory do.
func sharedStore(t *testing.T) store.Store {
	t.Helper()
	st, err := airlock.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// openAs opens a host for who on st, with a state directory of its own.
func openAs(t *testing.T, cfg *config.Config, st store.Store, who airlock.Principal, opts *airlock.Options) *airlock.Host {
	t.Helper()
	if opts == nil {
		opts = &airlock.Options{}
	}
	opts.Store, opts.Principal, opts.StateDir, opts.StopGrace = st, who, t.TempDir(), 500*time.Millisecond
	h, err := airlock.Open(context.Background(), cfg, opts)
	if err != nil {
		t.Fatalf("Open for %v: %v", who, err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func approvalIDs(as []store.Approval) []string {
	ids := []string{}
	for _, a := range as {
		ids = append(ids, a.ID)
	}
	return ids
}

// TestGrantIsBoundToThePrincipal: a grant asked for acme/carol is used
// only by acme/carol's call, never by evilcorp/eve making the same call
// (same digest), even at the same time; eve can neither see nor decide
// carol's request.
func TestGrantIsBoundToThePrincipal(t *testing.T) {
	st := sharedStore(t)
	srv := testServer(t, "s", "sdk")
	cfg := governed(t, srv)
	hc, he := openAs(t, cfg, st, carol, nil), openAs(t, cfg, st, eve, nil)
	ctx := context.Background()
	const args = `{"text":"pay invoice 42"}`

	r := call(t, hc, "s__echo", args)
	wantStatus(t, r, airlock.ApprovalRequired)
	id := r.ApprovalID
	// Eve's same call is a request of her own, not carol's pending one.
	re := call(t, he, "s__echo", args)
	wantStatus(t, re, airlock.ApprovalRequired)
	if re.ApprovalID == id {
		t.Fatalf("eve's call reuses carol's request %s", id)
	}
	if again := call(t, he, "s__echo", args); again.ApprovalID != re.ApprovalID {
		t.Errorf("eve's second ask = %s, want her pending %s", again.ApprovalID, re.ApprovalID)
	}

	// Eve cannot decide, show or list carol's request.
	asEve := airlock.Actor{Principal: eve, By: "eve"}
	if err := he.Decide(ctx, id, true, "eve", ""); !errors.Is(err, airlock.ErrOtherPrincipal) {
		t.Errorf("eve's host deciding carol's request = %v, want ErrOtherPrincipal", err)
	}
	if err := airlock.DecideApproval(ctx, st, id, true, "", asEve); !errors.Is(err, airlock.ErrOtherPrincipal) {
		t.Errorf("DecideApproval as eve of carol's request = %v, want ErrOtherPrincipal", err)
	}
	if a, err := airlock.GetApproval(ctx, st, id, asEve); !errors.Is(err, airlock.ErrOtherPrincipal) || a.ID != "" {
		t.Errorf("GetApproval as eve of carol's request = %+v, %v; want nothing and ErrOtherPrincipal", a, err)
	}
	list, err := airlock.ListApprovals(ctx, st, store.ApprovalFilter{}, asEve)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{re.ApprovalID}, approvalIDs(list)); diff != "" {
		t.Errorf("eve's list (-want +got):\n%s", diff)
	}
	if a, _ := st.Approvals().Get(ctx, id); a.Status != store.ApprovalPending {
		t.Fatalf("carol's request after eve's attempts: %s, want pending", a.Status)
	}

	// Carol grants her request. Calls of both race for it: only one of
	// carol's runs, and eve's still need her own approval.
	if err := hc.Decide(ctx, id, true, "carol", ""); err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		ran []string
		wg  sync.WaitGroup
	)
	for i := range 16 {
		h, who := he, "eve"
		if i%2 == 0 {
			h, who = hc, "carol"
		}
		wg.Go(func() {
			r := h.Call(ctx, h.Snapshot(), airlock.Call{Name: "s__echo", Arguments: json.RawMessage(args)})
			mu.Lock()
			defer mu.Unlock()
			switch r.Status {
			case airlock.OK:
				ran = append(ran, who+" on "+r.ApprovalID)
			case airlock.ApprovalRequired:
			default:
				t.Errorf("%s's call: %s (%v)", who, r.Status, r.Err)
			}
		})
	}
	wg.Wait()
	if diff := cmp.Diff([]string{"carol on " + id}, ran); diff != "" {
		t.Errorf("calls that ran on the grant (-want +got):\n%s", diff)
	}
	if n := len(calls(t, srv)); n != 1 {
		t.Errorf("the server got %d calls, want carol's one", n)
	}
}

// TestOperatorActsOnAnyPrincipal: an operator may list, show and decide
// another principal's requests, and every such act is in the audit trail
// with who acted, as whom, on whose request.
func TestOperatorActsOnAnyPrincipal(t *testing.T) {
	st := sharedStore(t)
	srv := testServer(t, "s", "sdk")
	hc := openAs(t, governed(t, srv), st, carol, nil)
	ctx := context.Background()
	r := call(t, hc, "s__echo", `{"text":"deploy"}`)
	wantStatus(t, r, airlock.ApprovalRequired)
	id := r.ApprovalID

	op := airlock.Actor{Principal: eve, By: "root", AllPrincipals: true}
	list, err := airlock.ListApprovals(ctx, st, store.ApprovalFilter{Status: store.ApprovalPending}, op)
	if err != nil || !slices.Contains(approvalIDs(list), id) {
		t.Fatalf("the operator's list = %v, %v; want carol's %s", approvalIDs(list), err, id)
	}
	a, err := airlock.GetApproval(ctx, st, id, op)
	if err != nil || a.Tenant != "acme" || a.User != "carol" {
		t.Fatalf("the operator's show = %+v, %v; want carol's request", a, err)
	}
	if err := airlock.DecideApproval(ctx, st, id, true, "checked", op); err != nil {
		t.Fatal(err)
	}
	r = call(t, hc, "s__echo", `{"text":"deploy"}`)
	wantStatus(t, r, airlock.OK)

	events, err := st.Audit().Events(ctx, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	type seen struct{ Action, Approval, By, Tenant, User, ActingTenant, ActingUser string }
	var got []seen
	str := func(v any) string { s, _ := v.(string); return s }
	for _, e := range events {
		f := e.Fields
		switch e.Event {
		case store.EventApprovalOperator:
			got = append(got, seen{str(f["action"]), str(f["approval"]), str(f["by"]), str(f["tenant"]), str(f["user"]),
				str(f["acting_tenant"]), str(f["acting_user"])})
		case store.EventApprovalGranted:
			got = append(got, seen{"granted", str(f["approval"]), str(f["by"]), str(f["tenant"]), str(f["user"]), "", ""})
		}
	}
	want := []seen{
		{"list", "", "root", "", "", "evilcorp", "eve"},
		{"show", id, "root", "acme", "carol", "evilcorp", "eve"},
		{"approve", id, "root", "acme", "carol", "evilcorp", "eve"},
		{"granted", id, "root", "acme", "carol", "", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("operator and decision events (-want +got):\n%s", diff)
	}
}

// recordingApprover allows every request and remembers for whom it was
// asked.
type recordingApprover struct {
	mu    sync.Mutex
	asked []airlock.Principal
}

func (a *recordingApprover) Approve(_ context.Context, req airlock.ApprovalRequest) (airlock.Verdict, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, req.Principal)
	return airlock.Allow, nil
}

// TestApproverDecidesForTheCallsPrincipal: a person answering through the
// host's Approver decides for the principal the call is made for (a
// task's, not the host's), and that principal's grant is the one used;
// the host's own identical call is asked about again.
func TestApproverDecidesForTheCallsPrincipal(t *testing.T) {
	repo := gitRepo(t)
	srv := testServer(t, "s", "sdk")
	cfg := governed(t, srv)
	cfg.Dir = repo
	st := sharedStore(t)
	ap := &recordingApprover{}
	h := openAs(t, cfg, st, carol, &airlock.Options{Approver: ap})
	task, err := h.OpenTask(context.Background(), "eve-1", &airlock.TaskOptions{Repo: repo, Principal: eve})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { task.Release() })
	ctx := context.Background()
	const args = `{"text":"ship it"}`

	r := h.Call(ctx, task.Snapshot(), airlock.Call{Name: "s__echo", Arguments: json.RawMessage(args)})
	wantStatus(t, r, airlock.OK)
	a, err := st.Approvals().Get(ctx, r.ApprovalID)
	if err != nil || a.Tenant != eve.Tenant || a.User != eve.User || a.DecidedBy != "eve" || a.Status != store.ApprovalUsed {
		t.Fatalf("the task's approval = %+v, %v; want eve's, decided by eve and used", a, err)
	}
	r2 := call(t, h, "s__echo", args)
	wantStatus(t, r2, airlock.OK)
	if r2.ApprovalID == r.ApprovalID {
		t.Errorf("the host's call ran on the task's grant %s", r.ApprovalID)
	}
	if diff := cmp.Diff([]airlock.Principal{eve, carol}, ap.asked); diff != "" {
		t.Errorf("the approver was asked for (-want +got):\n%s", diff)
	}
	h.Close() // writes the audit trail
	events, err := st.Audit().Events(ctx, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		if e.Event == store.EventApprovalGranted {
			u, _ := e.Fields["user"].(string)
			got = append(got, e.Fields["approval"].(string)+" for "+u)
		}
	}
	if diff := cmp.Diff([]string{r.ApprovalID + " for eve", r2.ApprovalID + " for carol"}, got); diff != "" {
		t.Errorf("approval_granted events (-want +got):\n%s", diff)
	}
}

// copyFile copies the file at src to dst, executable.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestGrantDoesNotSurviveALaunchChange: a grant is for the server as it
// was launched when the person approved. The same call to the same tools
// from a server started another way (another binary or arguments under
// the server's name, another environment: MCPoison) needs a new approval,
// and the snapshot id changes; the server launched as approved still
// runs the call on the grant.
func TestGrantDoesNotSurviveALaunchChange(t *testing.T) {
	other := filepath.Join(t.TempDir(), "server")
	copyFile(t, testServer(t, "s", "sdk").Command, other)
	for _, tc := range []struct {
		name   string
		change func(*config.Server)
	}{
		{"arguments", func(s *config.Server) { s.Args = []string{"--unsafe", "yes"} }},
		{"command", func(s *config.Server) { s.Command = other }},
		{"env", func(s *config.Server) { s.Env["NODE_OPTIONS"] = "--require /tmp/x.js" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testServer(t, "s", "sdk")
			st := sharedStore(t)
			ctx := context.Background()
			const args = `{"text":"rotate keys"}`
			h := openAs(t, governed(t, srv), st, carol, nil)
			r := call(t, h, "s__echo", args)
			wantStatus(t, r, airlock.ApprovalRequired)
			id, approved := r.ApprovalID, h.Snapshot().ID()
			if err := h.Decide(ctx, id, true, "carol", ""); err != nil {
				t.Fatal(err)
			}
			if a, _ := st.Approvals().Get(ctx, id); a.Target != srv.Target() {
				t.Errorf("the request's target = %q, want the command line %q", a.Target, srv.Target())
			}
			h.Close()

			changed := srv
			changed.Env = maps.Clone(srv.Env)
			tc.change(&changed)
			h2 := openAs(t, governed(t, changed), st, carol, nil)
			if got := h2.Snapshot().ID(); got == approved {
				t.Errorf("the snapshot id %s did not change with the server's %s", got, tc.name)
			}
			r = call(t, h2, "s__echo", args)
			wantStatus(t, r, airlock.ApprovalRequired)
			if r.ApprovalID == id {
				t.Errorf("the changed server's call is asked on the old request %s", id)
			}
			if a, _ := st.Approvals().Get(ctx, r.ApprovalID); a.Target != changed.Target() {
				t.Errorf("the new request's target = %q, want %q", a.Target, changed.Target())
			}
			if n := len(calls(t, srv)); n != 0 {
				t.Errorf("the server got %d calls, want none before a new approval", n)
			}
			h2.Close()

			// Launched as approved, the call runs on the grant.
			h3 := openAs(t, governed(t, srv), st, carol, nil)
			if got := h3.Snapshot().ID(); got != approved {
				t.Errorf("the snapshot id of the server launched as before = %s, want %s", got, approved)
			}
			r = call(t, h3, "s__echo", args)
			wantStatus(t, r, airlock.OK)
			if r.ApprovalID != id {
				t.Errorf("ran on %s, want %s", r.ApprovalID, id)
			}
		})
	}
}

// TestApprovalsStoreDown: a call whose approvals the store cannot read is
// refused in Airlock's words; the store's own (a database's message) go
// to the host's log only.
func TestApprovalsStoreDown(t *testing.T) {
	st, err := airlock.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := openAs(t, governed(t, testServer(t, "s", "sdk")), st, carol, &airlock.Options{ShutdownWait: time.Second})
	st.Close() // the store goes away under the host
	r := call(t, h, "s__echo", `{"text":"hi"}`)
	wantStatus(t, r, airlock.Denied)
	if want := "s__echo refused: its approvals cannot be read right now (the host's store did not answer); try again later"; r.Err.Msg != want {
		t.Errorf("refusal = %q, want %q", r.Err.Msg, want)
	}
}
