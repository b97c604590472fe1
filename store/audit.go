package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Event names the pipeline and the host write. Other names are allowed.
const (
	EventServerStart       = "server_start"
	EventServerReady       = "server_ready"
	EventServerFailed      = "server_failed"
	EventDiscovery         = "discovery"
	EventDecision          = "decision"
	EventApprovalRequested = "approval_requested"
	EventApprovalGranted   = "approval_granted"
	EventApprovalDenied    = "approval_denied"
	EventApprovalUsed      = "approval_used"
	EventApprovalOperator  = "approval_operator" // a person acted on any principal's requests (--all-principals)
	EventRuleRemembered    = "rule_remembered"   // a person answered "always" (an AllowRule)
	EventRuleUsed          = "rule_used"         // a call ran on a remembered rule, without asking
	EventRuleForgotten     = "rule_forgotten"
	EventCallSent          = "call_sent"
	EventResult            = "result"
	EventArtifactStored    = "artifact_stored"
	EventCloseFailed       = "close_failed"
	EventRecoveryResolved  = "recovery_resolved"
	EventHealth            = "health"
	EventPolicyWarning     = "policy_warning"
	EventToolFlagged       = "tool_flagged"
	EventCatalogRefused    = "catalog_refused" // a server's resource or prompt list broke the rules
	EventCompletion        = "completion"      // a completion/complete was asked for
	EventLateAnswer        = "late_answer"
	EventRecoveryOperator  = "recovery_operator"
	EventInputAnswered     = "input_answered" // a person answered a server's question elsewhere (the console)
	EventInputOperator     = "input_operator" // a person acted on any principal's question (--all-principals)
	EventSignedIn          = "signed_in"      // a person signed in to the console (serve.console)
	EventSignedOut         = "signed_out"     // a person signed out of the console
	EventJobCancelled      = "job_cancelled"  // a person cancelled a tool call run as an MCP task (airlock jobs cancel)
	EventJobOperator       = "job_operator"   // a person acted on any principal's tasks (--all-principals)
)

// An Event is one line of the audit trail. Its JSON is one line of
// `airlock audit --json`: the fixed fields time, event, server, tool,
// snapshot, class and duration_ms (always present), then the extra Fields
// at the same level.
type Event struct {
	Time       time.Time
	Event      string // what happened: one of the Event… names or another
	Server     string
	Tool       string
	Snapshot   string
	Class      string // the result class, for events that have one
	DurationMS int64
	// Fields holds what else the event says (decision, rule, reason,
	// args_shape, args_hash, …). Values must encode as JSON; they are read
	// back as decoded JSON (string, float64, bool, nil, []any,
	// map[string]any). Keys must not be one of the fixed names.
	Fields map[string]any
}

// An EventPage is what Audit.Tail returns.
type EventPage struct {
	// Events are the newest of the events selected, oldest first.
	Events []Event
	// Omitted counts the events selected but left out for the limit: all
	// of them older than those returned.
	Omitted int
	// Next is the position of the newest event the trail held when it was
	// read (or the after given, if there was none). Positions number the
	// events in the order their appends committed, so that every event
	// appended later has a greater one, whichever process appends it.
	Next int64
}

// reserved are the fixed names, which Fields may not use.
var reserved = []string{"time", "event", "server", "tool", "snapshot", "class", "duration_ms"}

// Check reports what Append would refuse: no event name, or an extra field
// with a fixed name.
func (e Event) Check() error {
	if e.Event == "" {
		return fmt.Errorf("audit event has no name")
	}
	// Seven lookups cost less than a walk over the fields of an event
	// that has many.
	for _, k := range reserved {
		if _, ok := e.Fields[k]; ok {
			return fmt.Errorf("audit event %s: field %q is reserved", e.Event, k)
		}
	}
	return nil
}

// MarshalJSON writes the fixed fields in their documented order, then the
// extra fields sorted by name.
func (e Event) MarshalJSON() ([]byte, error) {
	if err := e.Check(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteByte('{')
	field := func(k string, v any) error {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("audit field %q: %w", k, err)
		}
		b.Write(vb)
		return nil
	}
	fixed := []any{e.Time, e.Event, e.Server, e.Tool, e.Snapshot, e.Class, e.DurationMS}
	for i, k := range reserved {
		if err := field(k, fixed[i]); err != nil {
			return nil, err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(e.Fields)) {
		if err := field(k, e.Fields[k]); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads what MarshalJSON writes: fields other than the fixed
// ones go to Fields.
func (e *Event) UnmarshalJSON(data []byte) error {
	var fixed struct {
		Time       time.Time `json:"time"`
		Event      string    `json:"event"`
		Server     string    `json:"server"`
		Tool       string    `json:"tool"`
		Snapshot   string    `json:"snapshot"`
		Class      string    `json:"class"`
		DurationMS int64     `json:"duration_ms"`
	}
	if err := json.Unmarshal(data, &fixed); err != nil {
		return err
	}
	var all map[string]any
	if err := json.Unmarshal(data, &all); err != nil {
		return err
	}
	for _, k := range reserved {
		delete(all, k)
	}
	if len(all) == 0 {
		all = nil
	}
	*e = Event{
		Time: fixed.Time, Event: fixed.Event, Server: fixed.Server, Tool: fixed.Tool,
		Snapshot: fixed.Snapshot, Class: fixed.Class, DurationMS: fixed.DurationMS,
		Fields: all,
	}
	return nil
}
