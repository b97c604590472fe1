package schema

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// ValidationError reports a value that does not match a schema. Its message
// is short and written for a model to fix its input; it never reproduces the
// schema.
type ValidationError struct {
	// Pointer is the JSON Pointer of the offending value; "" is the whole
	// value.
	Pointer string
	// Reason says what is wrong there.
	Reason string
	// Details holds at most three further findings.
	Details []string
}

// maxDetails bounds ValidationError.Details.
const maxDetails = 3

// validationBudget bounds the schema evaluations one validation may take,
// and regexpBudget the regular-expression steps (bytes of strings times
// instructions of the largest pattern): each is well under a second.
const (
	validationBudget = 1 << 22
	regexpBudget     = 1 << 26
)

// Error returns for example `/line_limit: must be <= 1000, but got 1001`.
func (e *ValidationError) Error() string {
	var b strings.Builder
	if e.Pointer != "" {
		b.WriteString(e.Pointer)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	for _, d := range e.Details {
		b.WriteString("; ")
		b.WriteString(d)
	}
	return b.String()
}

// Validate checks v, a value from Decode (numbers as json.Number) or from
// the MCP SDK (numbers as float64), against the schema with
// github.com/santhosh-tekuri/jsonschema/v6. "format" is an annotation and
// is never asserted. Errors are *ValidationError.
func (s *Schema) Validate(v any) error {
	// Bound the work before doing it: the library has no budget of its own.
	var st valueStats
	if verr := st.check(v, 0); verr != nil {
		return verr
	}
	if st.depth > maxLevels {
		return &ValidationError{Reason: fmt.Sprintf("value nests deeper than %d levels", maxLevels)}
	}
	if sat(int64(st.nodes)*profileAt(s.profile, st.depth)) > validationBudget ||
		int64(st.bytes)*int64(s.patternCost) > regexpBudget {
		return &ValidationError{Reason: "value is too complex to validate against this schema; send a smaller or shallower value"}
	}

	err := s.lib.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		// A value that is not JSON data (the library's InvalidJsonTypeError):
		// only a caller's bug produces one.
		return &ValidationError{Reason: "value is not JSON data"}
	}
	var leaves []*jsonschema.ValidationError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, e)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	// The library reports members of an object in map order; sort by
	// location, then message, so that the same value always gets the same
	// message.
	type finding struct{ ptr, reason string }
	findings := make([]finding, len(leaves))
	for i, l := range leaves {
		findings[i] = finding{pointerString(l.InstanceLocation), reason(l.ErrorKind)}
	}
	slices.SortFunc(findings, func(a, b finding) int {
		if c := strings.Compare(a.ptr, b.ptr); c != 0 {
			return c
		}
		return strings.Compare(a.reason, b.reason)
	})
	out := &ValidationError{Pointer: findings[0].ptr, Reason: findings[0].reason}
	for _, f := range findings[1:] {
		if len(out.Details) == maxDetails {
			break
		}
		d := f.reason
		if f.ptr != "" {
			d = f.ptr + ": " + d
		}
		out.Details = append(out.Details, d)
	}
	return out
}

// reason words one failed check for a model. Bounds are spelt out here with
// exact numbers; the library's own messages group digits ("1,000"), which
// reads like a list.
func reason(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Minimum:
		return fmt.Sprintf("must be >= %s, got %s", rat(k.Want), rat(k.Got))
	case *kind.Maximum:
		return fmt.Sprintf("must be <= %s, got %s", rat(k.Want), rat(k.Got))
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("must be > %s, got %s", rat(k.Want), rat(k.Got))
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("must be < %s, got %s", rat(k.Want), rat(k.Got))
	case *kind.MultipleOf:
		return fmt.Sprintf("must be a multiple of %s, got %s", rat(k.Want), rat(k.Got))
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters long, got %d", k.Want, k.Got)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters long, got %d", k.Want, k.Got)
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d items, got %d", k.Want, k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d items, got %d", k.Want, k.Got)
	case *kind.MinProperties:
		return fmt.Sprintf("must have at least %d properties, got %d", k.Want, k.Got)
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %d properties, got %d", k.Want, k.Got)
	case *kind.MinContains:
		return fmt.Sprintf("must contain at least %d matching items, got %d", k.Want, len(k.Got))
	case *kind.AdditionalProperties:
		// Listed in map order by the library; sorted, the message is stable.
		// A value with thousands of unknown keys names a few of them.
		props := slices.Sorted(slices.Values(k.Properties))
		more := ""
		if len(props) > maxNamed {
			more = fmt.Sprintf(" (and %d more)", len(props)-maxNamed)
			props = props[:maxNamed]
		}
		for i, p := range props {
			props[i] = shorten(p)
		}
		return (&kind.AdditionalProperties{Properties: props}).LocalizedString(libPrinter) + more
	case *kind.Pattern:
		// The value is the caller's own: a few characters of it say which
		// one it is, and a huge one must not come back whole (to the model,
		// and into the audit trail, which keeps values only for the tools
		// audit.record_values names).
		return (&kind.Pattern{Got: shorten(k.Got), Want: k.Want}).LocalizedString(libPrinter)
	case *kind.PropertyNames:
		return (&kind.PropertyNames{Property: shorten(k.Property)}).LocalizedString(libPrinter)
	case *kind.MaxContains:
		return fmt.Sprintf("must contain at most %d matching items, got %d", k.Want, len(k.Got))
	}
	return k.LocalizedString(libPrinter)
}

// maxNamed bounds the names one message lists.
const maxNamed = 10

// shorten cuts s to maxQuoted characters, noting how many bytes were left
// out.
func shorten(s string) string {
	if head, left := clip(s); left > 0 {
		return fmt.Sprintf("%s… (%d more bytes)", head, left)
	}
	return s
}

// rat writes an exact number: an integer as such, anything else in decimal.
func rat(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	return strings.TrimRight(strings.TrimRight(r.FloatString(20), "0"), ".")
}
