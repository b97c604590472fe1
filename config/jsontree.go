package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"unicode/utf8"
)

// A small strict JSON reader: encoding/json's token stream, kept as a tree
// with byte offsets so that messages can give line numbers and duplicate
// keys can be refused (encoding/json would keep the last one silently).

type jsonKind int

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

// jsonValue is one decoded value; off is the byte offset of its first byte.
type jsonValue struct {
	kind    jsonKind
	off     int
	text    string // a string's value, or a number as written
	b       bool
	items   []*jsonValue
	members []jsonMember
}

type jsonMember struct {
	key string
	off int // offset of the key
	val *jsonValue
}

func (v *jsonValue) kindName() string {
	switch v.kind {
	case jsonNull:
		return "null"
	case jsonBool:
		return "true/false"
	case jsonNumber:
		return "a number"
	case jsonString:
		return "a string"
	case jsonArray:
		return "an array"
	}
	return "an object"
}

// maxJSONDepth is far deeper than any mcpServers file needs.
const maxJSONDepth = 64

type jsonReader struct {
	data []byte
	dec  *json.Decoder
}

// posError is a problem at a byte offset.
type posError struct {
	off int
	msg string
}

func (e *posError) Error() string { return e.msg }

// decodeJSON parses data as exactly one JSON value. Errors carry the line.
func decodeJSON(data []byte, file string) (*jsonValue, *Error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &Error{File: file, Msg: `is empty: it should hold {"mcpServers": {...}}`}
	}
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, size := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			off += size
		}
		return nil, &Error{File: file, Line: lineAt(data, off), Msg: "is not valid UTF-8"}
	}
	jr := &jsonReader{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	jr.dec.UseNumber()
	v, err := jr.value(0)
	if err == nil {
		off := jr.start()
		if _, terr := jr.dec.Token(); !errors.Is(terr, io.EOF) {
			err = &posError{off, "invalid JSON: unexpected data after the end of the top-level object"}
		}
	}
	if err != nil {
		return nil, jr.toError(err, file)
	}
	return v, nil
}

// start returns the offset of the next token: encoding/json reports the
// end of the previous one, before any space, colon or comma.
func (jr *jsonReader) start() int {
	off := int(jr.dec.InputOffset())
	for off < len(jr.data) {
		switch jr.data[off] {
		case ' ', '\t', '\r', '\n', ':', ',':
			off++
		default:
			return off
		}
	}
	return off
}

func (jr *jsonReader) value(depth int) (*jsonValue, error) {
	off := jr.start()
	if depth > maxJSONDepth {
		return nil, &posError{off, "invalid JSON: nested too deeply"}
	}
	tok, err := jr.dec.Token()
	if err != nil {
		return nil, err
	}
	v := &jsonValue{off: off}
	switch t := tok.(type) {
	case nil:
		v.kind = jsonNull
	case bool:
		v.kind, v.b = jsonBool, t
	case json.Number:
		v.kind, v.text = jsonNumber, string(t)
	case string:
		v.kind, v.text = jsonString, t
	case json.Delim:
		switch t {
		case '{':
			v.kind = jsonObject
			for jr.dec.More() {
				koff := jr.start()
				kt, err := jr.dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, &posError{koff, "invalid JSON: object keys must be strings"}
				}
				val, err := jr.value(depth + 1)
				if err != nil {
					return nil, err
				}
				v.members = append(v.members, jsonMember{key: key, off: koff, val: val})
			}
		case '[':
			v.kind = jsonArray
			for jr.dec.More() {
				item, err := jr.value(depth + 1)
				if err != nil {
					return nil, err
				}
				v.items = append(v.items, item)
			}
		default:
			return nil, &posError{off, fmt.Sprintf("invalid JSON: unexpected %q", rune(t))}
		}
		// The closing delimiter.
		if _, err := jr.dec.Token(); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func (jr *jsonReader) toError(err error, file string) *Error {
	var pe *posError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &pe):
		return &Error{File: file, Line: lineAt(jr.data, pe.off), Msg: pe.msg}
	case errors.As(err, &se):
		return &Error{File: file, Line: lineAt(jr.data, jr.syntaxErrorAt(se)), Msg: "invalid JSON: " + se.Error()}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{File: file, Line: lineAt(jr.data, len(bytes.TrimRight(jr.data, " \t\r\n"))-1), Msg: "invalid JSON: the file ends in the middle of a value"}
	}
	return &Error{File: file, Msg: "invalid JSON: " + err.Error()}
}

// syntaxErrorAt returns the offset of the character a syntax error is
// about. Errors from inside a value are reported just after the offending
// character; errors from the token stream at the end of the previous token,
// before any space. The message names the character, so look for it.
func (jr *jsonReader) syntaxErrorAt(se *json.SyntaxError) int {
	off := max(0, min(int(se.Offset)-1, len(jr.data)))
	m := badChar.FindStringSubmatch(se.Error())
	if m == nil {
		return off
	}
	c, err := strconv.Unquote(m[1])
	if err != nil || len(c) != 1 {
		return off
	}
	if i := bytes.IndexByte(jr.data[off:], c[0]); i >= 0 {
		return off + i
	}
	return off
}

var badChar = regexp.MustCompile(`^invalid character ('(?:[^'\\]|\\.)+')`)

// lineAt returns the 1-based line of byte offset off.
func lineAt(data []byte, off int) int {
	off = max(0, min(off, len(data)))
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}
