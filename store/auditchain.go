package store

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"iter"
	"sync"
	"time"
)

// The audit trail is tamper-evident: every event a backend appends carries
// a ChainLink, its place in one linear chain and an HMAC-SHA256, under the
// trail's ChainKey, over the event as stored and the link of the event
// before it. A backend computes the links inside the transaction that
// appends the events, so that writers in several processes extend one
// chain, and keeps a sealed ChainHead, the newest link, beside the events,
// so that deleting the newest events is noticed too. VerifyChain walks a
// trail and reports the first break.
//
// What this detects and what it cannot is in docs/cli.md (airlock audit
// verify): without the key, an event cannot be edited, deleted, reordered
// or inserted unnoticed, except that the newest events can be cut off
// together with the head if an older copy of the head is put back; with
// the key, anything can be rewritten.

// A ChainKey is the secret the audit trail's links are computed with.
type ChainKey []byte

// A ChainLink ties an event to the one before it.
type ChainLink struct {
	N    int64  // the event's place in the chain: 1 for the first
	Prev []byte // the Sum of event N-1; nil for the first
	Sum  []byte // HMAC-SHA256 over N, Prev and the event as stored
}

// A ChainHead is the record of the chain's newest link, kept apart from
// the events and sealed with the key: events deleted from the end of the
// trail leave the head pointing past them.
type ChainHead struct {
	N    int64
	Sum  []byte
	Seal []byte
}

// A ChainEntry is one event of the trail as a backend stored it, for
// VerifyChain.
type ChainEntry struct {
	Seq   int64 // the backend's order of appending
	Event Event // its Fields are not read: the link covers the stored text
	// Fields is the JSON text of the event's fields exactly as stored, nil
	// for none.
	Fields []byte
	Link   *ChainLink // nil: written before the trail was chained
}

// A BreakKind says how a chain is broken.
type BreakKind string

const (
	BreakChanged   BreakKind = "changed"   // an event or the head was edited
	BreakDeleted   BreakKind = "deleted"   // events are missing
	BreakReordered BreakKind = "reordered" // events are out of their order
	BreakInserted  BreakKind = "inserted"  // an event that Airlock did not append
)

// A ChainReport is what VerifyChain found.
type ChainReport struct {
	Intact    bool  `json:"intact"`
	Events    int64 `json:"events"`    // events in the trail
	Unchained int64 `json:"unchained"` // written before the trail was chained, ahead of the first link
	Verified  int64 `json:"verified"`  // chained events found in order, up to the break
	// Head is the newest verified event: keep its position and sum
	// elsewhere and compare, to notice the newest events cut off together
	// with the head record. Nil when no event is chained.
	Head  *ChainPoint `json:"head"`
	Break *ChainBreak `json:"break"` // the first break; nil when intact
}

// A ChainPoint names one event of the trail.
type ChainPoint struct {
	Seq      int64     `json:"seq"`      // the store's order of appending
	Position int64     `json:"position"` // the place in the chain the event claims (0: none)
	Sum      string    `json:"sum"`      // its link's sum in hex ("" when unchained)
	Time     time.Time `json:"time"`
	Event    string    `json:"event"`
	Server   string    `json:"server"`
	Tool     string    `json:"tool"`
}

// A ChainBreak is the first place the chain does not hold.
type ChainBreak struct {
	Kind BreakKind `json:"kind"`
	// At is the first event that does not follow the chain; for events
	// deleted from the end, the newest event left (nil if none is).
	At *ChainPoint `json:"at"`
	// MissingFrom and MissingTo are the positions of the events that are
	// missing (deleted) or out of their place (reordered); 0 otherwise.
	MissingFrom int64  `json:"missing_from,omitempty"`
	MissingTo   int64  `json:"missing_to,omitempty"`
	Detail      string `json:"detail"` // what was found, for a person
}

// EventChainBreak is the event a backend appends, ahead of the events it
// was asked to append, when the head record does not match the newest
// link (deleted, edited or rolled back): the break stays on record after
// new events are chained behind it. Its fields are "kind" (a BreakKind)
// and "detail".
const EventChainBreak = "audit_chain_break"

// ErrNoChainKey reports a chained trail with no key to check it with.
var ErrNoChainKey = errors.New("the trail is chained but its key is missing")

const (
	eventDomain = "airlock audit event v1\x00"
	headDomain  = "airlock audit head v1\x00"
)

// Next returns the link of e appended after prev (the zero ChainLink for
// the first event of a chain). fields is e.Fields' JSON text exactly as the
// backend stores it, nil for none: the link covers what is stored, to the
// microsecond of e.Time.
func (k ChainKey) Next(prev ChainLink, e Event, fields []byte) ChainLink {
	n := prev.N + 1
	return ChainLink{N: n, Prev: prev.Sum, Sum: k.sum(n, prev.Sum, e, fields)}
}

// Head returns the sealed head record for l, the newest link.
func (k ChainKey) Head(l ChainLink) ChainHead {
	return ChainHead{N: l.N, Sum: l.Sum, Seal: k.seal(l.N, l.Sum)}
}

func (k ChainKey) sum(n int64, prev []byte, e Event, fields []byte) []byte {
	m := k.keyed()
	defer macs.Put(m)
	// What the sum covers, in order; the fields, which are most of it,
	// are written to the MAC as they are rather than copied after the rest.
	b := append(m.buf[:0], eventDomain...)
	b = binary.BigEndian.AppendUint64(b, uint64(n))
	b = appendBytes(b, prev)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Time.UnixMicro()))
	for _, s := range [...]string{e.Event, e.Server, e.Tool, e.Snapshot, e.Class} {
		b = appendString(b, s)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(e.DurationMS))
	if fields == nil {
		b = append(b, 0)
	} else {
		b = binary.AppendUvarint(append(b, 1), uint64(len(fields)))
	}
	m.buf = b
	m.h.Write(b)
	m.h.Write(fields)
	return m.h.Sum(nil)
}

func (k ChainKey) seal(n int64, sum []byte) []byte {
	b := binary.BigEndian.AppendUint64([]byte(headDomain), uint64(n))
	return k.mac(appendBytes(b, sum))
}

// macs keeps keyed HMACs for reuse: a batch of events would otherwise
// set up the key once for each event it chains.
var macs sync.Pool // of *keyedMAC

type keyedMAC struct {
	key ChainKey
	h   hash.Hash
	buf []byte // room for what sum covers, but the fields
}

// keyed returns a reset HMAC under k, to be put back in macs.
func (k ChainKey) keyed() *keyedMAC {
	m, _ := macs.Get().(*keyedMAC)
	if m == nil || !bytes.Equal(m.key, k) {
		return &keyedMAC{key: k, h: hmac.New(sha256.New, k)}
	}
	m.h.Reset()
	return m
}

// mac returns the HMAC-SHA256 of b under k.
func (k ChainKey) mac(b []byte) []byte {
	m := k.keyed()
	defer macs.Put(m)
	m.h.Write(b)
	return m.h.Sum(nil)
}

// appendBytes appends p with its length in front, so that no two
// sequences of fields encode alike.
func appendBytes(b, p []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(p))), p...)
}

// appendString is appendBytes of a string.
func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// valid reports whether e's link is the one its key computes.
func (k ChainKey) valid(e ChainEntry) bool {
	l := e.Link
	return hmac.Equal(l.Sum, k.sum(l.N, l.Prev, e.Event, e.Fields))
}

// Base returns the link a backend's Append continues the chain from, given
// the head record (nil if there is none) and the newest chained event's
// link (the zero ChainLink if there is none), and whether the trail was
// chained before (ChainMark.Begun). When the two disagree, or a trail chained
// before has neither, it
// also returns the EventChainBreak event to append first, at now: the head
// was deleted, edited, or rolled back behind the events. A head ahead of
// the events (the newest events deleted) is continued from, so that the
// gap stays in the chain for VerifyChain to report.
func (k ChainKey) Base(head *ChainHead, last ChainLink, begun bool, now time.Time) (ChainLink, *Event) {
	if head != nil && hmac.Equal(head.Seal, k.seal(head.N, head.Sum)) && head.N > last.N {
		return ChainLink{N: head.N, Sum: head.Sum}, nil
	}
	kind, detail := k.headBreak(head, last, begun)
	if kind == "" {
		return last, nil
	}
	return last, &Event{Time: now, Event: EventChainBreak, Fields: map[string]any{"kind": string(kind), "detail": detail}}
}

// headBreak compares the head record with the newest verified link and
// says what is wrong, or returns "" if they agree. A trail with neither
// is new, unless it was chained before (begun).
func (k ChainKey) headBreak(head *ChainHead, last ChainLink, begun bool) (BreakKind, string) {
	switch {
	case head == nil && last.N == 0 && begun:
		return BreakDeleted, "the chain's head record is missing and no event is chained, though this trail was chained before (its key has the mark of it): the chain was stripped from the events, or the chained events were deleted with the head"
	case head == nil && last.N == 0:
		return "", ""
	case head == nil:
		return BreakDeleted, "the chain's head record is missing: the newest events may have been deleted with it"
	case !hmac.Equal(head.Seal, k.seal(head.N, head.Sum)):
		return BreakChanged, "the chain's head record does not match its seal: it was edited, or the audit key was replaced"
	case head.N > last.N:
		return BreakDeleted, fmt.Sprintf("the chain's head record says the trail goes on to #%d: %s deleted", head.N, events(last.N+1, head.N))
	case head.N < last.N:
		return BreakChanged, fmt.Sprintf("the chain's head record says the trail ends at #%d, before its newest event #%d: the head was rolled back", head.N, last.N)
	case !bytes.Equal(head.Sum, last.Sum):
		return BreakChanged, fmt.Sprintf("the chain's head record does not match the newest event #%d", last.N)
	}
	return "", ""
}

// events names the positions from to to.
func events(from, to int64) string {
	if from == to {
		return fmt.Sprintf("event #%d was", from)
	}
	return fmt.Sprintf("events #%d–#%d were", from, to)
}

// VerifyChain walks a trail's entries in the order they were appended and
// reports the first break, with the sealed head record (nil if there is
// none) and whether the trail was chained before (ChainMark.Begun).
// Events written before the trail was chained, ahead of the first chained
// one, are counted as unchained, not as a break. A chained entry
// or a head with a nil key is ErrNoChainKey; an error from entries is
// returned as it is.
func VerifyChain(key ChainKey, entries iter.Seq2[ChainEntry, error], head *ChainHead, begun bool) (ChainReport, error) {
	v := verifier{key: key, begun: begun}
	for e, err := range entries {
		if err != nil {
			return ChainReport{}, err
		}
		if v.add(e); v.err != nil {
			return ChainReport{}, v.err
		}
	}
	if key == nil && head != nil {
		return ChainReport{}, ErrNoChainKey
	}
	v.finish(head)
	v.r.Intact = v.r.Break == nil
	return v.r, nil
}

// A verifier is the state of one walk along a trail.
type verifier struct {
	key     ChainKey
	begun   bool // the trail was chained before (ChainMark.Begun)
	r       ChainReport
	err     error
	started bool      // a chained entry was seen
	last    ChainLink // the newest verified link
	// suspect is an entry whose sum does not match, until the entry after
	// it tells an inserted event (the chain goes on across it) from a
	// changed one.
	suspect *ChainEntry
	// moved is set while a gap may yet turn out to be events that come
	// later in the trail: reordered, not deleted.
	moved bool
}

func (v *verifier) add(e ChainEntry) {
	v.r.Events++
	switch {
	case v.suspect != nil:
		s := *v.suspect
		v.suspect = nil
		if e.Link != nil && e.Link.N == v.last.N+1 && bytes.Equal(e.Link.Prev, v.last.Sum) && v.key.valid(e) {
			v.fail(s, BreakInserted, fmt.Sprintf("its link does not match and the next event links across it to #%d: it was added to the trail", v.last.N))
		} else {
			v.fail(s, BreakChanged, "its content or link does not match its sum: it was edited, or the audit key is not the one it was written with")
		}
	case v.r.Break != nil:
		b := v.r.Break
		if v.moved && e.Link != nil && e.Link.N >= b.MissingFrom && e.Link.N <= b.MissingTo && v.key.valid(e) {
			b.Kind = BreakReordered
			b.Detail = fmt.Sprintf("%s not found before this event but later in the trail: the events were reordered", events(b.MissingFrom, b.MissingTo))
			v.moved = false
		}
	default:
		v.check(e)
	}
}

// check takes e while the chain holds.
func (v *verifier) check(e ChainEntry) {
	if e.Link == nil {
		if !v.started {
			v.r.Unchained++
			return
		}
		v.fail(e, BreakInserted, "it has no link although the events before it have: it was added to the trail")
		return
	}
	if v.key == nil {
		v.err = ErrNoChainKey
		return
	}
	v.started = true
	l := *e.Link
	switch {
	case !v.key.valid(e):
		v.suspect = &e
	case l.N > v.last.N+1:
		v.fail(e, BreakDeleted, events(v.last.N+1, l.N-1)+" deleted: the event links to a missing one")
		v.r.Break.MissingFrom, v.r.Break.MissingTo = v.last.N+1, l.N-1
		v.moved = true
	case l.N <= v.last.N:
		v.fail(e, BreakInserted, fmt.Sprintf("it repeats position #%d, which the trail already holds: it is a copy", l.N))
	case !bytes.Equal(l.Prev, v.last.Sum):
		v.fail(e, BreakChanged, fmt.Sprintf("it does not link to the event before it (#%d)", v.last.N))
	case e.Event.Event == EventChainBreak:
		var f struct{ Kind, Detail string }
		json.Unmarshal(e.Fields, &f)
		kind := BreakKind(f.Kind)
		if kind != BreakDeleted {
			kind = BreakChanged
		}
		v.fail(e, kind, "when this event was written, "+f.Detail)
	default:
		v.last = l
		v.r.Verified++
		v.r.Head = point(e)
	}
}

// finish ends the walk with the head record.
func (v *verifier) finish(head *ChainHead) {
	if v.suspect != nil {
		s := *v.suspect
		if head != nil && hmac.Equal(head.Seal, v.key.seal(head.N, head.Sum)) && head.N == v.last.N {
			v.fail(s, BreakInserted, fmt.Sprintf("it comes after the chain's head (#%d) and its link does not match: it was added to the trail", head.N))
		} else {
			v.fail(s, BreakChanged, "its content or link does not match its sum: it was edited, or the audit key is not the one it was written with")
		}
		return
	}
	if v.r.Break != nil {
		return
	}
	kind, detail := v.key.headBreak(head, v.last, v.begun)
	if kind == "" {
		return
	}
	v.r.Break = &ChainBreak{Kind: kind, At: v.r.Head, Detail: detail}
	if kind == BreakDeleted && head != nil {
		v.r.Break.MissingFrom, v.r.Break.MissingTo = v.last.N+1, head.N
	}
}

func (v *verifier) fail(e ChainEntry, kind BreakKind, detail string) {
	v.r.Break = &ChainBreak{Kind: kind, At: point(e), Detail: detail}
}

func point(e ChainEntry) *ChainPoint {
	p := &ChainPoint{Seq: e.Seq, Time: e.Event.Time, Event: e.Event.Event, Server: e.Event.Server, Tool: e.Event.Tool}
	if e.Link != nil {
		p.Position, p.Sum = e.Link.N, hex.EncodeToString(e.Link.Sum)
	}
	return p
}
