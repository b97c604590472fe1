// Package canonical writes JSON values in one canonical form, so that two
// encodings are equal exactly when the values are, and hashes that form.
// The approval digest (policy), the journal's and the audit trail's
// argument hashes (the root package) and internal/redact, to tell shapes
// apart, all use it, so that equal arguments give equal bytes wherever
// they are recorded. Number is the exact decimal that the encoding, and
// policy's Cedar values, read JSON numbers as.
//
// It imports no other Airlock package, so that any layer may import it
// (each importer is listed in the layer table, layers_test.go).
package canonical

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf8"
)

// JSON encodes v as canonical JSON: one text for each JSON value, so that
// two encodings are equal exactly when the values are.
//
//   - Objects have their keys sorted by their UTF-8 bytes (which is code
//     point order) and no whitespace.
//   - Strings escape only ", \ and the control characters below U+0020
//     (\b, \f, \n, \r and \t in their short form, the others as \u00XX);
//     everything else is written as UTF-8. A string that is not valid UTF-8
//     is an error, not silently replaced.
//   - Numbers are exact: 1, 1.0 and 10e-1 are the same value and give "1";
//     9007199254740993 keeps every digit (see [Number.String] for the form).
//
// This is RFC 8785 (JCS) except for two points: keys are in code point
// order where JCS sorts UTF-16 code units (the two differ only for keys
// that hold characters beyond U+FFFF), and numbers are exact where JCS
// rounds them to float64, so that two calls whose arguments differ beyond
// float64 precision never share a digest or a hash.
//
// v may hold what encoding/json decodes (map[string]any, []any, string,
// bool, nil, float64 or json.Number), Go integers and floats, and
// json.RawMessage; any other value is encoded with encoding/json first.
// NaN and infinities are errors.
func JSON(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := encode(&b, v, false, 0); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Display is JSON for a person to read: it also escapes DEL, the C1
// controls, the line and paragraph separators and every Unicode format
// character (bidirectional overrides, zero-width joiners, tags), so that
// what a person reads on a terminal is what the value holds.
func Display(v any) (string, error) {
	var b bytes.Buffer
	if err := encode(&b, v, true, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Hash returns "sha256:" and the hex SHA-256 of the canonical JSON of v.
// Equal JSON values hash alike whatever their key order or number
// spelling. A value that has no canonical form (NaN, a string that is not
// UTF-8, a channel) hashes as its Go type name.
func Hash(v any) string {
	b := buffers.Get().(*bytes.Buffer)
	defer putBuffer(b)
	var sum [sha256.Size]byte
	if err := encode(b, v, false, 0); err != nil {
		sum = sha256.Sum256(fmt.Appendf(nil, "unencodable %T", v))
	} else {
		sum = sha256.Sum256(b.Bytes())
	}
	const prefix = "sha256:"
	var out [len(prefix) + 2*sha256.Size]byte
	copy(out[:], prefix)
	hex.Encode(out[len(prefix):], sum[:])
	return string(out[:])
}

// buffers keeps Hash's buffers for reuse: the text it hashes is thrown
// away.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// putBuffer returns b to buffers, unless it grew too large to keep.
func putBuffer(b *bytes.Buffer) {
	if b.Cap() > 64<<10 {
		return
	}
	b.Reset()
	buffers.Put(b)
}

// maxDepth bounds nesting; the host's strict decoder allows far less.
const maxDepth = 10000

// encode writes v. display escapes characters that would mislead a person
// reading the text on a terminal (see writeString).
func encode(b *bytes.Buffer, v any, display bool, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("nested deeper than %d levels", maxDepth)
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		return writeString(b, x, display)
	case map[string]any:
		var room [32]string // the keys of most objects, without a slice on the heap
		keys := room[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeString(b, k, display); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := encode(b, x[k], display, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encode(b, e, display, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case json.RawMessage:
		d, err := Decode(x)
		if err != nil {
			return err
		}
		return encode(b, d, display, depth)
	default:
		n, ok, err := NumberOf(v)
		if err != nil {
			return err
		}
		if ok {
			b.WriteString(n.String())
			return nil
		}
		// Other Go values (structs, typed maps and slices) take the form
		// encoding/json gives them, then the canonical form of that.
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode %T: %w", v, err)
		}
		d, err := Decode(raw)
		if err != nil {
			return err
		}
		return encode(b, d, display, depth)
	}
	return nil
}

// Decode decodes data, which must hold exactly one JSON value, keeping
// numbers exact (as json.Number).
func Decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("invalid JSON: more than one value")
	}
	return v, nil
}

// writeString writes s as a JSON string. With display set, it also escapes
// DEL, the C1 controls, the line and paragraph separators and every
// Unicode format character (bidirectional overrides, zero-width joiners,
// tags), so that what a person reads is what the call carries.
func writeString(b *bytes.Buffer, s string, display bool) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("a string is not valid UTF-8")
	}
	b.WriteByte('"')
	// Runs of characters written as they are go in at once.
	from := 0
	for i, r := range s {
		var esc string
		switch {
		case r == '"':
			esc = `\"`
		case r == '\\':
			esc = `\\`
		case r == '\b':
			esc = `\b`
		case r == '\f':
			esc = `\f`
		case r == '\n':
			esc = `\n`
		case r == '\r':
			esc = `\r`
		case r == '\t':
			esc = `\t`
		case r < 0x20:
		case display && (r == 0x7f || 0x80 <= r && r <= 0x9f || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Cf, r)):
		default:
			continue
		}
		b.WriteString(s[from:i])
		if esc != "" {
			b.WriteString(esc)
		} else {
			writeEscape(b, r)
		}
		from = i + utf8.RuneLen(r)
	}
	b.WriteString(s[from:])
	b.WriteByte('"')
	return nil
}

// writeEscape writes r as \uXXXX, as a surrogate pair beyond U+FFFF.
func writeEscape(b *bytes.Buffer, r rune) {
	if r > 0xffff {
		r -= 0x10000
		fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		return
	}
	fmt.Fprintf(b, `\u%04x`, r)
}
