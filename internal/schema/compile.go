package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// libPrinter renders the library's messages about meta-schema violations.
var libPrinter = message.NewPrinter(language.Und)

// Default limits for [CompileOptions].
const (
	DefaultSchemaMaxBytes     = 64 << 10
	DefaultSchemaMaxDepth     = 32
	DefaultSchemaMaxRefDepth  = 16
	DefaultSchemaMaxExpansion = 10000
)

// CompileOptions bounds the schemas [Compile] accepts. A nil *CompileOptions
// or a zero field means the default.
type CompileOptions struct {
	// MaxBytes is the largest canonical JSON form of the document, in bytes.
	// Default 64 KiB.
	MaxBytes int
	// MaxDepth is the deepest JSON nesting of arrays and objects in the
	// document. Default 32.
	MaxDepth int
	// MaxRefDepth is the longest chain of $ref, allOf, anyOf, oneOf, not, if,
	// then, else and dependentSchemas followed without descending into a
	// property or item of the instance. Default 16.
	MaxRefDepth int
	// MaxExpansion is the number of schema nodes reachable from the root when
	// every $ref is inlined and reference cycles are cut. It stops schemas that
	// are small as text but exponential when expanded. Default 10000.
	MaxExpansion int
	// RequireObject demands that the root declare "type": "object", as an MCP
	// tool's inputSchema must.
	RequireObject bool
	// AssertFormat makes "format" (email, uri, date, date-time, …) an
	// assertion, as an elicitation's form wants its answers checked;
	// otherwise it is an annotation, as JSON Schema has it by default.
	AssertFormat bool
	// Cache, when not nil, keeps the schemas Compile accepts and gives back
	// the one compiled before from the same canonical text under the same
	// limits (see [Cache]). Nil compiles every document anew.
	Cache *Cache
}

type compileLimits struct {
	maxBytes, maxDepth, maxRefDepth, maxExpansion int
	requireObject, assertFormat                   bool
}

func (o *CompileOptions) limits() compileLimits {
	l := compileLimits{
		maxBytes:     DefaultSchemaMaxBytes,
		maxDepth:     DefaultSchemaMaxDepth,
		maxRefDepth:  DefaultSchemaMaxRefDepth,
		maxExpansion: DefaultSchemaMaxExpansion,
	}
	if o == nil {
		return l
	}
	if o.MaxBytes > 0 {
		l.maxBytes = o.MaxBytes
	}
	if o.MaxDepth > 0 {
		l.maxDepth = min(o.MaxDepth, hardMaxDepth)
	}
	if o.MaxRefDepth > 0 {
		l.maxRefDepth = o.MaxRefDepth
	}
	if o.MaxExpansion > 0 {
		l.maxExpansion = o.MaxExpansion
	}
	l.requireObject, l.assertFormat = o.RequireObject, o.AssertFormat
	return l
}

// CompileError reports a schema that [Compile] refused.
type CompileError struct {
	// Pointer is the JSON Pointer into the schema document where the problem
	// is; "" is the root.
	Pointer string
	// Reason says what is wrong.
	Reason string
}

// Error returns a one-line description naming the location.
func (e *CompileError) Error() string {
	if e.Pointer == "" {
		return "schema rejected: " + e.Reason
	}
	return "schema rejected at " + e.Pointer + ": " + e.Reason
}

// Schema is a compiled, bounded JSON Schema. It is immutable and safe for
// concurrent use.
type Schema struct {
	canonical   json.RawMessage
	root        *node              // the document's graph: bounds and case variants
	lib         *jsonschema.Schema // validation
	profile     []int64            // worst-case evaluations per value node, by value depth
	patternCost int                // instructions of the largest regular expression
}

// JSON returns the canonical JSON form of the document (object keys sorted,
// insignificant space removed, numbers as written): exactly what a model is
// shown. The caller must not modify it.
func (s *Schema) JSON() json.RawMessage { return s.canonical }

type draft int

const (
	draft2020 draft = iota
	draft7
)

func (d draft) String() string {
	if d == draft7 {
		return "draft-07"
	}
	return "draft 2020-12"
}

// docURL is the location the document is compiled at. It is not resolvable:
// the loader refuses everything, so it only names the document.
const docURL = "urn:airlock:schema"

// Compile compiles a tool's inputSchema or outputSchema as received from a
// server: a json.RawMessage or []byte of JSON text, or any value that
// encoding/json marshals to it (map[string]any as the MCP SDK delivers it).
//
// The document is checked before the JSON Schema library sees it: size,
// nesting depth, a keyword allowlist that every supported model provider can
// take, references that stay inside the document and resolve, no reference
// cycle that does not descend into the instance, and bounded chains and
// expansion. Without "$schema" the document is draft 2020-12; the draft-07
// and 2020-12 meta-schema URIs select those drafts and anything else is
// refused. "format" is an annotation and never asserted. Errors are
// *CompileError.
func Compile(doc any, opts *CompileOptions) (*Schema, error) {
	l := opts.limits()
	text, err := schemaText(doc)
	if err != nil {
		return nil, err
	}
	// Every check below depends only on the text and the limits: a schema
	// accepted before from the same text passed them all.
	var key cacheKey
	if opts != nil && opts.Cache != nil {
		key = keyOf(text, l)
		if s := opts.Cache.get(key, text); s != nil {
			return s, nil
		}
	}
	tree, err := normalize(text, l)
	if err != nil {
		return nil, err
	}
	canonical, err := canonicalJSON(tree)
	if err != nil {
		return nil, &CompileError{Reason: "cannot encode schema: " + err.Error()}
	}
	if len(canonical) > l.maxBytes {
		return nil, &CompileError{Reason: fmt.Sprintf("schema is %d bytes as canonical JSON, more than MaxBytes (%d)", len(canonical), l.maxBytes)}
	}

	d, err := detectDraft(tree)
	if err != nil {
		return nil, err
	}
	if l.requireObject {
		if err := requireObject(tree); err != nil {
			return nil, err
		}
	}

	c := newCompiler(d)
	root, err := c.build(tree)
	if err != nil {
		return nil, err
	}
	if err := c.checkBounds(root, l); err != nil {
		return nil, err
	}
	profile := c.workProfile(root)
	if w := profileAt(profile, argumentLevels); w > int64(l.maxExpansion) {
		return nil, &CompileError{Reason: fmt.Sprintf("validation work grows with the depth of the value: at %d levels it may evaluate more than MaxExpansion (%d) schemas at one place; do not let two alternatives apply the same recursive schema", argumentLevels, l.maxExpansion)}
	}

	// The library checks the document against its draft's meta-schema,
	// compiles it and validates with it.
	lib, err := compileWithLibrary(tree, d, l.assertFormat)
	if err != nil {
		return nil, err
	}
	s := &Schema{canonical: canonical, root: root, lib: lib, profile: profile, patternCost: c.patternCost}
	if opts != nil && opts.Cache != nil {
		opts.Cache.put(key, text, s)
	}
	return s, nil
}

// schemaText returns the JSON text of doc: doc itself when it is text,
// else what encoding/json makes of it.
func schemaText(doc any) ([]byte, error) {
	switch d := doc.(type) {
	case nil:
		return nil, &CompileError{Reason: "schema is missing"}
	case json.RawMessage:
		return d, nil
	case []byte:
		return d, nil
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, &CompileError{Reason: "schema is not JSON: " + err.Error()}
	}
	return b, nil
}

// normalize turns the text of a document into a fresh tree of
// map[string]any, []any, string, json.Number, bool and nil, decoded
// strictly so that what is compiled, what the model sees and what the size
// check measured are one value.
func normalize(raw []byte, l compileLimits) (any, error) {
	// Raw text may carry indentation, so it gets more room than the
	// canonical form; the canonical size is what MaxBytes bounds.
	tree, err := Decode(raw, &DecodeOptions{MaxDepth: l.maxDepth, MaxBytes: 16 * l.maxBytes})
	if err != nil {
		var de *DecodeError
		if errors.As(err, &de) {
			switch de.code {
			case codeDepth:
				return nil, &CompileError{Pointer: de.Pointer, Reason: fmt.Sprintf("schema nests arrays and objects deeper than MaxDepth (%d)", l.maxDepth)}
			case codeSize:
				return nil, &CompileError{Reason: fmt.Sprintf("schema text is larger than %d bytes (MaxBytes is %d for the canonical form)", 16*l.maxBytes, l.maxBytes)}
			}
			return nil, &CompileError{Pointer: de.Pointer, Reason: "schema is not valid JSON: " + de.Reason}
		}
		return nil, err
	}
	return tree, nil
}

// canonicalJSON encodes v with sorted keys (encoding/json sorts map keys) and
// without HTML escaping, so that the text stays readable.
func canonicalJSON(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// detectDraft reads the root "$schema".
func detectDraft(tree any) (draft, error) {
	obj, ok := tree.(map[string]any)
	if !ok {
		return draft2020, nil
	}
	v, ok := obj["$schema"]
	if !ok {
		return draft2020, nil
	}
	s, ok := v.(string)
	if ok {
		u := strings.TrimSuffix(s, "#")
		u, _ = strings.CutPrefix(u, "http://")
		u, _ = strings.CutPrefix(u, "https://")
		switch u {
		case "json-schema.org/draft-07/schema":
			return draft7, nil
		case "json-schema.org/draft/2020-12/schema":
			return draft2020, nil
		}
	}
	return 0, &CompileError{
		Pointer: "/$schema",
		Reason: fmt.Sprintf(`$schema %s is not supported; only draft 2020-12 ("https://json-schema.org/draft/2020-12/schema", the default) and draft-07 ("http://json-schema.org/draft-07/schema#") are accepted`,
			quoteForMessage(fmt.Sprint(v))),
	}
}

func requireObject(tree any) error {
	obj, ok := tree.(map[string]any)
	if !ok {
		return &CompileError{Reason: `the root must be a schema object with "type": "object", because tool arguments are always a JSON object`}
	}
	if t, ok := obj["type"].(string); !ok || t != "object" {
		return &CompileError{Reason: `the root must declare "type": "object", because tool arguments are always a JSON object`}
	}
	return nil
}

// refuseLoader is the library's only way to fetch a document; it refuses every
// one, so compiling never touches the network or the disk. (The library's
// meta-schemas are embedded in its binary and never go through a loader.)
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema references %q, outside the document; only references within the document are allowed", url)
}

// compileWithLibrary hands the checked document to
// github.com/santhosh-tekuri/jsonschema/v6, which validates it against its
// draft's meta-schema and compiles its regular expressions.
func compileWithLibrary(tree any, d draft, assertFormat bool) (*jsonschema.Schema, error) {
	if d == draft7 && !assertFormat {
		// The library asserts "format" under draft-07; here it stays an
		// annotation, so the library must not see it.
		stripFormat(tree)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	if assertFormat {
		c.AssertFormat()
	}
	if err := c.AddResource(docURL, tree); err != nil {
		return nil, &CompileError{Reason: "schema not accepted: " + err.Error()}
	}
	lib, err := c.Compile(docURL)
	if err != nil {
		return nil, libraryError(err)
	}
	return lib, nil
}

// libraryError turns an error of the JSON Schema library into a
// *CompileError that names a location in the document.
func libraryError(err error) error {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			leaf := deepestCause(ve)
			return &CompileError{
				Pointer: pointerString(leaf.InstanceLocation),
				Reason:  "not a valid " + "JSON Schema: " + leaf.ErrorKind.LocalizedString(libPrinter),
			}
		}
	}
	var lue *jsonschema.LoadURLError
	if errors.As(err, &lue) {
		return &CompileError{Reason: fmt.Sprintf("$ref to %q points outside the document; only references within the document are allowed", lue.URL)}
	}
	var rxe *jsonschema.InvalidRegexError
	if errors.As(err, &rxe) {
		return &CompileError{Pointer: fragmentOf(rxe.URL), Reason: fmt.Sprintf("invalid regular expression %s: %v", quoteForMessage(rxe.Regex), rxe.Err)}
	}
	return &CompileError{Reason: "schema not accepted: " + strings.ReplaceAll(err.Error(), docURL, "schema")}
}

// deepestCause picks the first of the most deeply located leaf errors, which is
// the most specific explanation of a meta-schema failure.
func deepestCause(ve *jsonschema.ValidationError) *jsonschema.ValidationError {
	best := ve
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			if len(e.InstanceLocation) > len(best.InstanceLocation) || len(best.Causes) > 0 {
				best = e
			}
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return best
}

func fragmentOf(u string) string {
	_, frag, _ := strings.Cut(u, "#")
	return frag
}

// stripFormat removes "format" from every schema object of a draft-07
// document. Keys under properties and similar maps are names, not keywords,
// and data under enum, const, default and examples is left alone.
func stripFormat(v any) {
	obj, ok := v.(map[string]any)
	if !ok {
		return
	}
	delete(obj, "format")
	for kw, val := range obj {
		switch keywords[kw].shape {
		case shapeSchema:
			stripFormat(val)
		case shapeSchemaOrArray, shapeSchemaArray:
			if arr, ok := val.([]any); ok {
				for _, s := range arr {
					stripFormat(s)
				}
			} else {
				stripFormat(val)
			}
		case shapeSchemaMap:
			if m, ok := val.(map[string]any); ok {
				for _, s := range m {
					stripFormat(s)
				}
			}
		case shapeDependencies:
			if m, ok := val.(map[string]any); ok {
				for _, s := range m {
					if _, isArr := s.([]any); !isArr {
						stripFormat(s)
					}
				}
			}
		}
	}
}
