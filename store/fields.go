package store

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"
)

// encodeFields encodes an event's fields as json.Marshal does, byte for
// byte (the chain covers these bytes, and events written before must
// read and verify alike), without its reflection for the values the host
// writes most: strings, integers, booleans, nested objects and arrays.
// Every other value, and every string json.Marshal would escape, is
// encoded by json.Marshal itself.
func encodeFields(fields map[string]any) ([]byte, error) {
	return appendObject(make([]byte, 0, 64*len(fields)), fields)
}

func appendObject(b []byte, m map[string]any) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	var room [32]string // the keys of most objects, without a slice on the heap
	keys := room[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendJSONString(b, k); err != nil {
			return nil, err
		}
		b = append(b, ':')
		if b, err = appendValue(b, m[k]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendJSONString(b, x)
	case bool:
		return strconv.AppendBool(b, x), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case uint64:
		return strconv.AppendUint(b, x, 10), nil
	case float64:
		// json.Marshal's own format in the range where it uses 'f'.
		if a := math.Abs(x); a == 0 || a >= 1e-6 && a < 1e21 {
			return strconv.AppendFloat(b, x, 'f', -1, 64), nil
		}
	case map[string]any:
		return appendObject(b, x)
	case []any:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		var err error
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendValue(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	// A named string type (policy.Verdict, say) is its string, unless it
	// says otherwise.
	if s, ok := plainString(v); ok {
		return appendJSONString(b, s)
	}
	return appendMarshaled(b, v)
}

// plainString returns v's string if v is of a string type that json.Marshal
// encodes as the string itself: one that marshals itself neither to JSON
// nor to text, and not json.Number (a number).
func plainString(v any) (string, bool) {
	switch v.(type) {
	case json.Number, json.Marshaler, encoding.TextMarshaler:
		return "", false
	}
	if r := reflect.ValueOf(v); r.Kind() == reflect.String {
		return r.String(), true
	}
	return "", false
}

// appendJSONString quotes s as it is when json.Marshal would escape nothing
// in it (no control characters, quotes, backslashes, HTML's <, > and &,
// invalid UTF-8, U+2028 or U+2029).
func appendJSONString(b []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return appendMarshaled(b, s)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return appendMarshaled(b, s)
		}
		i += size
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}

func appendMarshaled(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}
