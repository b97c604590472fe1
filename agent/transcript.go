package agent

import "github.com/airlockhq/airlock"

// Roles of a run's messages.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	// RoleTool: the results of the tool calls of the assistant message
	// before it, in the order the model gave them.
	RoleTool = "tool"
)

// A Message is one entry of a run's conversation, the same for every
// provider: each turns it into its own wire format. It is what a run's
// checkpoint keeps.
type Message struct {
	Role string `json:"role"`
	Text string `json:"text,omitempty"`
	// Calls are the tool calls of an assistant message.
	Calls []ToolCall `json:"calls,omitempty"`
	// Results are the results of a tool message, one for each call of the
	// assistant message before it, in its order.
	Results []ToolResult `json:"results,omitempty"`
}

// A ToolCall is one tool call a model asked for.
type ToolCall struct {
	// ID is the provider's id of the call. It is never an MCP request id:
	// the pipeline gets an id of the run's own (see Call.ID).
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON text the model wrote, as it wrote it: the
	// pipeline decodes it strictly.
	Arguments string `json:"arguments"`
}

// A ToolResult is what the model is told of one tool call.
type ToolResult struct {
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	// Status is the pipeline's class of the call's outcome (ok,
	// tool_error, invalid_arguments, unknown_tool, denied, busy,
	// outcome_unknown, contract_error, connection_error, …).
	Status  string `json:"status"`
	Text    string `json:"text"`
	IsError bool   `json:"is_error,omitempty"`
	// Images are the images the tool returned, kept in the artifact store,
	// for a provider that takes images in a tool result (the text names
	// them for the others).
	Images []Image `json:"images,omitempty"`
}

// An Image is an image a tool returned, kept in the host's artifact
// store.
type Image struct {
	Artifact  string `json:"artifact"`
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
	// Path is where the artifact is on the host; it is never shown to a
	// model.
	Path string `json:"path"`
}

// printable is airlock.Printable.
func printable(s string, limit int) string { return airlock.Printable(s, limit) }
