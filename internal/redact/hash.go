package redact

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"unicode/utf16"
)

// Hash returns "sha256:" and the hex SHA-256 of the canonical JSON of v (see
// Canonical). Equal JSON values hash alike whatever their key order or
// number spelling. A value that has no JSON form hashes as its Go type
// name.
func Hash(v any) string {
	b, err := Canonical(v)
	if err != nil {
		b = fmt.Appendf(nil, "unencodable %T", v)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Canonical returns the canonical JSON of v, in the manner of RFC 8785
// (JCS): no insignificant white space, object members sorted by the UTF-16
// code units of their names, strings with only the escapes JSON requires,
// and numbers in their shortest form, except that integers are kept
// exactly whatever their size (JCS would round those beyond 2^53, making
// two different ids hash alike). Values of other Go types are converted to
// decoded JSON first.
func Canonical(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := canonical(&b, v, 0); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// maxDepth bounds the recursion on values that did not come through a
// depth-checked decoder.
const maxDepth = 10000

var intRE = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)$`)

func canonical(b *bytes.Buffer, v any, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("value nested deeper than %d", maxDepth)
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		canonicalString(b, x)
	case float64:
		return canonicalFloat(b, x)
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case json.Number:
		s := string(x)
		if intRE.MatchString(s) {
			if s == "-0" {
				s = "0"
			}
			b.WriteString(s)
			return nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("number %s has no float64 value", s)
		}
		return canonicalFloat(b, f)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := canonical(b, e, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(p, q string) int {
			return slices.Compare(utf16.Encode([]rune(p)), utf16.Encode([]rune(q)))
		})
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			canonicalString(b, k)
			b.WriteByte(':')
			if err := canonical(b, x[k], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		j, ok := toJSON(v)
		if !ok {
			return fmt.Errorf("%T has no JSON form", v)
		}
		return canonical(b, j, depth+1)
	}
	return nil
}

func canonicalFloat(b *bytes.Buffer, f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("number %v has no JSON form", f)
	}
	if f == 0 {
		f = 0 // -0 is 0
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		// Integral values print without exponent or fraction, as in
		// ECMAScript, up to 1e21.
		b.WriteString(strconv.FormatFloat(f, 'f', -1, 64))
		return nil
	}
	out, err := json.Marshal(f) // ECMAScript-style shortest form
	if err != nil {
		return err
	}
	b.Write(out)
	return nil
}

// canonicalString writes s as a JSON string with only the escapes JSON
// requires: the quote, the backslash and control characters. Invalid UTF-8
// becomes U+FFFD.
func canonicalString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}
