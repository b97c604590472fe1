package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"testing"
)

// FuzzTopLevel: topLevel, with its one-Unmarshal fast path, accepts and
// refuses exactly what reading the object token by token does, and splits
// it alike.
func FuzzTopLevel(f *testing.F) {
	for _, seed := range []string{
		`{"id":1,"cmd":"call","name":"fs__write","args":{"path":"a","text":"b"}}`,
		`{"name":"a","name":"b"}`,
		`{"name":"a","n\u0061me":"b"}`,
		`{"a":{"b":1,"b":2}}`,
		`{"a":"x:y\"}{:","b":[{"c":":"}]}`,
		`{"a":"\\","b":"\\\""}`,
		"{\"\xff\":1,\"\xfe\":2}",
		`null`, `[]`, `"s"`, `{}`, ` { } `, `{"a":1} x`, `{"a":1}{}`, `{"a":`, `{`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		fast, fastErr := topLevel(text)
		slow, slowErr := topLevelTokens(text)
		if (fastErr == nil) != (slowErr == nil) {
			t.Fatalf("%q: topLevel says %v, token by token %v", text, fastErr, slowErr)
		}
		if fastErr == nil && !maps.EqualFunc(fast, slow, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
			t.Fatalf("%q: topLevel split it into %q, token by token into %q", text, fast, slow)
		}
	})
}

// TestTopLevelRefuses: what a command line must not be, and the reason
// given.
func TestTopLevelRefuses(t *testing.T) {
	for text, want := range map[string]string{
		`{"name":"a","name":"b"}`:      `duplicate key "name"`,
		`{"name":"a","n\u0061me":"b"}`: `duplicate key "name"`,
		`null`:                         "not a JSON object",
		`{"a":1} x`:                    "",
	} {
		_, err := topLevel([]byte(text))
		if err == nil {
			t.Errorf("%s: accepted", text)
			continue
		}
		if want != "" && err.Error() != want {
			t.Errorf("%s: %q, want %q", text, err, want)
		}
	}
}
