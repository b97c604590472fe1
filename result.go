package airlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Kind is the class of a call's outcome. The same words are used by the
// library, the CLI's JSON "status", the audit trail and the gateway.
type Kind string

const (
	// OK: the tool ran and its result is in the Result.
	OK Kind = "ok"
	// InvalidArguments: the arguments are not strict JSON or do not match
	// the tool's input schema. Nothing was sent; the model can fix them.
	InvalidArguments Kind = "invalid_arguments"
	// ToolError: the server answered with isError; its text is for the model.
	ToolError Kind = "tool_error"
	// UnknownTool: the name is not in the snapshot. Nothing was sent.
	UnknownTool Kind = "unknown_tool"
	// Denied: policy or a limit refused the call, and nothing was sent;
	// or the call went out and was refused for want of what only the
	// caller can give: the host refused its server's sampling request, or
	// the server needs a client feature the call did not offer
	// (MissingFeatures). The text says which.
	Denied Kind = "denied"
	// ResourceNotFound: the server has no resource at the URI read
	// (SEP-2164). The model can try another.
	ResourceNotFound Kind = "resource_not_found"
	// Busy: no slot was free before the queue timeout. Nothing was sent.
	Busy Kind = "busy"
	// ApprovalRequired: a person must approve the call first.
	ApprovalRequired Kind = "approval_required"
	// AuthRequired: the server needs a login.
	AuthRequired Kind = "auth_required"
	// ContractError: the server broke the protocol contract (its output
	// violates its outputSchema, a malformed or oversized message, a bad
	// catalog). For the harness, never shown to a model as tool text.
	ContractError Kind = "contract_error"
	// ConnectionError: the server is gone, did not answer in time, or
	// answered with a JSON-RPC error. For the harness.
	ConnectionError Kind = "connection_error"
	// OutcomeUnknown: a write was sent and no answer came: it may or may not
	// have happened, and is never replayed automatically.
	OutcomeUnknown Kind = "outcome_unknown"
	// Cancelled: the caller cancelled the call.
	Cancelled Kind = "cancelled"
)

// ModelVisible reports whether a model is shown this kind of outcome (and
// may act on it), as opposed to the harness or a person.
func (k Kind) ModelVisible() bool {
	switch k {
	case OK, InvalidArguments, ToolError, UnknownTool, Denied, Busy, ResourceNotFound:
		return true
	}
	return false
}

// An Error is a failed call or a failed server. Branch on Kind with
// errors.As; the message is written for the person or model that sees it
// and never holds secrets or host paths outside the state directory.
type Error struct {
	Kind   Kind
	Server string // "" when no server is involved
	Tool   string // local name, "" when none
	Msg    string
	Err    error // the underlying cause, for logs; may be nil
}

func (e *Error) Error() string { return e.Msg }

func (e *Error) Unwrap() error { return e.Err }

// Reason says why a call that was sent ended without a usable answer (an
// outcome_unknown, a connection_error), in Airlock's words alone: for a
// client's model, which must not read what the server wrote on its way
// out, as Msg may quote it for a person.
func (e *Error) Reason() string {
	switch {
	case errors.Is(e, errInputRounds):
		return "the server asked for input more often than limits.max_input_rounds allows, and the call was stopped"
	case errors.Is(e, errTimeout):
		return "no answer came within the server's request_timeout"
	case errors.Is(e, errTooLong):
		return "it ran longer than the server's max_call_duration"
	case errors.Is(e, context.Canceled):
		return "it was cancelled"
	case errors.Is(e, mcp.ErrSessionMissing):
		return "the server's session was gone"
	}
	return "the server broke off, or gave no usable answer"
}

func newError(kind Kind, server, tool string, cause error, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if cause != nil {
		msg = sessionIDText.ReplaceAllString(msg, "")
		msg = mismatchedIDsText.ReplaceAllString(msg, "mismatching session IDs")
		msg = sessionHeaderText.ReplaceAllString(msg, `"Mcp-Session-Id: …"`)
	}
	return &Error{Kind: kind, Server: server, Tool: tool, Msg: msg, Err: cause}
}

// sessionIDText is how the SDK's errors quote a remote session's id. The
// id lets whoever holds it send on the session, so it stays out of
// messages, which reach harnesses, logs and the audit trail; the log names
// a session by its fingerprint. Session ids are visible ASCII, without
// spaces (upstream checks).
var sessionIDText = regexp.MustCompile(` \(session ID: \S*\)`)

// mismatchedIDsText and sessionHeaderText are the SDK's and Go's other
// ways of quoting a session id: the two ids of a response that named
// another session, and a malformed header line.
var (
	mismatchedIDsText = regexp.MustCompile(`mismatching session IDs "(?:[^"\\]|\\.)*" and "(?:[^"\\]|\\.)*"`)
	sessionHeaderText = regexp.MustCompile(`(?i)"Mcp-Session-Id:(?:[^"\\]|\\.)*"`)
)

// A Call is one tool call as a model provider hands it over.
type Call struct {
	// ID is the provider's tool_call_id, echoed in the Result so the
	// harness can close its message loop. It is not the MCP JSON-RPC id,
	// which the SDK keeps to itself.
	ID string
	// Name is the tool's local name in the snapshot.
	Name string
	// Arguments is the raw JSON text the model produced. Empty means {}.
	Arguments json.RawMessage
	// Turn, when set, names the agent turn the call belongs to, for a
	// caller that cannot make every call of a turn with one BeginTurn
	// snapshot (the gateway, for its clients): the calls that name the
	// same turn for the same principal count together against
	// limits.max_calls_per_turn, across every replica on a store that
	// counts turns (store.Turns), else in this process; a turn is
	// forgotten an hour after its last call. A call made with a BeginTurn
	// snapshot counts in that snapshot's turn instead. Without either, a
	// call counts in no turn.
	Turn string
	// Admitted, when set, is called once the call has been counted in its
	// turn (or refused there), before anything else of the pipeline, which
	// may wait. A caller that makes a step's calls at once, starting each
	// once the one before was admitted, has limits.max_calls_per_turn
	// applied in the order of its calls.
	Admitted func()

	// Progress, when set, is told of each progress notification the
	// server sends about this call, on the terms of Options.CallProgress
	// (which is told too, when set): the host then asks the server for
	// progress on this call, and changes nothing else about it.
	Progress func(CallProgress)
	// Log, when set, is told of the log messages the server writes during
	// this call at LogLevel and above (one of debug, info, notice,
	// warning, error, critical, alert, emergency; any other asks for
	// none): the host asks the server for them, and passes on each one
	// that can only be this call's (a server's log messages name no call;
	// one written while other calls that may have caused it are in flight
	// on the same connection goes to none of them). It is called on the
	// connection's reader goroutine, one message at a time, never after
	// Call has returned; it should return quickly.
	Log      func(CallLog)
	LogLevel string
	// Elicit and Sample, when set, stand for Options.Elicit and
	// Options.Sample during this call: the gateway sends a server's
	// questions to the client whose call it is. Servers hear that the
	// host can ask a person only when Options.Elicit is set (see there),
	// so a host whose calls bring their own Elicit sets it too.
	Elicit Elicitor
	Sample Sampler
	// Roots, when set, stands for Options.Roots during this call: the
	// gateway relays a server's request for its client's roots to the
	// client whose call it is. Servers hear that the host has roots to
	// give only when Options.Roots is set.
	Roots RootsLister
	// AskAtOnce, when set, puts the requests of one input_required round
	// to Elicit, Sample and Roots at once, each on a goroutine of its own (see
	// InputRequest.Together), rather than one after another in the order
	// of their keys: for a caller that relays them to a client of its own
	// in one message (the gateway).
	AskAtOnce bool
	// Offers, when set, says which client features this call can answer
	// (its Elicit, Sample and Roots, or the host's): a 2026-07-28 server is told
	// with the request (its per-request clientCapabilities) that it may
	// ask for those of the features the host declared to it, and no
	// others, so that a tool that needs one the call cannot answer is
	// refused at once (MissingRequiredClientCapabilityError, -32021: the
	// call ends denied, MissingFeatures naming what it needed) instead of
	// asking a question nobody can answer. The gateway sets it from what
	// its client declared. Nil: the call answers everything the host
	// declared. A server of an older protocol version learns the host's
	// capabilities once, for its session, and is not told.
	Offers *ClientFeatures
}

// ClientFeatures are the client features (what a server may ask of its
// client during a call) a call can answer (Call.Offers).
type ClientFeatures struct {
	// Elicitation: forms put to a person (form-mode elicitation).
	Elicitation bool
	// ElicitURL: URL-mode elicitation.
	ElicitURL bool
	// Sampling: samples of a model. A server whose sampling: is ask is
	// offered sampling only with Elicitation too: a person must agree to
	// each request first.
	Sampling bool
	// Roots: the client's roots (roots/list).
	Roots bool
}

// A CallLog is a log message (notifications/message) a server wrote
// during a call (Call.Log).
type CallLog struct {
	// ToolCallID is the call's Call.ID; Tool and Server name its tool
	// (local name) and server.
	ToolCallID   string
	Tool, Server string
	// Level is the message's severity (debug … emergency), Logger the
	// name the server gave its source, if any.
	Level, Logger string
	// Data is what the server logged, any JSON value, with configured
	// secrets scrubbed. It is the server's text: show it as such.
	Data json.RawMessage
}

// A Result is the outcome of a call. Status is always set; for every status
// but OK, Err says what happened.
type Result struct {
	ToolCallID string
	Status     Kind
	// Content is what the model is shown: the tool's text, artifact
	// references, or the reason the call failed for model-visible kinds.
	// It is empty for kinds meant for the harness or a person.
	Content string
	// Structured is the tool's structuredContent, validated against the
	// snapshot's outputSchema when the tool has one.
	Structured json.RawMessage
	// ContentBlocks is the tool's content as MCP content blocks, in the
	// server's order, for a caller that hands the result on to an MCP
	// client (the gateway): text, and the text of embedded resources,
	// scrubbed as Content is; images, audio and binary resources as the
	// server sent them (each also kept in Artifacts). It is set for OK
	// results only.
	ContentBlocks []mcp.Content
	Artifacts     []Artifact
	Snapshot      string
	Duration      time.Duration
	Err           *Error
	// Decision is what hooks and policy decided, and why.
	Decision Decision
	// ApprovalID names the approval request of an approval_required call,
	// or the grant a call ran on.
	ApprovalID string
	// RecoveryID names the journal record of an outcome_unknown call, for
	// airlock recovery resolve.
	RecoveryID string
	// Notes are what after-call hooks added, for the harness.
	Notes []string
	// CallID names this one Host.Call ("call_" and 26 hex digits, new
	// for every call): every audit event of the call carries it as
	// "call", from its decision to its result, late answer included.
	// It is not ToolCallID, which the provider chose.
	CallID string
	// TraceID is the trace the call's audit events carry: the caller's
	// OpenTelemetry trace when its context has a span, else a new one.
	TraceID string
	// QueueWait is how long the call waited for one of its server's slots
	// (max_concurrency).
	QueueWait time.Duration
	// InputRounds counts the times the server asked for input during the
	// call (elicitations, input_required rounds, sampling requests), and
	// Inputs says what it asked and what it was answered, in order.
	InputRounds int
	Inputs      []InputRecord
	// Contents are what a resource read returned (Host.ReadResource).
	Contents []ResourceContent
	// Description and Messages are what a prompt get returned
	// (Host.GetPrompt).
	Description string
	Messages    []PromptMessage
}

// A Decision is the verdict of hooks and policy on a call.
type Decision struct {
	Verdict Verdict
	Rule    string // what decided: a policy rule, a Cedar policy, a hook, or "default"
	Reason  string
}

// An Artifact is binary or embedded content a tool returned, kept in the
// state directory's artifact store instead of the model's context.
type Artifact struct {
	ID        string
	MediaType string
	Size      int64
	Path      string // on the host; never shown to a model
}
