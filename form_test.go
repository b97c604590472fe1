package airlock

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestForms: what a server may ask for in a form (MCP's flat schemas,
// with SEP-1330's enums), and how answers are checked against it.
func TestForms(t *testing.T) {
	for _, tt := range []struct {
		name, schema string
		refused      string // what the error says, "" for a form the host takes
	}{
		{"no schema", `null`, ""},
		{"primitives", `{"type":"object","properties":{"s":{"type":"string","format":"email"},"n":{"type":"number","minimum":1},
			"i":{"type":"integer"},"b":{"type":"boolean","default":true}}}`, ""},
		{"plain enum", `{"type":"object","properties":{"c":{"type":"string","enum":["a","b"],"enumNames":["A","B"]}}}`, ""},
		{"titled enum", `{"type":"object","properties":{"c":{"type":"string","oneOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]}}}`, ""},
		{"multi-select", `{"type":"object","properties":{"c":{"type":"array","items":{"type":"string","enum":["a","b"]},"minItems":1}}}`, ""},
		{"titled multi-select", `{"type":"object","properties":{"c":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"}]}}}}`, ""},
		{"not an object", `{"type":"string"}`, `not of type "object"`},
		{"nested", `{"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"string"}}}}}`, "nested"},
		{"free array", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"string"}}}}`, "choices"},
		{"bad default", `{"type":"object","properties":{"n":{"type":"integer","default":"x"}}}`, "default"},
	} {
		var doc any
		if err := json.Unmarshal([]byte(tt.schema), &doc); err != nil {
			t.Fatal(err)
		}
		_, _, err := newForm(doc)
		switch {
		case tt.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.name, err)
		case tt.refused != "" && (err == nil || !strings.Contains(err.Error(), tt.refused)):
			t.Errorf("%s: error %v, want one that says %q", tt.name, err, tt.refused)
		}
	}

	f, _, err := newForm(map[string]any{"type": "object", "required": []any{"c"}, "properties": map[string]any{
		"c": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []any{"a", "b"}}},
		"n": map[string]any{"type": "integer", "default": 3},
		"e": map[string]any{"type": "string", "format": "email"},
		"d": map[string]any{"type": "string", "format": "date"}}})
	if err != nil {
		t.Fatal(err)
	}
	req := &InputRequest{form: f}
	for _, tt := range []struct {
		answer *InputAnswer
		want   string // the content sent, or the error's words
	}{
		{&InputAnswer{Action: AnswerAccept, Content: map[string]any{"c": []any{"a"}}}, `{"c":["a"],"n":3}`},
		{&InputAnswer{Action: AnswerAccept, Content: map[string]any{"c": []any{"z"}}}, "does not fit"},
		{&InputAnswer{Action: AnswerAccept}, "does not fit"},
		// The formats MCP names are checked, not only shown.
		{&InputAnswer{Action: AnswerAccept, Content: map[string]any{"c": []any{"a"}, "e": "ann@example.com", "d": "2026-12-01"}},
			`{"c":["a"],"d":"2026-12-01","e":"ann@example.com","n":3}`},
		{&InputAnswer{Action: AnswerAccept, Content: map[string]any{"c": []any{"a"}, "e": "not-an-email"}}, "/e"},
		{&InputAnswer{Action: AnswerAccept, Content: map[string]any{"c": []any{"a"}, "d": "yesterday"}}, "/d"},
		{&InputAnswer{Action: AnswerDecline, Content: map[string]any{"c": "ignored"}}, `null`},
		{&InputAnswer{Action: "ok"}, "answer accept, decline or cancel"},
	} {
		content, err := req.content(tt.answer)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			b, _ := json.Marshal(content)
			got = string(b)
		}
		if !strings.Contains(got, tt.want) {
			t.Errorf("answer %+v: got %s, want %s", tt.answer, got, tt.want)
		}
	}
}
