// Package store defines what Airlock keeps durably about calls: the
// write-ahead journal of intents and outcomes (with the recovery records a
// person resolves), approval requests, and the audit trail. It holds the
// interfaces and the types they exchange; backends live in sub-packages
// (store/sqlite for one host, a PostgreSQL backend for several replicas),
// and store/storetest is the one conformance suite every backend passes.
// A backend that several processes share may also implement Leases, the
// places under limits that those processes count together, and Tasks, the
// records of every process's tasks.
//
// The interfaces are shaped by their consumers: the call pipeline writes
// intents, outcomes, approvals and events; the CLI lists and resolves them.
// A store never redacts: whatever reaches it must already be free of secrets
// (see internal/redact), except approval digests and argument hashes, which
// are one-way.
//
// Times are kept to the microsecond and returned in UTC.
//
// The root airlock package, the CLI and backends import store.
package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"
)

var (
	// ErrNotFound reports that no record, approval or usable grant matches.
	ErrNotFound = errors.New("not found")
	// ErrConflict reports a change that the current state forbids: an
	// intent that has already ended or a record already resolved, an
	// approval already decided or expired, or an id that is already taken.
	ErrConflict = errors.New("conflict")
)

// A Store bundles the three parts a host needs. Implementations are safe for
// concurrent use by several goroutines and by several processes sharing one
// database.
type Store interface {
	Journal() Journal
	Approvals() Approvals
	Audit() Audit
	ToolLists() ToolLists
	// Close releases the store. Intents this store began and did not end
	// stay open, for RecoverOpen (in this or another process) to end as
	// unknown.
	Close() error
}

// NewID returns prefix followed by 26 random characters of lowercase hex
// (104 bits), for intent and approval ids such as "rec_…" and "apr_…".
func NewID(prefix string) string {
	var b [13]byte
	rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return prefix + hex.EncodeToString(b[:])
}

// UTC drops what a store does not keep of t: the monotonic clock reading,
// the location and everything below a microsecond. Backends store and
// return UTC(t); tests compare against it.
func UTC(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}

// A Journal is the write-ahead log of calls that may change something, and
// the recovery records built from it.
//
// Every intent ends in exactly one outcome. An intent left open by a
// process that is gone is ended as OutcomeUnknown by RecoverOpen, and a
// person then says with Resolve whether it happened. The pipeline never
// sends a call whose intent it could not Begin.
type Journal interface {
	// Begin records that a call is about to be sent. The intent is durable
	// (committed and synced to disk) when Begin returns nil; an error means
	// the call must not be sent. A taken id is ErrConflict. A zero
	// CreatedAt is set to the current time.
	Begin(ctx context.Context, in Intent) error
	// End records the outcome of the intent with the given id, durably.
	// outcome is one of OutcomeSucceeded, OutcomeFailed, OutcomeRejected and
	// OutcomeUnknown; detail says why, for a person. Any outcome but
	// OutcomeUnknown drops the intent's Arguments: they are kept for the
	// person who finds out whether a call took effect, and nobody needs to
	// once its outcome is known. An intent that has already ended is
	// ErrConflict; an unknown id is ErrNotFound.
	End(ctx context.Context, id string, outcome Outcome, detail string) error
	// RecoverOpen ends as OutcomeUnknown, at now, every open intent whose
	// writer is gone: its process exited or crashed, or its Store was
	// closed. Intents of live writers (this Store and stores in other
	// running processes) stay open. It returns how many intents it ended.
	RecoverOpen(ctx context.Context, now time.Time) (int, error)
	// Records lists journal records, oldest first (by CreatedAt, then in
	// the order they were begun).
	Records(ctx context.Context, f RecordFilter) ([]Record, error)
	// Get returns the record with the given id, or ErrNotFound.
	Get(ctx context.Context, id string) (Record, error)
	// Resolve records a person's finding about an unknown outcome: whether
	// the call was applied. Only OutcomeUnknown records can be resolved,
	// and only once; anything else is ErrConflict.
	Resolve(ctx context.Context, id string, r Resolution, note, by string) error
	// LateAnswer keeps, as evidence for the person resolving it, what the
	// server answered to an OutcomeUnknown record's call after the host
	// had stopped waiting (answer says it, without secrets). It changes
	// neither the outcome nor a resolution. Only the first late answer is
	// kept: a record that has one, or whose outcome is not unknown, is
	// ErrConflict; an unknown id is ErrNotFound.
	LateAnswer(ctx context.Context, id, answer string, at time.Time) error
}

// Approvals keeps approval requests and the answers a person asked to be
// remembered. A grant is bound to an action digest and to the principal
// (tenant and user) the request was made for, and is used at most once; a
// denial holds for that digest and principal until the approval TTL has
// passed; a remembered rule (AllowRule) is bound to a tool's definition and
// a principal.
type Approvals interface {
	// Create stores a new request with status pending (a.Status is
	// ignored). ID, Digest and ExpiresAt are required; a zero CreatedAt is
	// set to the current time. A taken id is ErrConflict.
	Create(ctx context.Context, a Approval) error
	// Get returns the approval with the given id, or ErrNotFound. Its
	// Status is ApprovalExpired if it was pending or granted and its
	// ExpiresAt has passed.
	Get(ctx context.Context, id string) (Approval, error)
	// List returns approvals, oldest first.
	List(ctx context.Context, f ApprovalFilter) ([]Approval, error)
	// Decide grants or denies a pending request, once. Granting a request
	// that has expired, or deciding one that is not pending, is
	// ErrConflict.
	Decide(ctx context.Context, id string, grant bool, by, note string) error
	// Consume takes one granted, unused approval for digest, requested for
	// exactly this tenant and user, that has not expired at now, marks it
	// used and returns it. Another principal's grant is never taken, even
	// for the same digest. Of any number of concurrent callers, in any
	// number of processes, exactly one gets a given grant. No such grant
	// is ErrNotFound.
	Consume(ctx context.Context, digest, tenant, user string, now time.Time) (Approval, error)
	// Denial returns the request for digest, asked for exactly this tenant
	// and user, that was denied most recently, if that was at or after
	// since; a call with that digest is then refused without asking again.
	// Another principal's denial is never returned. None is ErrNotFound.
	Denial(ctx context.Context, digest, tenant, user string, since time.Time) (Approval, error)

	// Remember stores a rule. ID, Server, Tool, Definition, Tenant and
	// User are required; a zero CreatedAt is set to the current time. A
	// taken id, or a rule for the same definition, tenant and user, is
	// ErrConflict.
	Remember(ctx context.Context, r AllowRule) error
	// Rule returns the rule with the given id, or ErrNotFound.
	Rule(ctx context.Context, id string) (AllowRule, error)
	// Rules lists the rules f selects, oldest first.
	Rules(ctx context.Context, f RuleFilter) ([]AllowRule, error)
	// Remembered returns the rule for definition, remembered for exactly
	// this tenant and user, or ErrNotFound.
	Remembered(ctx context.Context, definition, tenant, user string) (AllowRule, error)
	// Forget deletes the rule with the given id; an unknown id is
	// ErrNotFound.
	Forget(ctx context.Context, id string) error
}

// Audit is the append-only trail of what the host did. It is
// tamper-evident: its events form one chain (see ChainLink), whoever
// appends them.
type Audit interface {
	// Append adds events, in order, in one transaction: all of them or
	// none. A zero Time is set to the current time. An event that Check
	// refuses (no name, or an extra field with one of the fixed names; see
	// Event) fails the call before anything is written. The host writes
	// its trail in the background, in batches: one sync for many events
	// keeps calls from waiting on the disk.
	//
	// In the same transaction Append links each event to the one before it
	// (ChainKey.Next, from the link ChainKey.Base chooses) and seals the
	// new head (ChainKey.Head), so that appends from any number of
	// processes make one linear chain. The first Append creates the key if
	// the trail has none.
	Append(ctx context.Context, events ...Event) error
	// Events returns the events at or after since, oldest first (by Time,
	// then in the order they were appended), at most limit of them (all
	// if limit <= 0).
	Events(ctx context.Context, since time.Time, limit int) ([]Event, error)
	// Tail returns the newest events, as tail(1) does lines: of the events
	// at or after since that were appended after position after (0: from
	// the first), the newest limit (all if limit <= 0), oldest first (by
	// Time, then in the order they were appended). The page says how many
	// it left out and where to go on from: Tail with after = page.Next
	// returns only events appended since, which is how a reader follows
	// the trail.
	Tail(ctx context.Context, since time.Time, after int64, limit int) (EventPage, error)
	// Verify walks the whole trail, in the order it was appended, with a
	// consistent view of it, and reports the first break (VerifyChain). A
	// chained trail whose key is missing is ErrNoChainKey.
	Verify(ctx context.Context) (ChainReport, error)
}
