// Package storetest is the conformance suite that every store backend
// passes: the behaviour package store documents, checked the same way for
// SQLite and PostgreSQL. A backend's tests call Run; nothing else imports
// storetest.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/store"
)

// Run runs the suite as subtests of t.
//
// open returns a new handle on the calling test's database, as a separate
// process would open it: the first call with a given t creates an empty
// database for that test; later calls with the same t open further handles
// on the same database. The suite closes the handles it opens (some before
// the test ends, to stand for a process that has gone); open may register
// cleanups of its own with t.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, h *harness)
	}{
		{"Journal/BeginGet", testBeginGet},
		{"Journal/BeginDefaultTime", testBeginDefaultTime},
		{"Journal/BeginRefuses", testBeginRefuses},
		{"Journal/ExactlyOneOutcome", testExactlyOneOutcome},
		{"Journal/EndRefuses", testEndRefuses},
		{"Journal/EndRace", testEndRace},
		{"Journal/EndLater", testEndLater},
		{"Journal/BeginLater", testBeginLater},
		{"Journal/Records", testRecords},
		{"Journal/RecoverOpen", testRecoverOpen},
		{"Journal/Resolve", testResolve},
		{"Journal/ResolveRace", testResolveRace},
		{"Journal/LateAnswer", testLateAnswer},
		{"Journal/RecordsByCallID", testRecordsByCallID},
		{"Approvals/CreateGet", testApprovalCreateGet},
		{"Approvals/CreateRefuses", testApprovalCreateRefuses},
		{"Approvals/Lifecycle", testApprovalLifecycle},
		{"Approvals/Expiry", testApprovalExpiry},
		{"Approvals/DigestBinding", testApprovalDigestBinding},
		{"Approvals/SingleUseRace", testApprovalSingleUseRace},
		{"Approvals/PrincipalBinding", testApprovalPrincipalBinding},
		{"Approvals/PrincipalRace", testApprovalPrincipalRace},
		{"Approvals/List", testApprovalList},
		{"Approvals/Denial", testApprovalDenial},
		{"Approvals/DenialPrincipal", testApprovalDenialPrincipal},
		{"Rules/RememberGet", testRuleRememberGet},
		{"Rules/Refuses", testRuleRefuses},
		{"Rules/Binding", testRuleBinding},
		{"Rules/ListForget", testRuleListForget},
		{"Audit/AppendEvents", testAuditAppendEvents},
		{"Audit/Tail", testAuditTail},
		{"Audit/DefaultTime", testAuditDefaultTime},
		{"Audit/Refuses", testAuditRefuses},
		{"Audit/AppendBatch", testAuditAppendBatch},
		{"Audit/ChainBatches", testAuditChainBatches},
		{"Audit/ChainReopen", testAuditChainReopen},
		{"Audit/ChainConcurrent", testAuditChainConcurrent},
		{"ToolLists", testToolLists},
		{"Tasks/Hold", testTaskHold},
		{"Tasks/Refuses", testTaskRefuses},
		{"Tasks/Drop", testTaskDrop},
		{"Tasks/Records", testTaskRecords},
		{"Tasks/HoldRace", testTaskHoldRace},
		{"Runs/SaveGet", testRunSaveGet},
		{"Runs/Replace", testRunReplace},
		{"Runs/SaveRelaxed", testRunSaveRelaxed},
		{"Runs/Refuses", testRunRefuses},
		{"Runs/List", testRunList},
		{"Runs/NotFound", testRunNotFound},
		{"Runs/Concurrent", testRunConcurrent},
		{"Inputs/AskAnswer", testInputAskAnswer},
		{"Inputs/Refuses", testInputRefuses},
		{"Inputs/Race", testInputRace},
		{"Jobs/CreateGet", testJobCreateGet},
		{"Jobs/Refuses", testJobRefuses},
		{"Jobs/Update", testJobUpdate},
		{"Jobs/UpdateRace", testJobUpdateRace},
		{"Jobs/Expiry", testJobExpiry},
		{"Jobs/List", testJobList},
		{"Jobs/Recover", testJobRecover},
		{"Jobs/LostOnRead", testJobLostOnRead},
		{"Contract/RecoveryJSON", testRecoveryJSON},
		{"Contract/ApprovalJSON", testApprovalJSON},
		{"Contract/RuleJSON", testRuleJSON},
		{"Contract/AuditJSON", testAuditJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, &harness{t: t, open: open})
		})
	}
}

// A harness opens handles on one test's database and closes them.
type harness struct {
	t    *testing.T
	open func(t *testing.T) store.Store
}

// handle is a Store that the suite may close early.
type handle struct {
	store.Store
	once sync.Once
	err  error
}

func (h *handle) Close() error {
	h.once.Do(func() { h.err = h.Store.Close() })
	return h.err
}

// store opens a new handle, closed when the test ends.
func (h *harness) store() *handle {
	h.t.Helper()
	s := h.open(h.t)
	if s == nil {
		h.t.Fatal("open returned a nil Store")
	}
	hd := &handle{Store: s}
	h.t.Cleanup(func() {
		if err := hd.Close(); err != nil {
			h.t.Errorf("Close: %v", err)
		}
	})
	return hd
}

// part returns a new handle as the part T of a store that a backend may
// implement besides Store (Runs, Tasks, Inputs), failing the test if the
// backend does not. Jobs, which a backend may leave out, skip instead
// (harness.jobs).
func part[T any](h *harness) T {
	h.t.Helper()
	s := h.store()
	p, ok := s.Store.(T)
	if !ok {
		h.t.Fatalf("%T does not implement %v", s.Store, reflect.TypeFor[T]())
	}
	return p
}

// parts returns n new handles as the part T, for a race between handles.
func parts[T any](h *harness, n int) []T {
	h.t.Helper()
	out := make([]T, n)
	for i := range out {
		out[i] = part[T](h)
	}
	return out
}

// base is a time in the past with a microsecond part, as stores keep it.
func base() time.Time {
	return store.UTC(time.Now().Add(-24 * time.Hour)).Truncate(time.Second).Add(123456 * time.Microsecond)
}

// intent returns a complete intent with the given id and creation time.
func intent(id string, created time.Time) store.Intent {
	return store.Intent{
		ID:         id,
		CallID:     "call_" + id,
		Server:     "fs",
		Tool:       "fs__write_file",
		RemoteTool: "write_file",
		ArgsHash:   "sha256:" + id,
		Arguments:  json.RawMessage(`{"content":"[REDACTED:secret]","path":"notes/` + id + `.txt"}`),
		Snapshot:   "snap_1",
		Effect:     "write",
		Idempotent: false,
		Tenant:     "acme",
		User:       "ada",
		CreatedAt:  created,
	}
}

// approval returns a complete approval with the given id and digest,
// created at created and expiring an hour later.
func approval(id, digest string, created time.Time) store.Approval {
	return store.Approval{
		ID:         id,
		Server:     "fs",
		Tool:       "fs__write_file",
		Digest:     digest,
		Summary:    "write_file path=src/a.go",
		Target:     "fs-server --root /srv",
		Definition: "def_" + digest,
		CreatedAt:  created,
		ExpiresAt:  created.Add(time.Hour),
		Tenant:     "acme",
		User:       "ada",
	}
}

// rule returns a complete remembered rule with the given id and
// definition, for acme/ada, created at created.
func rule(id, definition string, created time.Time) store.AllowRule {
	return store.AllowRule{
		ID:         id,
		Server:     "fs",
		Tool:       "fs__write_file",
		Definition: definition,
		Tenant:     "acme",
		User:       "ada",
		CreatedAt:  created,
		CreatedBy:  "ada",
		Approval:   "apr_" + id,
	}
}

// PerTest returns a function that calls create once for each test that
// asks, and gives that test what it made every time after: the database
// that every handle a backend's open gives one test is opened on.
func PerTest[T any](create func(t *testing.T) T) func(t *testing.T) T {
	var mu sync.Mutex
	made := map[*testing.T]T{}
	return func(t *testing.T) T {
		mu.Lock()
		defer mu.Unlock()
		v, ok := made[t]
		if !ok {
			v = create(t)
			made[t] = v
		}
		return v
	}
}

// A flaw is a change that makes a record unfit to be written, named for
// messages.
type flaw[T any] struct {
	name   string
	change func(*T)
}

// refused checks that write refuses valid with each of flaws; what names
// the write and the record in messages ("Begin of an intent").
func refused[T any](t *testing.T, what string, valid T, write func(T) error, flaws []flaw[T]) {
	t.Helper()
	for _, f := range flaws {
		bad := valid
		f.change(&bad)
		if err := write(bad); err == nil {
			t.Errorf("%s with %s: got nil error", what, f.name)
		}
	}
}

// idsOf returns the id of each of xs, as id reads it, in order: an empty
// list, not nil, for none.
func idsOf[T any](xs []T, id func(T) string) []string {
	out := []string{}
	for _, x := range xs {
		out = append(out, id(x))
	}
	return out
}

// A listCase is a filter and the ids, in order, that a listing by it
// returns.
type listCase[F any] struct {
	name string
	f    F
	want []string
}

// checkLists lists, by list, with the filter of each case, and compares
// the ids of what it returns, as ids reads them, with the case's; what
// names list in messages.
func checkLists[F, T any](t *testing.T, what string, list func(context.Context, F) ([]T, error), ids func([]T) []string, cases []listCase[F]) {
	t.Helper()
	for _, tc := range cases {
		got, err := list(t.Context(), tc.f)
		if err != nil {
			t.Fatalf("%s(%s): %v", what, tc.name, err)
		}
		if diff := cmp.Diff(tc.want, ids(got)); diff != "" {
			t.Errorf("%s(%s) (-want +got):\n%s", what, tc.name, diff)
		}
	}
}

// oneWins checks that, of errs from racing calls that what names, one is
// nil and the others match lost, and returns the index of the nil one.
func oneWins(t *testing.T, errs []error, lost error, what string) int {
	t.Helper()
	ok, matched := count(t, errs, lost)
	if ok != 1 || matched != len(errs)-1 {
		t.Fatalf("%d racing %s: got %d nil and %d %v, want 1 and %d", len(errs), what, ok, matched, lost, len(errs)-1)
	}
	for i, err := range errs {
		if err == nil {
			return i
		}
	}
	return -1
}

// Race runs f in n goroutines at once and returns their errors. A
// backend's own tests race its handles with it too.
func Race(n int, f func(i int) error) []error {
	errs := make([]error, n)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Go(func() {
			start.Wait()
			errs[i] = f(i)
		})
	}
	start.Done()
	done.Wait()
	return errs
}

// count returns how many errors are nil and how many match target; it
// reports any other error.
func count(t *testing.T, errs []error, target error) (ok, matched int) {
	t.Helper()
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, target):
			matched++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	return ok, matched
}
