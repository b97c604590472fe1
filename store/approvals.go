package store

import (
	"fmt"
	"time"
)

// An ApprovalStatus is where an approval request stands.
type ApprovalStatus string

const (
	ApprovalPending ApprovalStatus = "pending" // waiting for a person
	ApprovalGranted ApprovalStatus = "granted" // may be used once, until it expires
	ApprovalDenied  ApprovalStatus = "denied"
	ApprovalUsed    ApprovalStatus = "used" // a call ran on this grant
	// ApprovalExpired is a pending or granted request whose ExpiresAt has
	// passed. Stores derive it when reading; nothing writes it.
	ApprovalExpired ApprovalStatus = "expired"
)

// An Approval is a request for a person to allow one call, made for one
// principal (Tenant and User): only that principal's calls may use the
// grant it becomes. Its JSON is the element of `airlock approvals list
// --json` ("approvals"): id, server, tool, summary, status, created_at,
// expires_at, tenant and user, plus the other fields.
type Approval struct {
	ID     string `json:"id"`
	Server string `json:"server"`
	Tool   string `json:"tool"` // the local name
	// Digest binds a grant to one action: the tool, its definition in the
	// snapshot, the arguments, the working directory and the server's
	// launch configuration. A grant is consumed only by a call with the
	// same digest, made for the same tenant and user.
	Digest string `json:"digest"`
	// Summary is what the person is asked about, already redacted.
	Summary string `json:"summary"`
	// Target is where the call goes, for the person: the server's command
	// line or URL as configured (config.Server.Target), already redacted.
	// The digest covers the server's whole launch configuration.
	Target string `json:"target,omitempty"`
	// Definition binds a remembered answer (an AllowRule) to the tool as
	// the request saw it: its definition and its server's launch, not the
	// arguments. Requests made before it was kept have none and cannot be
	// remembered.
	Definition string         `json:"definition,omitempty"`
	Status     ApprovalStatus `json:"status"`
	CreatedAt  time.Time      `json:"created_at"`
	ExpiresAt  time.Time      `json:"expires_at"`
	// Tenant and User are the principal the call was made for.
	Tenant    string    `json:"tenant"`
	User      string    `json:"user"`
	DecidedBy string    `json:"decided_by,omitempty"`
	DecidedAt time.Time `json:"decided_at,omitzero"`
	Note      string    `json:"note,omitempty"`
	UsedAt    time.Time `json:"used_at,omitzero"`
}

// Check reports what is missing from an approval that Create would refuse.
func (a Approval) Check() error {
	switch {
	case a.ID == "":
		return fmt.Errorf("approval has no id")
	case a.Digest == "":
		return fmt.Errorf("approval %s has no digest", a.ID)
	case a.ExpiresAt.IsZero():
		return fmt.Errorf("approval %s has no expiry", a.ID)
	case !a.CreatedAt.IsZero() && !a.ExpiresAt.After(a.CreatedAt):
		return fmt.Errorf("approval %s expires before it is created", a.ID)
	}
	return nil
}

// ApprovalFilter selects approvals. The zero value selects all.
type ApprovalFilter struct {
	// Status, if set, selects only approvals with that status
	// (ApprovalExpired included).
	Status ApprovalStatus
	// Tenant, if set, selects only that tenant's approvals.
	Tenant string
	// User, if set, selects only that user's approvals (of any tenant,
	// unless Tenant is set too).
	User string
	// Limit caps how many approvals are returned, the oldest first; <= 0
	// is no cap.
	Limit int
}

// An AllowRule is a person's answer "always", remembered: calls of one
// tool, as it was defined when the person answered, on its server as it
// was launched then, made for one principal (Tenant and User), that policy
// would ask about run without asking. It answers only policy's question:
// whatever policy or an argument constraint denies stays denied.
// Its JSON is the element of `airlock approvals rules --json` ("rules").
type AllowRule struct {
	ID     string `json:"id"`
	Server string `json:"server"`
	Tool   string `json:"tool"` // the local name
	// Definition is the Approval.Definition of the request it was
	// remembered from: a server that redefines the tool (a "rug pull") or
	// is launched otherwise no longer matches.
	Definition string `json:"definition"`
	// Tenant and User are the principal whose calls it answers.
	Tenant    string    `json:"tenant"`
	User      string    `json:"user"`
	CreatedAt time.Time `json:"created_at"`
	CreatedBy string    `json:"created_by"`
	// Approval is the request whose answer it remembers.
	Approval string `json:"approval"`
}

// Check reports what is missing from a rule that Remember would refuse.
func (r AllowRule) Check() error {
	switch {
	case r.ID == "":
		return fmt.Errorf("rule has no id")
	case r.Server == "" || r.Tool == "":
		return fmt.Errorf("rule %s names no server and tool", r.ID)
	case r.Definition == "":
		return fmt.Errorf("rule %s has no definition", r.ID)
	case r.Tenant == "" || r.User == "":
		return fmt.Errorf("rule %s names no tenant and user", r.ID)
	}
	return nil
}

// RuleFilter selects remembered rules. The zero value selects all.
type RuleFilter struct {
	// Tenant and User, if set, select only that tenant's and user's rules.
	Tenant, User string
}
