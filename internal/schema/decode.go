package schema

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Default limits for [DecodeOptions].
const (
	DefaultMaxDepth = 64
	DefaultMaxBytes = 4 << 20
)

// hardMaxDepth caps MaxDepth so that the recursive parser and validator keep a
// bounded stack whatever a caller configures.
const hardMaxDepth = 10000

// DecodeOptions bounds what [Decode] and [Check] accept. A nil *DecodeOptions
// or a zero field means the default.
type DecodeOptions struct {
	// MaxDepth is the deepest nesting of arrays and objects accepted; a scalar
	// has depth 0 and "[[]]" has depth 2. Default 64, at most 10000.
	MaxDepth int
	// MaxBytes is the largest input accepted, in bytes. Default 4 MiB.
	MaxBytes int
	// CaseFold rejects objects with two keys that are equal under Unicode case
	// folding (strings.EqualFold), such as "path" and "Path".
	CaseFold bool
}

func (o *DecodeOptions) limits() (maxDepth, maxBytes int, caseFold bool) {
	maxDepth, maxBytes = DefaultMaxDepth, DefaultMaxBytes
	if o != nil {
		if o.MaxDepth > 0 {
			maxDepth = min(o.MaxDepth, hardMaxDepth)
		}
		if o.MaxBytes > 0 {
			maxBytes = o.MaxBytes
		}
		caseFold = o.CaseFold
	}
	return maxDepth, maxBytes, caseFold
}

// DecodeError reports JSON that [Decode] or [Check] refused. Its message is
// written for whoever produced the input (often a model) to fix it.
type DecodeError struct {
	// Pointer is the JSON Pointer (RFC 6901) of the value where the problem
	// was found; "" is the whole input.
	Pointer string
	// Reason says what is wrong and how to fix it.
	Reason string

	code decodeCode
}

// decodeCode classifies a DecodeError; tests use it to tell the rules this
// package adds from plain JSON syntax errors.
type decodeCode uint8

const (
	codeSyntax      decodeCode = iota // not JSON; encoding/json refuses it too
	codeUTF8                          // invalid UTF-8 in the text
	codeSurrogate                     // escaped unpaired UTF-16 surrogate
	codeDuplicate                     // the same key twice in one object
	codeCaseFold                      // two keys equal under case folding
	codeDepth                         // nested deeper than MaxDepth
	codeSize                          // larger than MaxBytes
	codeNumber                        // number beyond the supported range
	codeCaseVariant                   // key differs in case from a declared property
)

// Error returns "pointer: reason", or only the reason for the whole input.
func (e *DecodeError) Error() string {
	if e.Pointer == "" {
		return e.Reason
	}
	return e.Pointer + ": " + e.Reason
}

// Decode parses untrusted JSON text into map[string]any, []any, string,
// json.Number, bool and nil values.
//
// It refuses, with a *DecodeError: input larger than MaxBytes, empty input,
// a leading byte order mark, anything that is not a single JSON value,
// invalid UTF-8 anywhere (encoding/json would silently replace it), escaped
// unpaired UTF-16 surrogates such as "\ud800" (they cannot become valid
// Unicode, and replacing them would make distinct keys collide), the same key
// twice in one object, keys equal under Unicode case folding when
// opts.CaseFold is set, nesting deeper than MaxDepth, and numbers longer than
// 1000 bytes or with an exponent beyond ±1000 (no real argument needs them and
// exact arithmetic on them is expensive). Numbers keep their exact text.
func Decode(data []byte, opts *DecodeOptions) (any, error) {
	p, err := newParser(data, opts, true)
	if err != nil {
		return nil, err
	}
	defer p.release()
	v, ok := p.document()
	if !ok {
		return nil, p.error()
	}
	return v, nil
}

// Check applies exactly the rules of [Decode] without building the value. It
// allocates only for objects with many keys and for error reports, so it is
// cheap enough to run on every message a server sends.
func Check(data []byte, opts *DecodeOptions) error {
	p, err := newParser(data, opts, false)
	if err != nil {
		return err
	}
	defer p.release()
	if _, ok := p.document(); !ok {
		return p.error()
	}
	return nil
}

// appendPointerToken appends "/" and one RFC 6901-escaped reference token.
func appendPointerToken(b []byte, tok string) []byte {
	b = append(b, '/')
	for i := 0; i < len(tok); i++ {
		switch c := tok[i]; c {
		case '~':
			b = append(b, '~', '0')
		case '/':
			b = append(b, '~', '1')
		default:
			b = append(b, c)
		}
	}
	return b
}

// pointerString renders reference tokens as a JSON Pointer.
func pointerString(toks []string) string {
	var b []byte
	for _, t := range toks {
		b = appendPointerToken(b, shortToken(t))
	}
	return string(b)
}

// shortToken cuts a key of a pointer in a message to maxQuoted
// characters, marked with …: the key is the caller's own, and a huge one
// must not come back whole.
func shortToken(t string) string {
	if head, left := clip(t); left > 0 {
		return head + "…"
	}
	return t
}

// quoteForMessage quotes s for an error message, shortened so that a hostile
// key or value cannot flood the message.
func quoteForMessage(s string) string {
	if head, left := clip(s); left > 0 {
		return strings.TrimSuffix(jsonQuote(head), `"`) + `…"`
	}
	return jsonQuote(s)
}

// maxQuoted is how many characters of a caller's own key or value a
// message quotes.
const maxQuoted = 64

// clip cuts s to maxQuoted characters; left is how many bytes it left out.
func clip(s string) (head string, left int) {
	n := 0
	for i := range s {
		if n == maxQuoted {
			return s[:i], len(s) - i
		}
		n++
	}
	return s, 0
}

// jsonQuote quotes s as a JSON string, leaving <, > and & readable.
func jsonQuote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return `"?"`
	}
	return strings.TrimSuffix(b.String(), "\n")
}
