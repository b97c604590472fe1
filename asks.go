//lint:file-ignore SA1019 a server may still ask for a sample or need roots, which protocol version 2026-07-28 deprecates (SEP-2577); the host governs them.

package airlock

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server may ask a person something during a call: a 2025-11-25 server
// with an elicitation/create request, a 2026-07-28 one by ending the call
// with an input_required result whose input requests the host answers by
// calling again (SEP-2322). A server whose sampling: is ask wants a model
// sampled, and a person must agree first. Each of these is an
// InputRequest, put to the person (Options.Elicit, or the call's own
// Call.Elicit), never to the model. With no one to ask, the host declines.

// The kinds of an InputRequest.
const (
	InputElicitation = "elicitation" // the server asks the person for information
	InputSampling    = "sampling"    // the server wants a model sampled (sampling: ask)
	// InputRoots is a server's request for its client's roots: never put
	// to an Elicitor, it goes to a RootsLister (roots.go), and names such
	// a request in an InputRecord and the audit trail.
	InputRoots = "roots"
)

// The modes of an elicitation.
const (
	ElicitForm = "form" // the person fills in a form described by Schema
	ElicitURL  = "url"  // the person is sent to URL, outside the host
)

// The actions of an InputAnswer, as MCP names them.
const (
	AnswerAccept  = "accept"
	AnswerDecline = "decline"
	AnswerCancel  = "cancel"
)

// An InputRequest is a server's question to a person during a call.
type InputRequest struct {
	// ID names the request ("inq_" and random letters), unique in the
	// host, for an answer that comes back later (airlock shell's answer
	// command).
	ID string
	// ToolCallID is the call's Call.ID; Tool and Server name its tool
	// (local name) and server.
	ToolCallID   string
	Tool, Server string
	// Round counts the times the server has asked during this call, from
	// 1; it is never more than limits.max_input_rounds.
	Round int
	// Key is the name the server gave the request in its input_required
	// result (2026-07-28), under which its answer goes back (for a
	// sampling request put to the person, sampling: ask, the name of that
	// request); "" for a request the server sent on its own
	// (elicitation/create). A caller that relays the request to a client
	// of its own keeps the key.
	Key string
	// Together is how many requests are put to the Elicitor, the Sampler
	// and the RootsLister at once with this one, itself included: the
	// requests of one input_required round for a call that takes them at
	// once (Call.AskAtOnce), each asked on a goroutine of its own; 1
	// otherwise. A caller that relays them to a client of its own can
	// send them in one message.
	Together int
	// Kind is InputElicitation or InputSampling.
	Kind string
	// Mode is ElicitForm or ElicitURL (elicitations only).
	Mode string
	// Message is the server's own words, with configured secrets scrubbed.
	// It is the server's text: show it as such, with control characters
	// removed.
	Message string
	// Schema is the JSON Schema of the form's content (form mode): a flat
	// object of strings, numbers, booleans and enums, whose properties may
	// carry defaults (SEP-1034).
	Schema json.RawMessage
	// URL is where a URL-mode elicitation sends the person, and Domain its
	// host, to show with it. The host never opens it: the person decides.
	URL, Domain string
	// Sampling is what a sampling request asks for (kind sampling).
	Sampling *SamplingRequest
	// Problem, when the Elicitor is asked again, says why the host refused
	// its last answer (it did not fit Schema): for the person to fix.
	Problem string

	form *form // the compiled Schema (form mode)
}

// A SamplingRequest is what a server wants sampled: the person sees it
// before it goes to a model (sampling: ask).
type SamplingRequest struct {
	// SystemPrompt is the system prompt the server asks for, if any.
	SystemPrompt string
	// Messages are the conversation to sample, each a role and its text
	// (content that is not text is described, as "[image image/png]").
	Messages []SamplingMessage
	// MaxTokens is the most tokens the server asks for.
	MaxTokens int64
}

// A SamplingMessage is one message of a SamplingRequest.
type SamplingMessage struct {
	Role, Text string
}

// An InputAnswer is the person's answer to an InputRequest.
type InputAnswer struct {
	// Action is AnswerAccept, AnswerDecline or AnswerCancel.
	Action string
	// Content is the form's content (form mode, accept only). A property
	// left out that the Schema gives a default gets it (SEP-1034). The
	// host checks the content against the request's Schema before it is
	// sent: an answer that does not fit is an error for the person to
	// fix, not something the server sees. The Elicitor is asked again,
	// with InputRequest.Problem saying what is wrong, up to three answers
	// in all; then the host declines.
	Content map[string]any
	// Reason says, for the audit trail and the call's result, why the
	// answer was given without a person's deciding, when it was (nobody
	// at a terminal to ask, say), or who gave it when it was given
	// elsewhere (the operator console). Empty for the Elicitor's person's
	// own answer.
	Reason string
}

// An Elicitor asks a person an InputRequest and returns the answer. It is
// called on a goroutine of its own while the call waits, with a context
// that ends when the call ends (or the server withdraws the request); an
// error, or a nil answer, declines the request (an error is logged). The
// call's request_timeout does not run while a person is asked.
type Elicitor func(ctx context.Context, req *InputRequest) (*InputAnswer, error)

// An InputRecord is one request a server made during a call for a person
// or a model, and what became of it (Result.Inputs): the result of a
// call says that the server asked, and what.
type InputRecord struct {
	// ID is the InputRequest's; Round, Kind, Mode, Message and Domain are
	// as there. Kind may also be InputRoots (a request for the client's
	// roots, answered by a RootsLister or refused).
	ID, Kind, Mode string
	Round          int
	Message        string
	Domain         string
	// Action is what the server was answered: AnswerAccept, AnswerDecline
	// or AnswerCancel, or "" when the request was refused (a sampling
	// request that was not allowed, a feature the host did not declare).
	Action string
	// Reason says why the host answered without a person's accepting,
	// when it did: nobody to ask, the answer did not fit the form, ...
	Reason string
}

// A SampleRequest is a server's request to sample a model, as it reaches
// a Sampler: after a person agreed (sampling: ask) or at once (allow).
type SampleRequest struct {
	// ToolCallID is the call's Call.ID, when the request came during a
	// call the host can tell; Tool and Server name its tool (local name)
	// and server.
	ToolCallID   string
	Tool, Server string
	// Key is the name the server gave the request in its input_required
	// result, "" for a sampling/createMessage request; Round and Together
	// are as InputRequest's (a request a person agreed to first comes
	// alone, Together 1).
	Key             string
	Round, Together int
	// Params are the request's, as the server sent them, but for
	// configured secrets, scrubbed from the system prompt and the text of
	// the messages (as the person is shown them, and as in a tool result).
	Params *mcp.CreateMessageParams
}

// A Sampler samples a model for a server. The host passes its result to
// the server; an error refuses the request.
type Sampler func(ctx context.Context, req *SampleRequest) (*mcp.CreateMessageResult, error)

// MissingFeatures names the client features a server answered that a call
// needs and was not offered (MissingRequiredClientCapabilityError, -32021),
// sorted, for a call that ended denied so; nil for any other error. Roots
// count only with listChanged: the SDK writes an empty roots object into
// every capability set.
func MissingFeatures(err error) []string {
	var e *Error
	var werr *jsonrpc.Error
	if !errors.As(err, &e) || e.Kind != Denied || !errors.As(err, &werr) || werr.Code != mcp.CodeMissingRequiredClientCapabilities {
		return nil
	}
	return missingFeatures(werr)
}

// missingFeatures names the capabilities the data of a -32021 error
// requires, of sampling, elicitation and roots.
func missingFeatures(werr *jsonrpc.Error) []string {
	var d mcp.MissingRequiredClientCapabilityData
	if json.Unmarshal(werr.Data, &d) != nil || d.RequiredCapabilities == nil {
		return nil
	}
	required := map[string]bool{
		"sampling":    d.RequiredCapabilities.Sampling != nil,
		"elicitation": d.RequiredCapabilities.Elicitation != nil,
		"roots":       d.RequiredCapabilities.Roots.ListChanged || d.RequiredCapabilities.RootsV2 != nil,
	}
	maps.DeleteFunc(required, func(_ string, needed bool) bool { return !needed })
	return slices.Sorted(maps.Keys(required))
}
