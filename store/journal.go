package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// An Intent is what the pipeline is about to send, written before it is
// sent. It holds the arguments' hash and their redacted form, never a
// secret.
type Intent struct {
	// ID names the intent and, once its outcome is unknown, the recovery
	// record ("recovery_id").
	ID string `json:"id"`
	// CallID is the provider's tool call id, if the call came from a model
	// turn that had one.
	CallID     string `json:"call_id,omitempty"`
	Server     string `json:"server"`
	Tool       string `json:"tool"`        // the local name the model used
	RemoteTool string `json:"remote_tool"` // the name on the server
	ArgsHash   string `json:"args_hash"`
	// Arguments are the call's arguments as JSON, for the person who
	// checks whether a call took effect: redacted by the host (no
	// secret_env value, nothing that looks like a credential), with what
	// a terminal would hide escaped, and long values cut (so they may not
	// hash to ArgsHash). They are kept while the intent is open and once
	// its outcome is unknown; any other outcome drops them (Journal.End).
	// Empty for records written before arguments were kept.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Snapshot  string          `json:"snapshot"`
	Effect    string          `json:"effect"` // the tool's effect under local policy: read, write or external
	// Idempotent is true when local policy (never the server) marks the
	// tool idempotent, so that an unknown outcome may be retried once.
	Idempotent bool      `json:"idempotent"`
	Tenant     string    `json:"tenant,omitempty"`
	User       string    `json:"user,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// Check reports what is missing from an intent that Begin would refuse.
func (in Intent) Check() error {
	switch {
	case in.ID == "":
		return fmt.Errorf("intent has no id")
	case in.Server == "":
		return fmt.Errorf("intent %s has no server", in.ID)
	case in.Tool == "":
		return fmt.Errorf("intent %s has no tool", in.ID)
	case len(in.Arguments) > 0 && !json.Valid(in.Arguments):
		return fmt.Errorf("intent %s: its arguments are not JSON", in.ID)
	}
	return nil
}

// An Outcome is how an intent ended, or OutcomeOpen while it has not.
type Outcome string

const (
	// OutcomeOpen is the status of an intent that has not ended. End does
	// not accept it.
	OutcomeOpen Outcome = "open"
	// OutcomeSucceeded: the server answered and the call did what it does.
	OutcomeSucceeded Outcome = "succeeded"
	// OutcomeFailed: the server answered with an error.
	OutcomeFailed Outcome = "failed"
	// OutcomeRejected: the call was never sent.
	OutcomeRejected Outcome = "rejected"
	// OutcomeUnknown: the call may or may not have happened (a timeout, a
	// disconnect, a cancellation after sending, a crash). It is never
	// replayed automatically; a person resolves it.
	OutcomeUnknown Outcome = "unknown"
)

// Valid reports whether End accepts o.
func (o Outcome) Valid() bool {
	switch o {
	case OutcomeSucceeded, OutcomeFailed, OutcomeRejected, OutcomeUnknown:
		return true
	}
	return false
}

// A Resolution is a person's finding about an unknown outcome.
type Resolution string

const (
	// ResolutionApplied: the call did happen.
	ResolutionApplied Resolution = "applied"
	// ResolutionNotApplied: the call did not happen.
	ResolutionNotApplied Resolution = "not-applied"
)

// Valid reports whether Resolve accepts r.
func (r Resolution) Valid() bool {
	return r == ResolutionApplied || r == ResolutionNotApplied
}

// A Record is an intent with what became of it. Its JSON is the element of
// `airlock recovery list --json` ("records"): id, server, tool, status,
// args_hash, created_at and resolved, plus the other fields.
type Record struct {
	Intent
	Status  Outcome   `json:"status"`
	Detail  string    `json:"detail,omitempty"`
	EndedAt time.Time `json:"ended_at,omitzero"`
	// Resolved is true once a person has resolved an unknown outcome.
	Resolved   bool       `json:"resolved"`
	Resolution Resolution `json:"resolution,omitempty"`
	Note       string     `json:"note,omitempty"`
	ResolvedBy string     `json:"resolved_by,omitempty"`
	ResolvedAt time.Time  `json:"resolved_at,omitzero"`
	// LateAnswer is what the server answered after the host had stopped
	// waiting (see Journal.LateAnswer): evidence, not a resolution.
	LateAnswer   string    `json:"late_answer,omitempty"`
	LateAnswerAt time.Time `json:"late_answer_at,omitzero"`
}

// RecordFilter selects journal records. The zero value selects what needs a
// person: unknown outcomes that nobody has resolved.
type RecordFilter struct {
	// All selects every record, open and ended, resolved or not.
	All bool
	// CallID, if set, selects only the records of the call with this tool
	// call id (Intent.CallID); with it, All is implied: records of every
	// status are returned.
	CallID string
	// Tenant and User, if set, select only the records of calls made for
	// that tenant and user.
	Tenant string
	User   string
	// Limit caps how many records are returned, the oldest first; <= 0 is
	// no cap.
	Limit int
}
