package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"strings"
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

// TestDecodeCommand: a line's members land in their fields, null
// arguments are none, and a member of the wrong type or an unknown one is
// refused, saying which.
func TestDecodeCommand(t *testing.T) {
	var cmd shellCommand
	if err := decodeCommand([]byte(`{"id":7,"cmd":"call","name":"fs__write","args":{"a":1},"context":null,"content":null,"server":"s","value":"v"}`), &cmd); err != nil {
		t.Fatal(err)
	}
	if string(cmd.ID) != "7" || cmd.Cmd != "call" || cmd.Name != "fs__write" || string(cmd.Args) != `{"a":1}` || cmd.Context != nil ||
		string(cmd.Content) != "null" || cmd.Server != "s" || cmd.Value != "v" {
		t.Errorf("decoded %+v", cmd)
	}
	cmd = shellCommand{}
	if err := decodeCommand([]byte(`{"cmd":"call","args":null}`), &cmd); err != nil || cmd.Args != nil {
		t.Errorf("null args: %q, %v; want none", cmd.Args, err)
	}
	for text, want := range map[string]string{
		`{"id":1,"cmd":5}`:                            `"cmd" must be a string`,
		`{"id":1,"cmd":"call","name":{}}`:             `"name" must be a string`,
		`{"id":1,"Name":"x"}`:                         `unknown key "Name"`,
		`{"id":1,"content":[1]}`:                      `"content" must be a JSON object`,
		`{"id":1,"cmd":"call","name":"a","name":"b"}`: `duplicate key "name"`,
		`{"id":1,"cmd":"turn"} {}`:                    `not a valid JSON command`,
		`{"cmd":"turn","id":1}x`:                      `not a valid JSON command`,
	} {
		cmd = shellCommand{}
		err := decodeCommand([]byte(text), &cmd)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %s", text, err, want)
		}
		if string(cmd.ID) != "1" {
			t.Errorf("%s: the id of a refused line is %q, want 1 (its reply must carry it)", text, cmd.ID)
		}
	}
	// Where the id cannot be told, the reply's is null.
	for _, text := range []string{`{"id":1,"id":2,"cmd":"turn"}`, `{"id":1,"cmd":`, `[{"id":1}]`, `{"id":1,"args":` + strings.Repeat("[", 20000) + `}`} {
		cmd = shellCommand{}
		if err := decodeCommand([]byte(text), &cmd); err == nil || cmd.ID != nil {
			t.Errorf("%.40s: id %q, %v; want an error and no id", text, cmd.ID, err)
		}
	}
}
