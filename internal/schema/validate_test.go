package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const readFileSchema = `{"type": "object", "properties": {
	"path": {"type": "string", "minLength": 1},
	"line_limit": {"type": "integer", "minimum": 1, "maximum": 1000},
	"offset": {"type": "integer", "minimum": 0}},
	"required": ["path"], "additionalProperties": false}`

const treeSchema = `{"$defs": {"node": {"type": "object", "properties": {"name": {"type": "string"},
	"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}, "$ref": "#/$defs/node"}`

func mustCompile(t testing.TB, doc string) *Schema {
	t.Helper()
	s, err := Compile(json.RawMessage(doc), nil)
	if err != nil {
		t.Fatalf("Compile(%s): %v", doc, err)
	}
	return s
}

func mustDecode(t testing.TB, text string) any {
	t.Helper()
	v, err := Decode([]byte(text), nil)
	if err != nil {
		t.Fatalf("Decode(%s): %v", text, err)
	}
	return v
}

// validationTests pair schemas and values with the message a model sees
// ("" when the value is valid).
var validationTests = []struct {
	name, schema, value, want string
}{
	{"valid", readFileSchema, `{"path": "a.txt", "line_limit": 10, "offset": 0}`, ""},
	{"maximum", readFileSchema, `{"path": "a", "line_limit": 5000}`, `/line_limit: must be <= 1000, got 5000`},
	{"not an integer", readFileSchema, `{"path": "a", "line_limit": 1.5}`, `/line_limit: got number, want integer`},
	{"integer written as float", readFileSchema, `{"path": "a", "line_limit": 10.0}`, ""},
	{"string for integer", readFileSchema, `{"path": "a", "line_limit": "5"}`, `/line_limit: got string, want integer`},
	{"missing required", readFileSchema, `{"line_limit": 5}`, `missing property 'path'`},
	{"case variant", readFileSchema, `{"path": "a", "Path": "b"}`, `additional properties 'Path' not allowed`},
	{"min length", readFileSchema, `{"path": ""}`, `/path: must be at least 1 characters long, got 0`},
	{"several errors", readFileSchema, `{"path": "a", "line_limit": 0, "offset": -1}`, `/line_limit: must be >= 1, got 0; /offset: must be >= 0, got -1`},
	{"wrong root type", readFileSchema, `"x"`, `got string, want object`},
	{"details capped", readFileSchema, `{"path": 1, "line_limit": 0, "offset": -1, "x": 1, "y": 2}`,
		`additional properties 'x', 'y' not allowed; /line_limit: must be >= 1, got 0; /offset: must be >= 0, got -1; /path: got number, want string`},

	{"enum", `{"enum": ["a", "b", null, 1]}`, `"c"`, `value must be one of 'a', 'b', <nil>, 1`},
	{"enum of objects", `{"enum": [{"a": 1}]}`, `{"a": 2}`, `'enum' failed`},
	{"enum by value", `{"enum": [1, "x"]}`, `1.0`, ""},
	{"const", `{"const": 3}`, `4`, `value must be 3`},
	{"const string", `{"const": "on"}`, `"off"`, `value must be 'on'`},
	{"type list", `{"type": ["string", "null"]}`, `1`, `got number, want null or string`},
	{"anyOf", `{"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]}`, `-1`,
		`got number, want string; must be >= 0, got -1`},
	{"oneOf twice", `{"oneOf": [{"type": "integer"}, {"minimum": 0}]}`, `5`, `'oneOf' failed, subschemas 0, 1 matched`},
	{"oneOf none", `{"oneOf": [{"type": "integer"}, {"type": "string"}]}`, `true`,
		`got boolean, want integer; got boolean, want string`},
	{"not", `{"not": {"type": "null"}}`, `null`, `'not' failed`},
	{"items", `{"type": "array", "items": {"type": "string"}, "maxItems": 2}`, `["a", 1, "c"]`, `must have at most 2 items, got 3; /1: got number, want string`},
	{"unique items by value", `{"uniqueItems": true}`, `[1, "a", 1.0]`, `items at 0 and 2 are equal`},
	{"unique objects", `{"uniqueItems": true}`, `[{"a": 1, "b": 2}, {"b": 2, "a": 1}]`, `items at 0 and 1 are equal`},
	{"pattern", `{"pattern": "^[a-z]+$"}`, `"A"`, `'A' does not match pattern '^[a-z]+$'`},
	{"pattern is a search", `{"pattern": "b"}`, `"abc"`, ""},
	{"pattern, long value", `{"pattern": "^(a+)+$"}`, `"` + strings.Repeat("a", 100000) + `!"`,
		`'` + strings.Repeat("a", 64) + `… (99937 more bytes)' does not match pattern '^(a+)+$'`},
	{"long key in the pointer", `{"additionalProperties": {"type": "integer"}}`, `{"` + strings.Repeat("k", 100000) + `": "x"}`,
		`/` + strings.Repeat("k", 64) + `…: got string, want integer`},
	{"many additional properties", `{"additionalProperties": false}`,
		`{"a0":1,"a1":1,"a2":1,"a3":1,"a4":1,"a5":1,"a6":1,"a7":1,"a8":1,"a9":1,"b0":1,"b1":1}`,
		`additional properties 'a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8', 'a9' not allowed (and 2 more)`},
	{"max length counts characters", `{"maxLength": 2}`, `"hé"`, ""},
	{"max length", `{"maxLength": 2}`, `"héé"`, `must be at most 2 characters long, got 3`},
	{"multipleOf decimal", `{"multipleOf": 0.1}`, `0.3`, ""},
	{"not a multiple", `{"multipleOf": 0.1}`, `0.35`, `must be a multiple of 0.1, got 0.35`},
	{"exclusive bounds", `{"exclusiveMinimum": 0, "exclusiveMaximum": 10}`, `10`, `must be < 10, got 10`},
	{"dependentRequired", `{"dependentRequired": {"a": ["b", "c"]}}`, `{"a": 1}`, `properties 'b', 'c' required, if 'a' exists`},
	{"dependentSchemas", `{"dependentSchemas": {"a": {"required": ["b"]}}}`, `{"a": 1}`, `missing property 'b'`},
	{"propertyNames", `{"propertyNames": {"maxLength": 3}}`, `{"abcd": 1}`, `must be at most 3 characters long, got 4`},
	{"patternProperties", `{"patternProperties": {"^n_": {"type": "number"}}, "additionalProperties": false}`, `{"n_a": "x"}`, `/n_a: got string, want number`},
	{"contains", `{"contains": {"type": "integer"}}`, `["a"]`, `/0: got string, want integer`},
	{"minContains", `{"contains": {"type": "integer"}, "minContains": 2}`, `[1, "a"]`, `/1: got string, want integer`},
	{"minContains zero", `{"contains": {"type": "integer"}, "minContains": 0}`, `[]`, ""},
	{"maxContains", `{"contains": {"type": "integer"}, "maxContains": 1}`, `[1, 2]`, `must contain at most 1 matching items, got 2`},
	{"prefixItems and no more", `{"prefixItems": [true, true], "items": false}`, `[1, 2, 3]`, `/2: false schema`},
	{"false property", `{"properties": {"x": false}}`, `{"x": 1}`, `/x: false schema`},
	{"if then", `{"if": {"properties": {"kind": {"const": "file"}}}, "then": {"required": ["path"]}, "else": {"required": ["url"]}}`, `{"kind": "file"}`, `missing property 'path'`},
	{"if else", `{"if": {"properties": {"kind": {"const": "file"}}}, "then": {"required": ["path"]}, "else": {"required": ["url"]}}`, `{"kind": "web"}`, `missing property 'url'`},
	{"recursive", treeSchema, `{"children": [{"name": "a"}, {"children": [{"name": 5}]}]}`, `/children/1/children/0/name: got number, want string`},
	{"pointer escaping", `{"properties": {"a/b": {"type": "string"}, "c~d": {"type": "string"}}}`, `{"a/b": 1, "c~d": 2}`, `/a~1b: got number, want string; /c~0d: got number, want string`},
	{"minProperties", `{"minProperties": 2}`, `{"a": 1}`, `must have at least 2 properties, got 1`},
	{"ref with siblings in 2020-12", `{"$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s", "maxLength": 1}`, `"ab"`, `must be at most 1 characters long, got 2`},
	{"draft-07 tuple", `{"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}], "additionalItems": {"type": "integer"}}`, `["a", 1, "b"]`, `/2: got string, want integer`},
	{"draft-07 dependencies", `{"$schema": "http://json-schema.org/draft-07/schema#", "dependencies": {"a": ["b"], "c": {"required": ["d"]}}}`, `{"a": 1, "c": 1}`, `missing property 'd'; properties 'b' required, if 'a' exists`},
	{"long enum is shortened", `{"enum": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}`, `0`, `value must be one of 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12`},
}

func TestValidateMessages(t *testing.T) {
	for _, tt := range validationTests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, tt.schema)
			v := mustDecode(t, tt.value)
			err := s.Validate(v)
			got := ""
			if err != nil {
				var ve *ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("Validate error %T, want *ValidationError", err)
				}
				if len(ve.Details) > maxDetails {
					t.Errorf("%d details, want at most %d", len(ve.Details), maxDetails)
				}
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Validate(%s)\n got: %s\nwant: %s", tt.value, got, tt.want)
			}
		})
	}
}

func TestValidationErrorFields(t *testing.T) {
	s := mustCompile(t, readFileSchema)
	err := s.Validate(mustDecode(t, `{"path": "a", "line_limit": 5000, "offset": -2}`))
	want := &ValidationError{Pointer: "/line_limit", Reason: "must be <= 1000, got 5000", Details: []string{"/offset: must be >= 0, got -2"}}
	if diff := cmp.Diff(want, err); diff != "" {
		t.Errorf("Validate mismatch (-want +got):\n%s", diff)
	}
}

func TestValidateNumbers(t *testing.T) {
	huge := "123456789012345678901234567890"
	tests := []struct {
		name   string
		schema string
		value  any
		valid  bool
	}{
		{"1.0 is an integer", `{"type": "integer"}`, json.Number("1.0"), true},
		{"1e2 is an integer", `{"type": "integer"}`, json.Number("1e2"), true},
		{"1.5e1 is an integer", `{"type": "integer"}`, json.Number("1.5e1"), true},
		{"100e-2 is an integer", `{"type": "integer"}`, json.Number("100e-2"), true},
		{"10e-2 is not", `{"type": "integer"}`, json.Number("10e-2"), false},
		{"1.5 is not", `{"type": "integer"}`, json.Number("1.5"), false},
		{"huge integer", `{"type": "integer"}`, json.Number(huge), true},
		{"float64 integer", `{"type": "integer"}`, 3.0, true},
		{"float64 fraction", `{"type": "integer"}`, 3.5, false},
		{"float64 beyond int64", `{"type": "integer"}`, 1e20, true},
		{"Go int", `{"type": "integer"}`, 3, true},
		{"max uint64", `{"type": "integer", "minimum": 18446744073709551615}`, uint64(math.MaxUint64), true},
		{"float32", `{"type": "number", "maximum": 0.1}`, float32(0.1), true},
		{"exact beyond float64", `{"maximum": 9007199254740992}`, json.Number("9007199254740993"), false},
		{"exact at bound", `{"maximum": 9007199254740992}`, json.Number("9007199254740992"), true},
		{"huge bound", `{"maximum": ` + huge + `}`, json.Number("123456789012345678901234567891"), false},
		{"huge bound equal", `{"maximum": ` + huge + `}`, json.Number(huge), true},
		{"huge bound fraction below", `{"maximum": ` + huge + `}`, json.Number("123456789012345678901234567889.9999"), true},
		{"float64 is its shortest decimal", `{"exclusiveMinimum": 0.1}`, 0.1, false},
		{"decimal just above", `{"exclusiveMinimum": 0.1}`, json.Number("0.1000000000000000000001"), true},
		{"decimal equal to bound", `{"exclusiveMinimum": 0.1}`, json.Number("0.1"), false},
		{"const by value", `{"const": 1}`, json.Number("1e0"), true},
		{"const float64", `{"const": 1}`, 1.0, true},
		{"enum float64", `{"enum": [0.1]}`, 0.1, true},
		{"multipleOf float64", `{"multipleOf": 0.01}`, 19.99, true},
		{"multipleOf integer", `{"multipleOf": 7}`, json.Number("49"), true},
		{"multipleOf huge", `{"multipleOf": 7}`, json.Number("700000000000000000000000000007"), true},
		{"negative zero", `{"const": 0}`, json.Number("-0"), true},
		{"tiny number", `{"exclusiveMinimum": 0}`, json.Number("1e-1000"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, tt.schema)
			err := s.Validate(tt.value)
			if (err == nil) != tt.valid {
				t.Errorf("Validate(%v) = %v, want valid=%v", tt.value, err, tt.valid)
			}
		})
	}
}

func TestIntegerLiteral(t *testing.T) {
	for _, lit := range []string{"0", "-0", "1", "1.0", "1.5", "1e2", "1E+2", "1e-2", "100e-2", "10e-2", "0.0e-5", "1.25e2",
		"1.25e1", "-0.5e1", "1200.00e-2", "1.0e-1", "0.001e3", "0.0001e3", "5e-0", "123456789012345678901234567890.000"} {
		n := numFromLiteral(lit)
		want := n.rat().IsInt()
		if got := integerLiteral(lit); got != want {
			t.Errorf("integerLiteral(%q) = %v, want %v", lit, got, want)
		}
	}
}

func TestValidateRejectsNonJSONValues(t *testing.T) {
	s := mustCompile(t, `{}`)
	tests := []struct {
		name  string
		value any
		want  string
	}{
		{"NaN", map[string]any{"a": []any{math.NaN()}}, "number must be finite"},
		{"infinity", math.Inf(1), "number must be finite"},
		{"bad json.Number", json.Number("abc"), `"abc" is not a valid JSON number in the supported range`},
		{"huge exponent", json.Number("1e99999"), "not a valid JSON number"},
		{"Go map type", map[string]string{}, "value of Go type map[string]string is not a JSON value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Validate(tt.value)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestValidateBudget checks that schemas which pass every compile bound but
// still take exponential time on some values are stopped, not run to the end.
func TestValidateBudget(t *testing.T) {
	// Each level tries two alternatives that both descend into "a": 2^depth
	// evaluations. Compile refuses it before any value arrives.
	branching := `{"$defs": {"n": {"anyOf": [
		{"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}},
		{"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}, "minProperties": 1}]}},
		"$ref": "#/$defs/n"}`
	if _, err := Compile(json.RawMessage(branching), nil); err == nil || !strings.Contains(err.Error(), "validation work grows with the depth") {
		t.Errorf("Compile(branching recursion) = %v, want it refused", err)
	}
	// The same recursion through one alternative is linear, and accepted.
	linear := mustCompile(t, `{"$defs": {"n": {"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"}`)
	deep := strings.Repeat(`{"a": `, 60) + `{}` + strings.Repeat(`}`, 60)
	if err := linear.Validate(mustDecode(t, deep)); err != nil {
		t.Errorf("Validate(deep value, linear schema) = %v", err)
	}

	// A regular expression with a thousand-instruction program on a long
	// string, and a wide schema on a large value, are refused up front.
	pattern := mustCompile(t, `{"pattern": "a{1000}x"}`)
	var wide strings.Builder
	wide.WriteString(`{"type": "array", "items": {"allOf": [`)
	for i := range 2000 {
		if i > 0 {
			wide.WriteString(",")
		}
		fmt.Fprintf(&wide, `{"minimum": %d}`, -i)
	}
	wide.WriteString(`]}}`)
	many := make([]any, 5000)
	for i := range many {
		many[i] = json.Number("1")
	}
	tests := []struct {
		name  string
		s     *Schema
		value any
	}{
		{"expensive regular expression", pattern, strings.Repeat("a", 1<<20)},
		{"wide schema, large value", mustCompile(t, wide.String()), many},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.s.Validate(tt.value)
			if err == nil || !strings.Contains(err.Error(), "too complex") {
				t.Errorf("Validate = %v, want a too-complex error", err)
			}
		})
	}

	// The same regular expression on a short string is fine.
	if err := pattern.Validate(strings.Repeat("a", 1000) + "x"); err != nil {
		t.Errorf("Validate(short string) = %v", err)
	}
}

func TestValidateSDKValues(t *testing.T) {
	s := mustCompile(t, readFileSchema)
	// The MCP SDK decodes arguments with encoding/json into float64.
	var v any
	if err := json.Unmarshal([]byte(`{"path": "a", "line_limit": 1000, "offset": 0}`), &v); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(v); err != nil {
		t.Errorf("Validate(SDK value) = %v", err)
	}
	v.(map[string]any)["line_limit"] = 1000.5
	if err := s.Validate(v); err == nil || err.Error() != "/line_limit: got number, want integer" {
		t.Errorf("Validate(1000.5) = %v", err)
	}
}

// TestConcurrentUse runs one Schema from many goroutines; with -race it
// checks that validation never writes to shared state.
func TestConcurrentUse(t *testing.T) {
	s := mustCompile(t, `{"type": "object", "properties": {"n": {"type": "number", "maximum": 0.5, "multipleOf": 0.25},
		"e": {"enum": [1.5, "x"]}, "p": {"pattern": "^a"}}, "patternProperties": {"^z": {"minimum": 1}}}`)
	values := []string{`{"n": 0.25, "e": 1.5, "p": "ab", "z1": 2}`, `{"n": 0.75}`, `{"n": 0.3}`, `{"e": "y", "p": "b", "z": 0}`}
	done := make(chan error)
	for i := range 8 {
		go func() {
			var err error
			for j := range 200 {
				v := mustDecode(t, values[(i+j)%len(values)])
				got := s.Validate(v)
				if want := (i+j)%len(values) == 0; want != (got == nil) {
					err = fmt.Errorf("value %d: %v", (i+j)%len(values), got)
				}
				_ = s.CheckCaseVariants(v)
			}
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func TestNestedAlternativesMessage(t *testing.T) {
	s := mustCompile(t, `{"properties": {"a": {"anyOf": [{"type": "string"}, {"properties": {"b": {"type": "integer"}}}]}}}`)
	err := s.Validate(mustDecode(t, `{"a": {"b": "x"}}`))
	want := `/a: got object, want string; /a/b: got string, want integer`
	if err == nil || err.Error() != want {
		t.Errorf("Validate = %v\nwant %s", err, want)
	}
}
