package agent

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/store"
)

// maxResultText bounds the text of one tool result that goes to the
// model: the rest is cut, and the model told how much.
const maxResultText = 100_000

// Texts of outcomes the model is told of in the pipeline's words, never
// in a server's.
const (
	unknownText    = "The outcome of this write is unknown: it was sent, and no answer came. It may or may not have happened; verify before retrying."
	lostText       = "This call was completed (%s) before Airlock stopped, but its result was lost with the process. Verify what it did before relying on it or retrying it."
	cancelledText  = "This call was cancelled before it finished."
	approvalDenied = "A person denied this call: %s Do not try to get around the denial; choose another way or ask the user."
)

// modelResult is what the model is told of a call's result: the
// model-visible classes as the pipeline wrote them, the rest as a short
// failure without the server's words (the person is told those).
func modelResult(tc ToolCall, r *airlock.Result) ToolResult {
	out := ToolResult{CallID: tc.ID, Name: tc.Name, Status: string(r.Status)}
	switch r.Status {
	case airlock.OK:
		out.Text = r.Content
	case airlock.ToolError, airlock.InvalidArguments, airlock.UnknownTool, airlock.Busy, airlock.ResourceNotFound:
		out.Text, out.IsError = r.Content, true
		if out.Text == "" && r.Err != nil {
			out.Text = r.Err.Msg
		}
	case airlock.Denied:
		out.IsError = true
		out.Text = r.Content
		if out.Text == "" && r.Err != nil {
			out.Text = r.Err.Msg
		}
		if r.ApprovalID != "" {
			out.Text = fmt.Sprintf(approvalDenied, out.Text)
		}
	case airlock.OutcomeUnknown:
		out.Text, out.IsError = unknownText, true
	case airlock.Cancelled:
		out.Text, out.IsError = cancelledText, true
	case airlock.AuthRequired:
		out.Text, out.IsError = "This tool's server needs the user to log in first; the user has been told. Go on without it, or stop and say so.", true
	case airlock.ApprovalRequired:
		out.Text, out.IsError = "This call waits for a person's approval.", true
	default: // contract_error, connection_error
		out.Text, out.IsError = fmt.Sprintf("The call failed (%s): the server did not give a usable answer. The user has been told the details.", r.Status), true
	}
	out.Text = cutText(out.Text, maxResultText)
	for _, a := range r.Artifacts {
		if strings.HasPrefix(a.MediaType, "image/") {
			out.Images = append(out.Images, Image{Artifact: a.ID, MediaType: a.MediaType, Size: a.Size, Path: a.Path})
		}
	}
	return out
}

// recoveredResult is what the model is told, on resume, of a call whose
// process died while it ran, from what the journal says of it.
func recoveredResult(tc ToolCall, rec store.Record) ToolResult {
	out := ToolResult{CallID: tc.ID, Name: tc.Name, IsError: true}
	switch rec.Status {
	case store.OutcomeSucceeded, store.OutcomeFailed:
		out.Status, out.Text = "result_lost", fmt.Sprintf(lostText, rec.Status)
	default: // open or unknown: it was sent, and nobody saw an answer
		out.Status, out.Text = string(airlock.OutcomeUnknown), unknownText
	}
	return out
}

// cutText shortens s to at most n bytes, on a character boundary, and says
// how much was cut.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[… %d more bytes of this result were cut]", len(s)-cut)
}

// argSummary is a call's arguments on one line, for a person.
func argSummary(args string) string {
	s := printable(args, 120)
	if s == "" || s == "{}" {
		return "{}"
	}
	return s
}
