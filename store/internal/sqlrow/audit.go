package sqlrow

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/airlockhq/airlock/store"
)

// EventColumns are the columns of an audit event that Event reads, in its
// order.
const EventColumns = `time, event, server, tool, snapshot, class, duration_ms, fields`

// Event reads an audit event, from the columns EventColumns names.
func Event[T any](row Row, at func(T) time.Time) (store.Event, error) {
	var (
		e      store.Event
		t      T
		fields *string
	)
	if err := row.Scan(&t, &e.Event, &e.Server, &e.Tool, &e.Snapshot, &e.Class, &e.DurationMS, &fields); err != nil {
		return store.Event{}, err
	}
	e.Time = at(t)
	if fields != nil {
		if err := json.Unmarshal([]byte(*fields), &e.Fields); err != nil {
			return store.Event{}, fmt.Errorf("event %s has malformed fields: %w", e.Event, err)
		}
	}
	return e, nil
}

// NewestEvents is a query of the events that where selects, the newest
// that limit (a placeholder) keeps, put oldest first, from the columns
// EventColumns names.
func NewestEvents(where, limit string) string {
	return `
SELECT ` + EventColumns + ` FROM (
	SELECT seq, ` + EventColumns + ` FROM events ` + where + `
	ORDER BY time DESC, seq DESC
	LIMIT ` + limit + `
) newest
ORDER BY time, seq`
}

// Tail reads a page of the audit trail as store.Audit's Tail does, of n
// events (all if n <= 0) appended after the position after. It reads the
// newest position first, by newest, then only events up to it, so that
// the page and Next agree without a transaction: an event appended
// meanwhile has a greater position and comes with the next page. events
// reads the page's events up to a position, and count how many events
// the page selects up to it, to say how many it left out.
func Tail(after int64, n int, newest func() (int64, error), events func(upTo int64) ([]store.Event, error), count func(upTo int64) (int, error)) (store.EventPage, error) {
	page := store.EventPage{Next: after}
	upTo, err := newest()
	if err != nil {
		return page, fmt.Errorf("read the audit trail: %w", err)
	}
	if upTo <= after {
		return page, nil
	}
	page.Next = upTo
	if page.Events, err = events(upTo); err != nil {
		return page, fmt.Errorf("read the audit trail: %w", err)
	}
	if n > 0 && len(page.Events) == n {
		all, err := count(upTo)
		if err != nil {
			return page, fmt.Errorf("read the audit trail: %w", err)
		}
		page.Omitted = all - n
	}
	return page, nil
}

// HeadQuery selects the audit trail's head, for Head.
const HeadQuery = `SELECT n, sum, seal FROM audit_head WHERE id = 1`

// Head reads the audit trail's head from row, a row of HeadQuery: nil if
// the trail has none, which the driver says with noRows.
func Head(row Row, noRows error) (*store.ChainHead, error) {
	var h store.ChainHead
	err := row.Scan(&h.N, &h.Sum, &h.Seal)
	if errors.Is(err, noRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &h, nil
}

// LastLinkQuery selects the newest link of the audit trail, for LastLink.
const LastLinkQuery = `SELECT chain_n, chain_sum FROM events WHERE chain_n IS NOT NULL ORDER BY seq DESC LIMIT 1`

// LastLink reads the audit trail's newest link from row, a row of
// LastLinkQuery: the zero link if no event has one, which the driver says
// with noRows.
func LastLink(row Row, noRows error) (store.ChainLink, error) {
	var last store.ChainLink
	err := row.Scan(&last.N, &last.Sum)
	if errors.Is(err, noRows) {
		return store.ChainLink{}, nil
	}
	return last, err
}

// Append is the part of an audit append that every backend does alike:
// it checks and encodes events (store.StoreEvents) before anything is
// written, and reads the audit trail's key by key, which makes one if
// there is none; then write appends the encoded events, linked with the
// key, at now. An append of no events writes nothing.
func Append(events []store.Event, key func(create bool) (store.ChainKey, error), write func(key store.ChainKey, rows []store.StoredEvent, now time.Time) error) error {
	if len(events) == 0 {
		return nil
	}
	now := time.Now()
	rows, err := store.StoreEvents(events, now)
	if err != nil {
		return fmt.Errorf("append: %w", err)
	}
	k, err := key(true)
	if err != nil {
		return fmt.Errorf("append: cannot write the audit trail: %w", err)
	}
	return write(k, rows, now)
}

// Base reads the audit trail's head and newest link by queryRow, which
// runs a query of one row in the transaction that appends rows, and
// returns the link rows extend (store.ChainKey.Base) and rows to append:
// the event that says the chain was broken first, if it was; begun is
// whether the trail was chained before (store.ChainMark.Begun). noRows is
// the driver's error for no row.
func Base(key store.ChainKey, begun bool, queryRow func(query string) Row, noRows error, rows []store.StoredEvent, now time.Time) (store.ChainLink, []store.StoredEvent, error) {
	head, err := Head(queryRow(HeadQuery), noRows)
	if err != nil {
		return store.ChainLink{}, nil, err
	}
	last, err := LastLink(queryRow(LastLinkQuery), noRows)
	if err != nil {
		return store.ChainLink{}, nil, err
	}
	link, broken := key.Base(head, last, begun, now)
	if broken == nil {
		return link, rows, nil
	}
	r, err := store.StoreEvent(*broken, now)
	if err != nil {
		return store.ChainLink{}, nil, err
	}
	return link, append([]store.StoredEvent{r}, rows...), nil
}

// ChainQuery selects every audit event, in the order they were appended,
// with its link, for Verify.
const ChainQuery = `
SELECT seq, time, event, server, tool, snapshot, class, duration_ms, fields, chain_n, chain_prev, chain_sum
FROM events ORDER BY seq`

// chainEntries yields the entries of rows of ChainQuery for
// store.VerifyChain, then an error if reading them failed. The caller
// closes rows.
func chainEntries[T any](rows Rows, at func(T) time.Time) iter.Seq2[store.ChainEntry, error] {
	return func(yield func(store.ChainEntry, error) bool) {
		for rows.Next() {
			var (
				c      store.ChainEntry
				t      T
				fields *string
				n      *int64
				l      store.ChainLink
			)
			if err := rows.Scan(&c.Seq, &t, &c.Event.Event, &c.Event.Server, &c.Event.Tool, &c.Event.Snapshot,
				&c.Event.Class, &c.Event.DurationMS, &fields, &n, &l.Prev, &l.Sum); err != nil {
				yield(c, err)
				return
			}
			c.Event.Time = at(t)
			if fields != nil {
				c.Fields = []byte(*fields)
			}
			if n != nil {
				l.N = *n
				c.Link = &l
			}
			if !yield(c, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(store.ChainEntry{}, err)
		}
	}
}

// Verify checks the audit trail's chain, the rows of ChainQuery, against
// head with key, as store.VerifyChain does. Its errors begin "verify the
// audit trail"; that of a chain with no key to check it with says to
// restore the key file, from a backup, as restore says where it goes.
func Verify[T any](key store.ChainKey, head *store.ChainHead, begun bool, rows Rows, at func(T) time.Time, restore string) (store.ChainReport, error) {
	r, err := store.VerifyChain(key, chainEntries(rows, at), head, begun)
	if errors.Is(err, store.ErrNoChainKey) {
		return r, fmt.Errorf("verify the audit trail: %w: %s, from a backup; without it no link can be checked", err, restore)
	}
	if err != nil {
		return r, fmt.Errorf("verify the audit trail: %w", err)
	}
	return r, nil
}
