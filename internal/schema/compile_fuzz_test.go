package schema

import (
	"encoding/json"
	"errors"
	"testing"
)

func valueDepth(v any) int {
	d := 0
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			d = max(d, valueDepth(e))
		}
		return d + 1
	case []any:
		for _, e := range x {
			d = max(d, valueDepth(e))
		}
		return d + 1
	}
	return 0
}

// FuzzCompile checks that Compile never panics and always terminates with a
// *CompileError or a schema, that the canonical JSON of a schema compiles to
// itself, and that validation never panics and is deterministic.
func FuzzCompile(f *testing.F) {
	for _, tt := range validationTests {
		f.Add([]byte(tt.schema), []byte(tt.value))
	}
	for _, doc := range []string{
		readFileSchema, treeSchema, anyOfBomb(20), propertiesBomb(12), chain(17), nested(33),
		`{"$ref": "#"}`, `{"$ref": "https://example.com/x"}`, `{"$schema": "http://json-schema.org/draft-04/schema#"}`,
		`{"$defs": {"x": {"$anchor": "a", "type": "integer"}}, "items": {"$ref": "#a"}}`,
		`{"$id": "https://example.com/t.json", "$defs": {"a": true}, "$ref": "t.json#/$defs/a"}`,
		`{"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"a": {"$id": "#a", "type": "string"}}, "$ref": "#a"}`,
		`{"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}`,
		`{"patternProperties": {"^a+$": {"type": "integer"}}, "propertyNames": {"pattern": "^[a-z]+$"}}`,
	} {
		f.Add([]byte(doc), []byte(`{"a": [1, "x", {"b": null}], "path": "p"}`))
	}
	f.Fuzz(func(t *testing.T, doc, value []byte) {
		s, err := Compile(json.RawMessage(doc), nil)
		if err != nil {
			var ce *CompileError
			if !errors.As(err, &ce) || ce.Reason == "" {
				t.Fatalf("Compile error %T %v, want a *CompileError with a reason", err, err)
			}
			return
		}
		again, err := Compile(s.JSON(), nil)
		if err != nil {
			t.Fatalf("the canonical form %s does not compile: %v", s.JSON(), err)
		}
		if string(again.JSON()) != string(s.JSON()) {
			t.Fatalf("canonical form changed: %s then %s", s.JSON(), again.JSON())
		}

		v, err := Decode(value, nil)
		if err != nil {
			return
		}
		first := s.Validate(v)
		if second := s.Validate(v); (first == nil) != (second == nil) || (first != nil && first.Error() != second.Error()) {
			t.Fatalf("Validate is not deterministic: %v, then %v", first, second)
		}
		if first != nil {
			var ve *ValidationError
			if !errors.As(first, &ve) || ve.Reason == "" {
				t.Fatalf("Validate error %T %v, want a *ValidationError with a reason", first, first)
			}
		}
		if err := s.CheckCaseVariants(v); err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("CheckCaseVariants error %T, want *DecodeError", err)
			}
		}
	})
}
