package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/airlockhq/airlock/store"
)

// chainEvents returns n events as the host writes them, the first at t0.
func chainEvents(t0 time.Time, n int, tag string) []store.Event {
	out := make([]store.Event, n)
	for i := range out {
		out[i] = store.Event{Time: t0.Add(time.Duration(i) * time.Millisecond), Event: store.EventResult, Server: "fs",
			Tool: "fs__read_file", Snapshot: "snap_1", Class: "ok", DurationMS: int64(i),
			Fields: map[string]any{"args_hash": "sha256:" + tag, "n": i}}
	}
	return out
}

// verifyIntact verifies a's chain and checks that it holds n chained
// events and nothing else.
func verifyIntact(t *testing.T, a store.Audit, n int64) store.ChainReport {
	t.Helper()
	r, err := a.Verify(t.Context())
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if b := r.Break; b != nil {
		t.Fatalf("Verify of an untouched trail: got a break (%s at %+v: %s), want intact", b.Kind, b.At, b.Detail)
	}
	if !r.Intact {
		t.Error("Verify: Intact is false without a break")
	}
	if r.Events != n || r.Verified != n || r.Unchained != 0 {
		t.Errorf("Verify: got %d events, %d verified, %d unchained; want %d, %d, 0", r.Events, r.Verified, r.Unchained, n, n)
	}
	switch {
	case n == 0 && r.Head != nil:
		t.Errorf("Verify of an empty trail: got head %+v, want none", r.Head)
	case n > 0 && (r.Head == nil || r.Head.Position != n || len(r.Head.Sum) != 64):
		t.Errorf("Verify: got head %+v, want position %d with a sum", r.Head, n)
	}
	return r
}

// testAuditChainBatches checks that batches of any size, events without a
// time, and batches that are refused leave one intact chain.
func testAuditChainBatches(t *testing.T, h *harness) {
	a := h.store().Audit()
	verifyIntact(t, a, 0)
	t0 := base()
	total := int64(0)
	for i, n := range []int{1, 5, 1, 64, 2} {
		batch := chainEvents(t0.Add(time.Duration(i)*time.Second), n, fmt.Sprint(i))
		batch[0].Time = time.Time{} // stamped by Append
		if err := a.Append(t.Context(), batch...); err != nil {
			t.Fatalf("Append: %v", err)
		}
		total += int64(n)
		if i == 2 {
			bad := append(chainEvents(t0, 2, "bad"), store.Event{Time: t0})
			if err := a.Append(t.Context(), bad...); err == nil {
				t.Fatal("Append of a batch with an event without a name: got nil error")
			}
		}
	}
	first := verifyIntact(t, a, total)
	second := verifyIntact(t, h.store().Audit(), total)
	if *first.Head != *second.Head {
		t.Errorf("two handles report different heads: %+v and %+v", first.Head, second.Head)
	}
}

// testAuditChainReopen checks that a chain goes on across closing the
// store and opening it again.
func testAuditChainReopen(t *testing.T, h *harness) {
	t0 := base()
	for i := range 3 {
		s := h.store()
		if err := s.Audit().Append(t.Context(), chainEvents(t0.Add(time.Duration(i)*time.Second), 3, fmt.Sprint(i))...); err != nil {
			t.Fatalf("Append: %v", err)
		}
		verifyIntact(t, s.Audit(), int64(3*(i+1)))
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
}

// testAuditChainConcurrent checks that stores appending at once (as
// processes sharing a database do) make one linear chain.
func testAuditChainConcurrent(t *testing.T, h *harness) {
	const stores, writers, batches, size = 2, 4, 10, 3
	var trails []store.Audit
	for range stores {
		trails = append(trails, h.store().Audit())
	}
	t0 := base()
	errs := Race(stores*writers, func(i int) error {
		for b := range batches {
			tag := fmt.Sprintf("%d-%d", i, b)
			if err := trails[i%stores].Append(t.Context(), chainEvents(t0, size, tag)...); err != nil {
				return err
			}
		}
		return nil
	})
	for _, err := range errs {
		if err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	verifyIntact(t, h.store().Audit(), stores*writers*batches*size)
}
