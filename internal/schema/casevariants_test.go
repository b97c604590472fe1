package schema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCheckCaseVariants(t *testing.T) {
	const schema = `{"type": "object",
		"$defs": {"item": {"properties": {"name": {"type": "string"}}}},
		"properties": {
			"path": {"type": "string"},
			"options": {"type": "object", "properties": {"recursive": {"type": "boolean"}}},
			"items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
			"pair": {"prefixItems": [{"properties": {"id": true}}]}},
		"patternProperties": {"^x-": {"properties": {"inner": true}}},
		"anyOf": [{"properties": {"mode": true}}, true],
		"additionalProperties": {"properties": {"nested": true}}}`
	tests := []struct {
		name   string
		schema string
		value  string
		ptr    string
	}{
		{"exact names", schema, `{"path": "a", "options": {"recursive": true}, "items": [{"name": "n"}]}`, ""},
		{"top level", schema, `{"Path": "a"}`, "/Path"},
		{"upper case", schema, `{"PATH": "a"}`, "/PATH"},
		{"nested property", schema, `{"path": "a", "options": {"Recursive": true}}`, "/options/Recursive"},
		{"through items and $ref", schema, `{"items": [{"name": "a"}, {"NAME": "b"}]}`, "/items/1/NAME"},
		{"through prefixItems", schema, `{"pair": [{"Id": 1}]}`, "/pair/0/Id"},
		{"through anyOf", schema, `{"Mode": 1}`, "/Mode"},
		{"through patternProperties", schema, `{"x-a": {"INNER": 1}}`, "/x-a/INNER"},
		{"through additionalProperties", schema, `{"other": {"Nested": 1}}`, "/other/Nested"},
		{"Kelvin sign", `{"properties": {"kind": true}}`, "{\"\u212aind\": 1}", "/\u212aind"},
		{"not a variant", schema, `{"paths": "a"}`, ""},
		{"undeclared keys are Decode's business", schema, `{"foo": 1, "FOO": 2}`, ""},
		{"both spellings declared", `{"properties": {"path": true, "Path": true}}`, `{"Path": 1}`, ""},
		{"Unicode folding", `{"properties": {"straße": true}}`, `{"STRAßE": 1}`, "/STRAßE"},
		{"through if/then", `{"if": true, "then": {"properties": {"a": true}}}`, `{"A": 1}`, "/A"},
		{"recursive schema", treeSchema, `{"children": [{"children": [{"Name": "x"}]}]}`, "/children/0/children/0/Name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, tt.schema)
			err := s.CheckCaseVariants(mustDecode(t, tt.value))
			if tt.ptr == "" {
				if err != nil {
					t.Fatalf("CheckCaseVariants = %v, want nil", err)
				}
				return
			}
			var de *DecodeError
			if !errors.As(err, &de) || de.Pointer != tt.ptr {
				t.Fatalf("CheckCaseVariants = %v, want a *DecodeError at %q", err, tt.ptr)
			}
			if !strings.Contains(de.Reason, "differs only in letter case") {
				t.Errorf("reason = %q", de.Reason)
			}
		})
	}
}

func TestCheckCaseVariantsMessage(t *testing.T) {
	s := mustCompile(t, readFileSchema)
	var v any
	if err := json.Unmarshal([]byte(`{"Path": "a"}`), &v); err != nil {
		t.Fatal(err)
	}
	want := `/Path: key "Path" differs only in letter case from the property "path" that the schema declares; use the exact name "path"`
	if got := s.CheckCaseVariants(v); got == nil || got.Error() != want {
		t.Errorf("CheckCaseVariants = %v, want %s", got, want)
	}
}
