package store

import (
	"fmt"
	"time"
)

// What every backend does alike, so that backends differ only in how they
// talk to their database: events encoded as the chain covers them, and the
// errors that say why a conditional change found nothing to change, in
// words that do not depend on the backend.

// A StoredEvent is an event as a backend stores it and its ChainLink
// covers it: Event.Time in UTC to the microsecond, and Event.Fields as
// JSON text.
type StoredEvent struct {
	Event Event
	// Fields is Event.Fields encoded as json.Marshal encodes them, byte for
	// byte; nil for none.
	Fields []byte
}

// StoreEvents checks events (Event.Check) and encodes them for a backend's
// Append; an event with no time gets now. One event refused refuses all.
func StoreEvents(events []Event, now time.Time) ([]StoredEvent, error) {
	out := make([]StoredEvent, len(events))
	for i, e := range events {
		s, err := StoreEvent(e, now)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// StoreEvent is StoreEvents for one event.
func StoreEvent(e Event, now time.Time) (StoredEvent, error) {
	if err := e.Check(); err != nil {
		return StoredEvent{}, err
	}
	var s StoredEvent
	if len(e.Fields) > 0 {
		b, err := encodeFields(e.Fields)
		if err != nil {
			return StoredEvent{}, fmt.Errorf("%s: %w", e.Event, err)
		}
		s.Fields = b
	}
	if e.Time.IsZero() {
		e.Time = now
	}
	e.Time = UTC(e.Time)
	s.Event = e
	return s, nil
}

// Created returns when Create records a as created, its CreatedAt or else
// now, or the error Create fails with: what Check reports, or an approval
// without a creation time that expires before now.
func (a Approval) Created(now time.Time) (time.Time, error) {
	if err := a.Check(); err != nil {
		return time.Time{}, fmt.Errorf("create approval: %w", err)
	}
	if !a.CreatedAt.IsZero() {
		return a.CreatedAt, nil
	}
	if !a.ExpiresAt.After(now) {
		return time.Time{}, fmt.Errorf("create approval %s: it expires before it is created", a.ID)
	}
	return now, nil
}

// Created returns when Begin records in as created, its CreatedAt or else
// now, or the error Begin fails with: what Check reports.
func (in Intent) Created(now time.Time) (time.Time, error) {
	if err := in.Check(); err != nil {
		return time.Time{}, fmt.Errorf("begin: %w", err)
	}
	return createdOr(in.CreatedAt, now), nil
}

// Created returns when Remember records r as created, its CreatedAt or
// else now, or the error Remember fails with: what Check reports.
func (r AllowRule) Created(now time.Time) (time.Time, error) {
	if err := r.Check(); err != nil {
		return time.Time{}, fmt.Errorf("remember: %w", err)
	}
	return createdOr(r.CreatedAt, now), nil
}

// Fetched returns when Put records l as fetched, its FetchedAt or else
// now, or the error Put fails with: a list without a key or tools.
func (l ToolList) Fetched(now time.Time) (time.Time, error) {
	if l.Key == "" || len(l.Tools) == 0 {
		return time.Time{}, fmt.Errorf("tool list without a key or tools")
	}
	return createdOr(l.FetchedAt, now), nil
}

// Unexpired returns l as ToolLists.Get returns it at now: ErrNotFound
// once it has expired.
func (l ToolList) Unexpired(now time.Time) (ToolList, error) {
	if !l.ExpiresAt.IsZero() && !now.Before(l.ExpiresAt) {
		return ToolList{}, fmt.Errorf("tool list %s has expired: %w", l.Key, ErrNotFound)
	}
	return l, nil
}

// createdOr is created, or now if created is zero.
func createdOr(created, now time.Time) time.Time {
	if created.IsZero() {
		return now
	}
	return created
}

// NotEnded is the error of a Journal.End that found its intent no longer
// open, given what Get then returned for it.
func NotEnded(r Record, err error) error {
	if err != nil {
		return fmt.Errorf("end: %w", err)
	}
	return fmt.Errorf("end %s: it already ended %s: %w", r.ID, r.Status, ErrConflict)
}

// NotResolved is the error of a Journal.Resolve that found its record not
// unresolved and unknown, given what Get then returned for it.
func NotResolved(r Record, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("resolve: %w", err)
	case r.Resolved:
		return fmt.Errorf("resolve %s: it was already resolved as %s: %w", r.ID, r.Resolution, ErrConflict)
	}
	return fmt.Errorf("resolve %s: its outcome is %s, not unknown: %w", r.ID, r.Status, ErrConflict)
}

// NoLateAnswer is the error of a Journal.LateAnswer that found its record
// not unknown or answered already, given what Get then returned for it.
func NoLateAnswer(r Record, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("late answer: %w", err)
	case !r.LateAnswerAt.IsZero():
		return fmt.Errorf("late answer %s: it already has one: %w", r.ID, ErrConflict)
	}
	return fmt.Errorf("late answer %s: its outcome is %s, not unknown: %w", r.ID, r.Status, ErrConflict)
}

// NotDecided is the error of an Approvals.Decide ("grant" or "deny", verb
// says) that found its request not pending, or expired, given what Get
// then returned for it.
func NotDecided(verb string, a Approval, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", verb, err)
	}
	return fmt.Errorf("%s approval %s: it is %s: %w", verb, a.ID, a.Status, ErrConflict)
}
