package policy

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/airlockhq/airlock/internal/canonical"
)

// Bounds of a summary, so that a huge argument cannot bury the rest. The
// digest always covers the whole value.
const (
	maxSummaryValue = 400 // bytes of one argument's JSON
	maxSummaryArgs  = 50  // arguments listed
	maxSummaryTitle = 100 // bytes of the server's title hint
	// maxSummaryURI bounds a resource's URI: long enough that the end of
	// any real URI shows, where a path's last segments are.
	maxSummaryURI = 2000
)

// Summary describes a request for the person asked to approve it. For a
// tool call: the tool and server, the effect policy gives it, the decision
// and why, the server's own hints about the tool (marked as unverified),
// and the arguments. For a resource read: the URI and the server, and the
// decision. For a prompt get: the prompt's names and server, the decision,
// and the arguments.
//
// redact, when not nil, is applied to the arguments before they are shown;
// pass the host's redaction so that a secret in an argument shows as
// redacted while the person still sees which argument held it. Values are
// shown as canonical JSON with control and invisible formatting characters
// escaped, one argument a line, each cut at 400 bytes with the length of
// the rest noted.
func Summary(req Request, d Decision, redact func(any) any) string {
	var b strings.Builder
	switch req.Kind {
	case KindResource:
		fmt.Fprintf(&b, "read resource %s from server %s\n", truncate(displayString(req.Resource), maxSummaryURI), displayString(req.Server))
		writeDecision(&b, d)
		return b.String()
	case KindPrompt:
		fmt.Fprintf(&b, "get prompt %s (prompt %s of server %s)\n", displayString(req.Tool), displayString(req.RemoteTool), displayString(req.Server))
		writeDecision(&b, d)
		writeArguments(&b, req.Arguments, redact)
		return b.String()
	}
	fmt.Fprintf(&b, "call %s (tool %s of server %s)\n", displayString(req.Tool), displayString(req.RemoteTool), displayString(req.Server))

	effect := string(d.Effect)
	if d.Effect == "" {
		effect = string(External)
	}
	fmt.Fprintf(&b, "effect: %s", effect)
	if d.Idempotent {
		b.WriteString(", idempotent")
	}
	b.WriteString("\n")
	writeDecision(&b, d)
	if hints := hintList(req); len(hints) > 0 {
		fmt.Fprintf(&b, "server's hints (unverified, they change nothing): %s\n", strings.Join(hints, ", "))
	}
	writeArguments(&b, req.Arguments, redact)
	return b.String()
}

// writeDecision writes the decision and why, when there is one.
func writeDecision(b *strings.Builder, d Decision) {
	if d.Verdict != "" {
		fmt.Fprintf(b, "decision: %s: %s\n", d.Verdict, d.Reason)
	}
}

// writeArguments writes the arguments, redacted, one a line.
func writeArguments(b *strings.Builder, arguments map[string]any, redact func(any) any) {
	var args any = arguments
	if arguments == nil {
		args = map[string]any{}
	}
	if redact != nil {
		args = redact(args)
	}
	m, ok := args.(map[string]any)
	if !ok {
		// A redaction that changed the shape: show what it returned.
		fmt.Fprintf(b, "arguments: %s\n", displayValue(args))
		return
	}
	if len(m) == 0 {
		b.WriteString("arguments: none\n")
		return
	}
	b.WriteString("arguments:\n")
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i == maxSummaryArgs {
			fmt.Fprintf(b, "  … and %d more\n", len(keys)-i)
			break
		}
		fmt.Fprintf(b, "  %s: %s\n", displayString(k), displayValue(m[k]))
	}
}

// hintList describes the server's annotations, only those it stated.
func hintList(req Request) []string {
	a := req.Annotations
	if a == nil {
		return nil
	}
	var hints []string
	if a.Title != "" {
		hints = append(hints, "title "+truncate(displayString(a.Title), maxSummaryTitle))
	}
	if a.ReadOnlyHint {
		hints = append(hints, "read-only")
	}
	hints = appendEither(hints, a.DestructiveHint, "destructive", "not destructive")
	if a.IdempotentHint {
		hints = append(hints, "idempotent")
	}
	return appendEither(hints, a.OpenWorldHint, "open world", "closed world")
}

// appendEither appends yes or no to hints as the hint b says, and nothing
// when the tool does not say.
func appendEither(hints []string, b *bool, yes, no string) []string {
	switch {
	case b == nil:
		return hints
	case *b:
		return append(hints, yes)
	}
	return append(hints, no)
}

// displayString quotes s for a person: a JSON string with control and
// invisible formatting characters escaped.
func displayString(s string) string {
	d, err := canonical.Display(s)
	if err != nil {
		return fmt.Sprintf("%q", s)
	}
	return d
}

// displayValue writes v as canonical JSON for a person, cut at
// maxSummaryValue bytes.
func displayValue(v any) string {
	d, err := canonical.Display(v)
	if err != nil {
		return "(cannot be shown: " + err.Error() + ")"
	}
	return truncate(d, maxSummaryValue)
}

// truncate cuts s at max bytes, on a character boundary, noting how much
// was left out.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes)", s[:cut], len(s)-cut)
}
