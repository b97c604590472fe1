package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// bomb returns a schema of about 2 KB that expands to 2^levels schemas: each
// level refers to the next one twice.
func bomb(levels int, twice func(next string) string) string {
	var defs []string
	for i := range levels {
		next := fmt.Sprintf(`{"$ref": "#/$defs/d%d"}`, i+1)
		defs = append(defs, fmt.Sprintf(`"d%d": %s`, i, twice(next)))
	}
	defs = append(defs, fmt.Sprintf(`"d%d": {"type": "string"}`, levels))
	return `{"$defs": {` + strings.Join(defs, ", ") + `}, "$ref": "#/$defs/d0"}`
}

func anyOfBomb(levels int) string {
	return bomb(levels, func(next string) string { return `{"anyOf": [` + next + `, ` + next + `]}` })
}

func propertiesBomb(levels int) string {
	return bomb(levels, func(next string) string { return `{"properties": {"a": ` + next + `, "b": ` + next + `}}` })
}

// chain returns a schema whose root reaches a string schema through n
// consecutive references.
func chain(n int) string {
	var defs []string
	for i := range n - 1 {
		defs = append(defs, fmt.Sprintf(`"d%d": {"$ref": "#/$defs/d%d"}`, i, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"d%d": {"type": "string"}`, n-1))
	return `{"$defs": {` + strings.Join(defs, ", ") + `}, "$ref": "#/$defs/d0"}`
}

// nested returns a schema whose JSON nests depth objects.
func nested(depth int) string {
	return strings.Repeat(`{"items": `, depth-1) + `{}` + strings.Repeat(`}`, depth-1)
}

const draft7URI = `"http://json-schema.org/draft-07/schema#"`

func TestCompileAccepts(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		opts *CompileOptions
	}{
		{"typical input schema", `{"type": "object", "properties": {"path": {"type": "string", "description": "file"}, "line_limit": {"type": "integer", "minimum": 1, "maximum": 1000}}, "required": ["path"], "additionalProperties": false}`, &CompileOptions{RequireObject: true}},
		{"pydantic style", `{"type": "object", "title": "Args", "$defs": {"Mode": {"type": "string", "enum": ["a", "b"], "title": "Mode"}}, "properties": {"mode": {"$ref": "#/$defs/Mode"}, "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}}}`, &CompileOptions{RequireObject: true}},
		{"draft-07 zod style", `{"$schema": ` + draft7URI + `, "type": "object", "properties": {"q": {"type": "string", "format": "uri"}}, "required": ["q"], "additionalProperties": false}`, &CompileOptions{RequireObject: true}},
		{"draft-07 https without #", `{"$schema": "https://json-schema.org/draft-07/schema", "type": "object"}`, nil},
		{"draft 2020-12 explicit", `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}`, nil},
		{"draft 2020-12 http with #", `{"$schema": "http://json-schema.org/draft/2020-12/schema#", "type": "object"}`, nil},
		{"recursive tree", `{"type": "object", "$defs": {"node": {"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}, "properties": {"root": {"$ref": "#/$defs/node"}}}`, nil},
		{"recursion through the root", `{"type": "object", "properties": {"next": {"$ref": "#"}}, "additionalProperties": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}}`, nil},
		{"recursion through propertyNames and contains", `{"$defs": {"s": {"propertyNames": {"$ref": "#/$defs/s"}, "contains": {"$ref": "#/$defs/s"}}}, "$ref": "#/$defs/s"}`, nil},
		{"anchor", `{"$defs": {"x": {"$anchor": "thing", "type": "integer"}}, "properties": {"a": {"$ref": "#thing"}}}`, nil},
		{"draft-07 anchor", `{"$schema": ` + draft7URI + `, "definitions": {"x": {"$id": "#thing", "type": "integer"}}, "properties": {"a": {"$ref": "#thing"}}}`, nil},
		{"draft-07 root ref with definitions", `{"$schema": ` + draft7URI + `, "$ref": "#/definitions/Args", "definitions": {"Args": {"type": "object"}}}`, nil},
		{"draft-07 tuple", `{"$schema": ` + draft7URI + `, "type": "array", "items": [{"type": "string"}], "additionalItems": false, "dependencies": {"a": ["b"], "c": {"required": ["d"]}}}`, nil},
		{"root $id with absolute ref", `{"$id": "https://example.com/tool.json", "$defs": {"a": {"type": "string"}}, "properties": {"x": {"$ref": "https://example.com/tool.json#/$defs/a"}, "y": {"$ref": "tool.json#/$defs/a"}}}`, nil},
		{"escaped pointer refs", `{"$defs": {"a b": {"type": "string"}, "c/d": {"type": "string"}, "e~f": {"type": "string"}}, "properties": {"x": {"$ref": "#/$defs/a%20b"}, "y": {"$ref": "#/$defs/c~1d"}, "z": {"$ref": "#/$defs/e~0f"}}}`, nil},
		{"keyword names as property names", `{"type": "object", "properties": {"type": {"type": "string"}, "nullable": {"type": "boolean"}, "$ref": {"type": "string"}, "properties": {"type": "object"}}, "required": ["type", "$ref"]}`, &CompileOptions{RequireObject: true}},
		{"keyword names in data", `{"enum": [{"nullable": true, "$ref": "https://example.com"}], "const": {"$dynamicRef": 1}, "default": {"unevaluatedProperties": false}, "examples": [{"x-foo": 1}]}`, nil},
		{"keyword names as defs and pattern keys", `{"$defs": {"nullable": {"type": "null"}}, "patternProperties": {"^\\$ref$": {"$ref": "#/$defs/nullable"}}, "dependentSchemas": {"unknownKeyword": {"required": ["x"]}}}`, nil},
		{"x-mcp-header on a property", `{"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}`, &CompileOptions{RequireObject: true}},
		{"boolean root", `true`, nil},
		{"annotations", `{"title": "t", "description": "d", "$comment": "c", "deprecated": true, "readOnly": false, "writeOnly": false, "format": "email", "contentEncoding": "base64", "contentMediaType": "application/json", "contentSchema": {"type": "object"}, "examples": [1]}`, nil},
		{"applicators", `{"if": {"required": ["a"]}, "then": {"required": ["b"]}, "else": {"required": ["c"]}, "not": {"type": "null"}, "oneOf": [{"type": "object"}, {"type": "array"}], "prefixItems": [{"type": "string"}], "items": false, "contains": {"type": "integer"}, "minContains": 1, "maxContains": 2, "dependentRequired": {"a": ["b"]}, "propertyNames": {"maxLength": 8}}`, nil},
		{"chain at the limit", chain(DefaultSchemaMaxRefDepth), nil},
		{"nesting at the limit", nested(DefaultSchemaMaxDepth), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile(json.RawMessage(tt.doc), tt.opts)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if s.JSON() == nil {
				t.Errorf("JSON() is empty")
			}
		})
	}
}

func TestCompileRejects(t *testing.T) {
	tests := []struct {
		name      string
		doc       string
		opts      *CompileOptions
		ptr       string
		reasonHas string
	}{
		{"unknown keyword", `{"type": "object", "properties": {"a": {"type": "string", "nullable": true}}}`, nil, "/properties/a/nullable", `unknown keyword "nullable"`},
		{"unknown extension keyword", `{"x-order": 1}`, nil, "/x-order", `unknown keyword "x-order"`},
		{"draft-04", `{"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"}`, nil, "/$schema", "only draft 2020-12"},
		{"draft 2019-09", `{"$schema": "https://json-schema.org/draft/2019-09/schema"}`, nil, "/$schema", "only draft 2020-12"},
		{"custom meta-schema", `{"$schema": "https://example.com/meta"}`, nil, "/$schema", "is not supported"},
		{"non-string $schema", `{"$schema": 7}`, nil, "/$schema", "is not supported"},
		{"external ref", `{"properties": {"a": {"$ref": "https://example.com/s.json#/x"}}}`, nil, "/properties/a/$ref", `$ref "https://example.com/s.json#/x" points outside`},
		{"meta-schema ref", `{"$ref": "https://json-schema.org/draft/2020-12/schema"}`, nil, "/$ref", "points outside"},
		{"relative ref without $id", `{"$ref": "other.json#/x"}`, nil, "/$ref", "points outside"},
		{"ref to another document under $id", `{"$id": "https://example.com/a.json", "$ref": "b.json"}`, nil, "/$ref", "points outside"},
		{"ref to nothing", `{"$ref": "#/$defs/missing"}`, nil, "/$ref", "does not point to a schema"},
		{"ref into enum data", `{"properties": {"a": {"enum": [{"type": "string"}]}}, "$ref": "#/properties/a/enum/0"}`, nil, "/$ref", "does not point to a schema"},
		{"ref to unknown anchor", `{"$ref": "#nope"}`, nil, "/$ref", `anchor "nope"`},
		{"ref with bad pointer escape", `{"$defs": {"a": true}, "$ref": "#/$defs/~2"}`, nil, "/$ref", "not a valid JSON Pointer"},
		{"self cycle", `{"$ref": "#"}`, nil, "", "unbounded reference cycle"},
		{"allOf cycle", `{"allOf": [{"$ref": "#"}]}`, nil, "/allOf/0", "unbounded reference cycle"},
		{"defs cycle", `{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}`, nil, "/$defs/b/anyOf/1", "/$defs/a -> /$defs/b -> /$defs/b/anyOf/1 -> /$defs/a"},
		{"not cycle", `{"not": {"$ref": "#"}}`, nil, "/not", "unbounded reference cycle"},
		{"if cycle", `{"if": {"$ref": "#"}, "then": true}`, nil, "/if", "unbounded reference cycle"},
		{"dependentSchemas cycle", `{"dependentSchemas": {"a": {"$ref": "#"}}}`, nil, "/dependentSchemas/a", "unbounded reference cycle"},
		{"draft-07 dependencies cycle", `{"$schema": ` + draft7URI + `, "dependencies": {"a": {"$ref": "#"}}}`, nil, "/dependencies/a", "unbounded reference cycle"},
		{"cycle in unused defs", `{"$defs": {"a": {"$ref": "#/$defs/a"}}, "type": "object"}`, nil, "/$defs/a", "unbounded reference cycle"},
		{"dynamic ref", `{"$dynamicRef": "#meta"}`, nil, "/$dynamicRef", "dynamic references are not supported"},
		{"recursive ref", `{"$recursiveRef": "#"}`, nil, "/$recursiveRef", "not supported"},
		{"vocabulary", `{"$vocabulary": {}}`, nil, "/$vocabulary", "not supported"},
		{"unevaluatedProperties", `{"type": "object", "unevaluatedProperties": false}`, nil, "/unevaluatedProperties", `use "additionalProperties"`},
		{"unevaluatedItems", `{"items": {"unevaluatedItems": false}}`, nil, "/items/unevaluatedItems", "not supported"},
		{"additionalItems in 2020-12", `{"additionalItems": false}`, nil, "/additionalItems", `does not belong to draft 2020-12`},
		{"dependencies in 2020-12", `{"dependencies": {}}`, nil, "/dependencies", "dependentRequired"},
		{"prefixItems in draft-07", `{"$schema": ` + draft7URI + `, "prefixItems": [true]}`, nil, "/prefixItems", "does not belong to draft-07"},
		{"$anchor in draft-07", `{"$schema": ` + draft7URI + `, "$anchor": "a"}`, nil, "/$anchor", `"$id": "#name"`},
		{"draft-07 ref sibling", `{"$schema": ` + draft7URI + `, "definitions": {"a": true}, "properties": {"x": {"$ref": "#/definitions/a", "type": "string"}}}`, nil, "/properties/x/type", `keywords beside "$ref" are ignored`},
		{"nested $schema", `{"properties": {"a": {"$schema": "https://json-schema.org/draft/2020-12/schema"}}}`, nil, "/properties/a/$schema", "only allowed at the root"},
		{"nested $id", `{"$defs": {"a": {"$id": "https://example.com/a.json"}}}`, nil, "/$defs/a/$id", "only allowed at the root"},
		{"$id with fragment", `{"$id": "https://example.com/a.json#x"}`, nil, "/$id", "without a fragment"},
		{"duplicate anchor", `{"$defs": {"a": {"$anchor": "x"}, "b": {"$anchor": "x"}}}`, nil, "/$defs/b/$anchor", "already defined at /$defs/a"},
		{"not an object root", `{"type": "string"}`, &CompileOptions{RequireObject: true}, "", `"type": "object"`},
		{"boolean root", `true`, &CompileOptions{RequireObject: true}, "", `"type": "object"`},
		{"root without type", `{"properties": {}}`, &CompileOptions{RequireObject: true}, "", `"type": "object"`},
		{"root type list", `{"type": ["object", "null"]}`, &CompileOptions{RequireObject: true}, "", `"type": "object"`},
		{"x-mcp-header at the root", `{"type": "string", "x-mcp-header": "X"}`, nil, "/x-mcp-header", `only on a schema under "properties"`},
		{"x-mcp-header empty", `{"properties": {"a": {"x-mcp-header": ""}}}`, nil, "/properties/a/x-mcp-header", "non-empty HTTP header name"},
		{"x-mcp-header with space", `{"properties": {"a": {"x-mcp-header": "A B"}}}`, nil, "/properties/a/x-mcp-header", "header name"},
		{"bad type", `{"type": "strin"}`, nil, "/type", "type must be one of"},
		{"repeated type", `{"type": ["string", "string"]}`, nil, "/type/1", "listed twice"},
		{"negative minLength", `{"minLength": -1}`, nil, "/minLength", "non-negative integer"},
		{"fractional maxItems", `{"maxItems": 1.5}`, nil, "/maxItems", "non-negative integer"},
		{"zero multipleOf", `{"multipleOf": 0}`, nil, "/multipleOf", "greater than 0"},
		{"string maximum", `{"maximum": "5"}`, nil, "/maximum", "must be a number"},
		{"required not array", `{"required": "a"}`, nil, "/required", "array of property names"},
		{"required repeated", `{"required": ["a", "a"]}`, nil, "/required/1", "listed twice"},
		{"property not a schema", `{"properties": {"a": 5}}`, nil, "/properties/a", "expected a schema"},
		{"empty anyOf", `{"anyOf": []}`, nil, "/anyOf", "non-empty array"},
		{"2020-12 items array", `{"items": [{"type": "string"}]}`, nil, "/items", "expected a schema"},
		{"invalid pattern", `{"pattern": "("}`, nil, "/pattern", "invalid regular expression"},
		{"invalid pattern property", `{"patternProperties": {"[": true}}`, nil, "/patternProperties/[", "invalid regular expression"},
		{"lookahead pattern", `{"pattern": "^(?=a)"}`, nil, "/pattern", "invalid regular expression"},
		{"invalid JSON", `{"type": }`, nil, "/type", "not valid JSON"},
		{"duplicate keys", `{"type": "object", "type": "string"}`, nil, "/type", "duplicate key"},
		{"too large", `{"description": "` + strings.Repeat("x", 200) + `"}`, &CompileOptions{MaxBytes: 100}, "", "more than MaxBytes (100)"},
		{"too deep", nested(DefaultSchemaMaxDepth + 1), nil, strings.Repeat("/items", DefaultSchemaMaxDepth), "deeper than MaxDepth (32)"},
		{"chain too long", chain(DefaultSchemaMaxRefDepth + 1), nil, fmt.Sprintf("/$defs/d%d", DefaultSchemaMaxRefDepth), "longer than MaxRefDepth (16)"},
		{"anyOf bomb", anyOfBomb(20), nil, "", "more than MaxExpansion (10000)"},
		{"properties bomb", propertiesBomb(20), nil, "", "more than MaxExpansion (10000)"},
		{"small expansion limit", `{"properties": {"a": true, "b": true, "c": true}}`, &CompileOptions{MaxExpansion: 3}, "/properties/c", "more than MaxExpansion (3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile(json.RawMessage(tt.doc), tt.opts)
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("Compile = %v, %v; want a *CompileError", s, err)
			}
			// Expansion errors name the schema where the count ran out,
			// which depends on traversal order; only check it is named.
			if (tt.ptr != "" || !strings.Contains(tt.name, "bomb")) && ce.Pointer != tt.ptr {
				t.Errorf("pointer = %q, want %q (error: %v)", ce.Pointer, tt.ptr, err)
			}
			if !strings.Contains(ce.Reason, tt.reasonHas) {
				t.Errorf("reason = %q, want it to contain %q", ce.Reason, tt.reasonHas)
			}
		})
	}
}

func TestCompileBombSize(t *testing.T) {
	for _, doc := range []string{anyOfBomb(20), propertiesBomb(20)} {
		if n := len(doc); n > 2500 {
			t.Errorf("bomb is %d bytes; the test is about small documents", n)
		}
	}
}

func TestCompileErrorMessage(t *testing.T) {
	_, err := Compile(json.RawMessage(`{"type": "object", "properties": {"a": {"nullable": true}}}`), nil)
	want := `schema rejected at /properties/a/nullable: unknown keyword "nullable"; only standard JSON Schema keywords are accepted, so remove it`
	if got := fmt.Sprint(err); got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
}

// TestCompileInputForms checks that every accepted form of the same document
// compiles to the same canonical JSON.
func TestCompileInputForms(t *testing.T) {
	text := `{"type": "object", "properties": {"b": {"type": "integer", "maximum": 10}, "a": {"type": "string", "pattern": "<&>"}}}`
	var asMap map[string]any
	if err := json.Unmarshal([]byte(text), &asMap); err != nil {
		t.Fatal(err)
	}
	type property struct {
		Type    string `json:"type"`
		Maximum int    `json:"maximum,omitempty"`
		Pattern string `json:"pattern,omitempty"`
	}
	asStruct := struct {
		Type       string              `json:"type"`
		Properties map[string]property `json:"properties"`
	}{"object", map[string]property{"b": {Type: "integer", Maximum: 10}, "a": {Type: "string", Pattern: "<&>"}}}

	want := `{"properties":{"a":{"pattern":"<&>","type":"string"},"b":{"maximum":10,"type":"integer"}},"type":"object"}`
	for name, doc := range map[string]any{
		"json.RawMessage": json.RawMessage(text),
		"[]byte":          []byte(text),
		"map[string]any":  asMap,
		"struct":          asStruct,
	} {
		s, err := Compile(doc, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := string(s.JSON()); got != want {
			t.Errorf("%s: JSON() = %s, want %s", name, got, want)
		}
	}
	if _, err := Compile(nil, nil); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Compile(nil) = %v, want a missing-schema error", err)
	}
}

func TestSchemaJSONKeepsNumbers(t *testing.T) {
	s, err := Compile(json.RawMessage(`{"maximum": 1.50, "minimum": 1e2, "const": 123456789012345678901234567890}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"const":123456789012345678901234567890,"maximum":1.50,"minimum":1e2}`
	if diff := cmp.Diff(want, string(s.JSON())); diff != "" {
		t.Errorf("JSON() mismatch (-want +got):\n%s", diff)
	}
}

// TestLibraryNeverLoads checks the last line of defence: even when a document
// with an external reference reaches the JSON Schema library, nothing is
// fetched and the error names the reference.
func TestLibraryNeverLoads(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"type": "string"}`)
	}))
	defer srv.Close()

	for _, ref := range []string{srv.URL + "/schema.json", "file:///etc/passwd", "urn:example:other"} {
		doc := map[string]any{"properties": map[string]any{"a": map[string]any{"$ref": ref}}}
		_, err := compileWithLibrary(doc, draft2020, false)
		var ce *CompileError
		if !errors.As(err, &ce) || !strings.Contains(ce.Reason, "outside the document") {
			t.Errorf("ref %q: error %v, want a refusal to load", ref, err)
		}
		if ref == srv.URL+"/schema.json" && !strings.Contains(ce.Reason, ref) {
			t.Errorf("ref %q: error %q does not name the reference", ref, ce.Reason)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the test server was contacted %d times", n)
	}
}

func TestLibraryErrorsNamePlace(t *testing.T) {
	// Documents that only the library's meta-schema check would refuse.
	tests := []struct {
		doc any
		ptr string
	}{
		{map[string]any{"properties": map[string]any{"a": map[string]any{"minLength": json.Number("-1")}}}, "/properties/a/minLength"},
		{map[string]any{"type": "strin"}, "/type"},
	}
	for _, tt := range tests {
		_, err := compileWithLibrary(tt.doc, draft2020, false)
		var ce *CompileError
		if !errors.As(err, &ce) || ce.Pointer != tt.ptr || !strings.Contains(ce.Reason, "not a valid JSON Schema") {
			t.Errorf("compileWithLibrary(%v) = %#v, want a CompileError at %q", tt.doc, err, tt.ptr)
		}
	}
}

func TestFormatIsAnnotation(t *testing.T) {
	for _, doc := range []string{
		`{"$schema": ` + draft7URI + `, "properties": {"d": {"type": "string", "format": "date"}, "r": {"format": "regex"}, "e": {"format": "email"}}}`,
		`{"properties": {"d": {"type": "string", "format": "date"}, "r": {"format": "regex"}, "e": {"format": "email"}}}`,
	} {
		s, err := Compile(json.RawMessage(doc), nil)
		if err != nil {
			t.Fatal(err)
		}
		v := map[string]any{"d": "not a date", "r": "(", "e": "nobody"}
		if err := s.Validate(v); err != nil {
			t.Errorf("Validate: %v; format must not be asserted", err)
		}
		if !strings.Contains(string(s.JSON()), `"format":"date"`) {
			t.Errorf("JSON() = %s lost the format annotation", s.JSON())
		}
	}
}
