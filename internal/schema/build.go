package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
)

// typeSet is a set of JSON Schema type names.
type typeSet uint8

const (
	typeNull typeSet = 1 << iota
	typeBoolean
	typeObject
	typeArray
	typeNumber
	typeString
	typeInteger
)

var typeNames = []struct {
	t    typeSet
	name string
}{
	{typeNull, "null"}, {typeBoolean, "boolean"}, {typeObject, "object"}, {typeArray, "array"},
	{typeNumber, "number"}, {typeString, "string"}, {typeInteger, "integer"},
}

// node is one compiled schema: a position in the document that holds an
// object or boolean schema. References are resolved to *node, so the graph
// may have cycles; Compile proves that every cycle descends into the
// instance.
type node struct {
	ptr    string // JSON Pointer of the schema in the document
	isBool bool

	prefixItems []*node
	items       *node // items after prefixItems (draft-07: additionalItems after an items array)
	contains    *node

	properties           map[string]*node
	propertyOrder        []string // sorted names of properties
	patternProperties    []patternProperty
	additionalProperties *node
	propertyNames        *node
	dependentSchemas     []dependentSchema

	ref                                   *node
	allOf, anyOf, oneOf                   []*node
	not, ifSchema, thenSchema, elseSchema *node
}

type patternProperty struct {
	re     *pattern
	schema *node
}

// pattern is a compiled regular expression with its matching cost per input
// byte (the number of instructions of its program).
type pattern struct {
	re   *regexp.Regexp
	cost int
}

type dependentSchema struct {
	prop   string
	schema *node
}

type pendingRef struct {
	from *node
	ref  string
}

// compiler builds the node graph of one document.
type compiler struct {
	draft   draft
	index   map[string]*node // every schema position by pointer
	anchors map[string]*node
	refs    []pendingRef
	baseID  *url.URL // the root "$id", if any
	nodes   []*node  // in document order

	patternCost int // instructions of the largest regular expression
}

func newCompiler(d draft) *compiler {
	return &compiler{draft: d, index: map[string]*node{}, anchors: map[string]*node{}}
}

// build walks the document, checking every keyword, and resolves references.
func (c *compiler) build(tree any) (*node, error) {
	root, err := c.walk(tree, "", false)
	if err != nil {
		return nil, err
	}
	for _, r := range c.refs {
		target, err := c.resolve(r.ref)
		if err != nil {
			return nil, &CompileError{Pointer: r.from.ptr + "/$ref", Reason: err.Error()}
		}
		r.from.ref = target
	}
	return root, nil
}

func childPtr(ptr string, toks ...string) string {
	b := []byte(ptr)
	for _, t := range toks {
		b = appendPointerToken(b, t)
	}
	return string(b)
}

func errAt(ptr, format string, args ...any) error {
	return &CompileError{Pointer: ptr, Reason: fmt.Sprintf(format, args...)}
}

// walk compiles the schema v at ptr. inProperties is true for the values of a
// "properties" map, the only place "x-mcp-header" belongs.
func (c *compiler) walk(v any, ptr string, inProperties bool) (*node, error) {
	n := &node{ptr: ptr}
	c.index[ptr] = n
	c.nodes = append(c.nodes, n)

	switch s := v.(type) {
	case bool:
		n.isBool = true
		return n, nil
	case map[string]any:
		if err := c.object(n, s, inProperties); err != nil {
			return nil, err
		}
		return n, nil
	default:
		return nil, errAt(ptr, "expected a schema (an object or true/false), found %s", jsonTypeName(v))
	}
}

func (c *compiler) object(n *node, obj map[string]any, inProperties bool) error {
	ptr := n.ptr
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	slices.Sort(names)

	_, hasRef := obj["$ref"]
	for _, kw := range names {
		at := childPtr(ptr, kw)
		if why, ok := unsupported[kw]; ok {
			return errAt(at, "keyword %q is not supported: %s", kw, why)
		}
		k, ok := keywords[kw]
		if !ok {
			return errAt(at, "unknown keyword %s; only standard JSON Schema keywords are accepted, so remove it", quoteForMessage(kw))
		}
		if (k.in == only2020 && c.draft == draft7) || (k.in == only7 && c.draft == draft2020) {
			return errAt(at, "keyword %q does not belong to %s, the draft of this schema; %s", kw, c.draft, k.replacement)
		}
		if kw == "x-mcp-header" && !inProperties {
			return errAt(at, `"x-mcp-header" belongs only on a schema under "properties"`)
		}
		if c.draft == draft7 && hasRef && !annotationKeywords[kw] {
			return errAt(at, `in draft-07 keywords beside "$ref" are ignored, so %q would not be checked; put the "$ref" and %q into "allOf"`, kw, kw)
		}
	}

	for _, kw := range names {
		if err := c.keyword(n, obj, kw, obj[kw]); err != nil {
			return err
		}
	}
	if n.ifSchema == nil {
		// Without "if", "then" and "else" have no effect.
		n.thenSchema, n.elseSchema = nil, nil
	}
	return nil
}

// keyword checks one keyword of the schema object obj and records in n the
// subschemas that the bounds and case-variant analyses follow. Validation
// itself is the JSON Schema library's; the checks here exist to give precise
// messages before the library's meta-schema check.
func (c *compiler) keyword(n *node, obj map[string]any, kw string, v any) error {
	at := childPtr(n.ptr, kw)
	var err error
	switch kw {
	case "$schema":
		if n.ptr != "" {
			return errAt(at, `"$schema" is only allowed at the root of the document`)
		}
	case "$id":
		return c.id(n, obj, at, v)
	case "$anchor":
		s, ok := v.(string)
		if !ok || !anchorName.MatchString(s) {
			return errAt(at, "$anchor must be a name of letters, digits, '-', '_' and '.' starting with a letter or '_'")
		}
		return c.addAnchor(s, n, at)
	case "$ref":
		s, ok := v.(string)
		if !ok {
			return errAt(at, "$ref must be a string")
		}
		c.refs = append(c.refs, pendingRef{from: n, ref: s})
	case "$defs", "definitions":
		_, err = c.schemaMap(at, v, false)
	case "$comment", "title", "description", "format", "contentEncoding", "contentMediaType":
		if _, ok := v.(string); !ok {
			return errAt(at, "%s must be a string", kw)
		}
	case "deprecated", "readOnly", "writeOnly":
		if _, ok := v.(bool); !ok {
			return errAt(at, "%s must be true or false", kw)
		}
	case "examples":
		if _, ok := v.([]any); !ok {
			return errAt(at, "examples must be an array")
		}
	case "default":
	case "x-mcp-header":
		s, ok := v.(string)
		if !ok || s == "" || strings.IndexFunc(s, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
			return errAt(at, "x-mcp-header must be a non-empty HTTP header name (letters, digits and !#$%%&'*+-.^_`|~)")
		}
	case "contentSchema":
		_, err = c.walk(v, at, false)

	case "allOf":
		n.allOf, err = c.schemaArray(at, v)
	case "anyOf":
		n.anyOf, err = c.schemaArray(at, v)
	case "oneOf":
		n.oneOf, err = c.schemaArray(at, v)
	case "not":
		n.not, err = c.walk(v, at, false)
	case "if":
		n.ifSchema, err = c.walk(v, at, false)
	case "then":
		n.thenSchema, err = c.walk(v, at, false)
	case "else":
		n.elseSchema, err = c.walk(v, at, false)
	case "properties":
		n.properties, err = c.schemaMap(at, v, true)
		for name := range n.properties {
			n.propertyOrder = append(n.propertyOrder, name)
		}
		slices.Sort(n.propertyOrder)
	case "patternProperties":
		var m map[string]*node
		if m, err = c.schemaMap(at, v, false); err != nil {
			return err
		}
		for _, pat := range sortedKeys(m) {
			re, rerr := compilePattern(pat)
			if rerr != nil {
				return errAt(childPtr(at, pat), "invalid regular expression: %v", rerr)
			}
			c.patternCost = max(c.patternCost, re.cost)
			n.patternProperties = append(n.patternProperties, patternProperty{re: re, schema: m[pat]})
		}
	case "additionalProperties":
		n.additionalProperties, err = c.walk(v, at, false)
	case "propertyNames":
		n.propertyNames, err = c.walk(v, at, false)
	case "items":
		if arr, ok := v.([]any); ok && c.draft == draft7 {
			if n.prefixItems, err = c.schemaArray(at, arr); err != nil {
				return err
			}
			if ai, ok := obj["additionalItems"]; ok {
				n.items, err = c.walk(ai, childPtr(n.ptr, "additionalItems"), false)
			}
			return err
		}
		n.items, err = c.walk(v, at, false)
	case "additionalItems":
		// Compiled with "items"; without an "items" array it has no effect,
		// but it is still a schema the model sees.
		if arr, ok := obj["items"].([]any); !ok || arr == nil {
			_, err = c.walk(v, at, false)
		}
	case "prefixItems":
		n.prefixItems, err = c.schemaArray(at, v)
	case "contains":
		n.contains, err = c.walk(v, at, false)
	case "dependentSchemas":
		var m map[string]*node
		m, err = c.schemaMap(at, v, false)
		for _, p := range sortedKeys(m) {
			n.dependentSchemas = append(n.dependentSchemas, dependentSchema{prop: p, schema: m[p]})
		}
	case "dependencies":
		m, ok := v.(map[string]any)
		if !ok {
			return errAt(at, "dependencies must be an object")
		}
		for _, p := range sortedKeys(m) {
			if arr, ok := m[p].([]any); ok {
				if _, err := stringArray(childPtr(at, p), arr); err != nil {
					return err
				}
				continue
			}
			s, err := c.walk(m[p], childPtr(at, p), false)
			if err != nil {
				return err
			}
			n.dependentSchemas = append(n.dependentSchemas, dependentSchema{prop: p, schema: s})
		}

	case "type":
		_, err = parseTypes(at, v)
	case "enum":
		if _, ok := v.([]any); !ok {
			return errAt(at, "enum must be an array")
		}
	case "const":
	case "multipleOf":
		var b *bound
		if b, err = numberKeyword(at, kw, v); err == nil && b.r.Sign() <= 0 {
			return errAt(at, "multipleOf must be greater than 0")
		}
	case "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum":
		_, err = numberKeyword(at, kw, v)
	case "maxLength", "minLength", "maxItems", "minItems", "maxContains", "minContains", "maxProperties", "minProperties":
		_, err = countKeyword(at, kw, v)
	case "pattern":
		s, ok := v.(string)
		if !ok {
			return errAt(at, "pattern must be a string")
		}
		re, err := compilePattern(s)
		if err != nil {
			return errAt(at, "invalid regular expression: %v", err)
		}
		c.patternCost = max(c.patternCost, re.cost)
	case "uniqueItems":
		if _, ok := v.(bool); !ok {
			return errAt(at, "uniqueItems must be true or false")
		}
	case "required":
		arr, ok := v.([]any)
		if !ok {
			return errAt(at, "required must be an array of property names")
		}
		_, err = stringArray(at, arr)
	case "dependentRequired":
		m, ok := v.(map[string]any)
		if !ok {
			return errAt(at, "dependentRequired must be an object")
		}
		for _, p := range sortedKeys(m) {
			arr, ok := m[p].([]any)
			if !ok {
				return errAt(childPtr(at, p), "expected an array of property names")
			}
			if _, err := stringArray(childPtr(at, p), arr); err != nil {
				return err
			}
		}
	default:
		return errAt(at, "keyword %q is not handled", kw)
	}
	return err
}

// anchorName is the anchor syntax of draft 2020-12 (and of draft-07 "$id"
// fragments that are meant as plain names).
var anchorName = regexp.MustCompile(`^[A-Za-z_][-A-Za-z0-9._]*$`)

func (c *compiler) id(n *node, obj map[string]any, at string, v any) error {
	s, ok := v.(string)
	if !ok {
		return errAt(at, "$id must be a string")
	}
	if _, hasRef := obj["$ref"]; hasRef && c.draft == draft7 {
		// Draft-07 ignores "$id" beside "$ref".
		return nil
	}
	if c.draft == draft7 && strings.HasPrefix(s, "#") {
		name := s[1:]
		if !anchorName.MatchString(name) {
			return errAt(at, `a draft-07 anchor "$id" must be "#" followed by a name of letters, digits, '-', '_' and '.'`)
		}
		return c.addAnchor(name, n, at)
	}
	if n.ptr != "" {
		return errAt(at, "$id is only allowed at the root of the document; embedded schema resources are not supported (use $defs and $ref)")
	}
	u, err := url.Parse(s)
	if err != nil || u.Fragment != "" {
		return errAt(at, "$id must be a URI without a fragment")
	}
	u.Fragment, u.RawFragment = "", ""
	c.baseID = u
	return nil
}

func (c *compiler) addAnchor(name string, n *node, at string) error {
	if prev, ok := c.anchors[name]; ok && prev != n {
		return errAt(at, "anchor %q is already defined at %s", name, displayPointer(prev.ptr))
	}
	c.anchors[name] = n
	return nil
}

func (c *compiler) schemaArray(at string, v any) ([]*node, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, errAt(at, "expected a non-empty array of schemas")
	}
	out := make([]*node, len(arr))
	for i, s := range arr {
		n, err := c.walk(s, childPtr(at, fmt.Sprint(i)), false)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

func (c *compiler) schemaMap(at string, v any, properties bool) (map[string]*node, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errAt(at, "expected an object whose values are schemas")
	}
	out := make(map[string]*node, len(m))
	for _, name := range sortedKeys(m) {
		n, err := c.walk(m[name], childPtr(at, name), properties)
		if err != nil {
			return nil, err
		}
		out[name] = n
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func stringArray(at string, arr []any) ([]string, error) {
	out := make([]string, 0, len(arr))
	seen := make(map[string]bool, len(arr))
	for i, v := range arr {
		s, ok := v.(string)
		if !ok {
			return nil, errAt(childPtr(at, fmt.Sprint(i)), "expected a property name (a string)")
		}
		if seen[s] {
			return nil, errAt(childPtr(at, fmt.Sprint(i)), "property name %s is listed twice", quoteForMessage(s))
		}
		seen[s] = true
		out = append(out, s)
	}
	return out, nil
}

func parseTypes(at string, v any) (typeSet, error) {
	one := func(at string, v any) (typeSet, error) {
		if s, ok := v.(string); ok {
			for _, tn := range typeNames {
				if tn.name == s {
					return tn.t, nil
				}
			}
		}
		return 0, errAt(at, `type must be one of "null", "boolean", "object", "array", "number", "string", "integer"`)
	}
	arr, ok := v.([]any)
	if !ok {
		return one(at, v)
	}
	if len(arr) == 0 {
		return 0, errAt(at, "type must not be an empty array")
	}
	var set typeSet
	for i, e := range arr {
		t, err := one(childPtr(at, fmt.Sprint(i)), e)
		if err != nil {
			return 0, err
		}
		if set&t != 0 {
			return 0, errAt(childPtr(at, fmt.Sprint(i)), "type is listed twice")
		}
		set |= t
	}
	return set, nil
}

func numberKeyword(at, kw string, v any) (*bound, error) {
	if _, ok := v.(json.Number); !ok {
		return nil, errAt(at, "%s must be a number", kw)
	}
	b, _ := newBound(v)
	return b, nil
}

// countKeyword reads a non-negative integer such as maxLength.
func countKeyword(at, kw string, v any) (int, error) {
	b, err := numberKeyword(at, kw, v)
	if err != nil || b.r.Sign() < 0 || !b.r.IsInt() {
		return 0, errAt(at, "%s must be a non-negative integer", kw)
	}
	if !b.r.Num().IsInt64() {
		return 0, errAt(at, "%s is too large", kw)
	}
	// No instance can reach a count beyond the int range.
	return int(min(b.r.Num().Int64(), math.MaxInt)), nil
}

// compilePattern compiles an ECMA-262 "pattern" with Go's RE2 engine, as the
// JSON Schema library does; both match anywhere in the string, and both run
// in time linear in the input.
func compilePattern(s string) (*pattern, error) {
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, err
	}
	cost := 1
	if parsed, err := syntax.Parse(s, syntax.Perl); err == nil {
		if prog, err := syntax.Compile(parsed.Simplify()); err == nil {
			cost = max(1, len(prog.Inst))
		}
	}
	return &pattern{re: re, cost: cost}, nil
}

func isTokenChar(r rune) bool {
	switch {
	case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	default:
		if _, ok := numOf(v); ok {
			return "number"
		}
		return fmt.Sprintf("a Go %T", v)
	}
}

func displayPointer(ptr string) string {
	if ptr == "" {
		return "the root"
	}
	return ptr
}
