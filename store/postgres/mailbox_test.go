package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/airlockhq/airlock/store"
)

// TestMailbox: a message left through one handle is collected once
// through another; a box holds one message; an expired one is gone.
func TestMailbox(t *testing.T) {
	a, b := twoReplicas(t)
	ctx := t.Context()

	if err := a.Post(ctx, "box-1", []byte("hello"), time.Minute); err != nil {
		t.Fatalf("Post: %v", err)
	}
	if err := a.Post(ctx, "box-1", []byte("again"), time.Minute); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Post to a full box: %v, want ErrConflict", err)
	}
	if got, err := b.Collect(ctx, "box-1"); err != nil || string(got) != "hello" {
		t.Fatalf("Collect: %q, %v", got, err)
	}
	if _, err := b.Collect(ctx, "box-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Collect twice: %v, want ErrNotFound", err)
	}
	if _, err := b.Collect(ctx, "box-none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Collect of an empty box: %v, want ErrNotFound", err)
	}
	if err := a.Post(ctx, "box-2", []byte("soon gone"), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if _, err := b.Collect(ctx, "box-2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Collect of an expired message: %v, want ErrNotFound", err)
	}
}
