package agent

// Kinds of Event.
const (
	// EventRun: the run started or resumed (RunID).
	EventRun = "run"
	// EventText: a piece of the model's text, as it streams (Text); when
	// the provider does not stream, the step's whole text.
	EventText = "text"
	// EventToolCall: a tool call started (Status "started") or ended
	// (Status is its class; Duration).
	EventToolCall = "tool_call"
	// EventApprovalRequired: a call waits for a person's approval
	// (ApprovalID, Summary).
	EventApprovalRequired = "approval_required"
	// EventRetry: the provider's answer did not come (a rate limit, an
	// error, a stream cut short); the step is asked again after WaitMS.
	// Text the step had streamed is void.
	EventRetry = "retry"
	// EventNotice: something the person should know that is not an error:
	// a tool left out of the provider's requests, the catalog searched
	// through find_tools, an input the pipeline refused.
	EventNotice = "notice"
	// EventError: a call failed in a way the model is not shown the
	// details of (contract_error, connection_error, auth_required): Text
	// is for the person.
	EventError = "error"
	// EventWaiting: the run paused until a person decides the approvals
	// of ApprovalIDs; airlock run --resume RUN_ID goes on from there.
	EventWaiting = "waiting"
	// EventDone: the run ended with the model's final answer (Text).
	EventDone = "done"
	// EventFailed: the run stopped on a failure (Text says which: the
	// provider's answer, the step limit, the store); it may be resumed.
	EventFailed = "failed"
	// EventCancelled: the run was interrupted; it may be resumed.
	EventCancelled = "cancelled"
)

// An Event is something a run did, for the person watching it: the
// terminal's lines, or one JSON object a line with airlock run --json.
// Every field but Event is optional.
type Event struct {
	Event string `json:"event"`
	RunID string `json:"run_id,omitempty"`
	Text  string `json:"text,omitempty"`

	// A tool call's: Name is the local name, CallID the provider's id of
	// the call, Args its arguments on one line (for people), Status
	// "started" or the class it ended with, Server its server.
	Name       string `json:"name,omitempty"`
	CallID     string `json:"call_id,omitempty"`
	Server     string `json:"server,omitempty"`
	Args       string `json:"args,omitempty"`
	Status     string `json:"status,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`

	ApprovalID  string   `json:"approval_id,omitempty"`
	Summary     string   `json:"summary,omitempty"`
	ApprovalIDs []string `json:"approval_ids,omitempty"`

	// A retry's: the provider's HTTP status (0: none came) and the wait.
	HTTPStatus int   `json:"http_status,omitempty"`
	WaitMS     int64 `json:"wait_ms,omitempty"`
	Step       int   `json:"step,omitempty"`

	// The run's totals, with EventDone and EventWaiting.
	Steps        *int   `json:"steps,omitempty"`
	ToolCalls    *int   `json:"tool_calls,omitempty"`
	InputTokens  *int64 `json:"input_tokens,omitempty"`
	OutputTokens *int64 `json:"output_tokens,omitempty"`
}
