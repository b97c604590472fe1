package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// CheckCaseVariants returns a *DecodeError if an object in v has a key that
// differs only in letter case (strings.EqualFold) from a property the schema
// declares for that object, such as "Path" where the schema declares "path".
// A server that matches names without regard to case would read such a key as
// the declared property although validation saw it as another one.
//
// The schemas that apply at each place are found through properties,
// patternProperties, additionalProperties, items and prefixItems, allOf,
// anyOf, oneOf, if/then/else, dependentSchemas and $ref; a key the schema
// declares exactly is never reported.
func (s *Schema) CheckCaseVariants(v any) error {
	var st valueStats
	if verr := st.check(v, 0); verr != nil {
		return &DecodeError{Pointer: verr.Pointer, Reason: verr.Reason, code: codeSyntax}
	}
	cv := caseVariants{budget: st.budget()}
	return cv.check([]*node{s.root}, v, nil)
}

type caseVariants struct {
	budget int
}

// check examines v under the set of schemas that apply to it. Applying the
// set at once (instead of schema by schema) keeps the work per value bounded
// by the number of distinct schemas.
func (cv *caseVariants) check(schemas []*node, v any, path []string) error {
	set := cv.closure(schemas)
	if cv.budget < 0 {
		return &DecodeError{Pointer: pointerString(path), Reason: "value is too complex to check against this schema; send a simpler value", code: codeSyntax}
	}
	switch x := v.(type) {
	case map[string]any:
		declared := map[string]bool{}
		for _, n := range set {
			for name := range n.properties {
				declared[name] = true
			}
		}
		for _, k := range sortedKeys(x) {
			if !declared[k] {
				for _, name := range sortedKeys(declared) {
					if strings.EqualFold(k, name) {
						return &DecodeError{
							Pointer: pointerString(append(path, k)),
							Reason: fmt.Sprintf("key %s differs only in letter case from the property %s that the schema declares; use the exact name %s",
								quoteForMessage(k), quoteForMessage(name), quoteForMessage(name)),
							code: codeCaseVariant,
						}
					}
				}
			}
			var next []*node
			for _, n := range set {
				matched := false
				if s, ok := n.properties[k]; ok {
					next = append(next, s)
					matched = true
				}
				for _, pp := range n.patternProperties {
					cv.budget -= len(k) * pp.re.cost / 4
					if pp.re.re.MatchString(k) {
						next = append(next, pp.schema)
						matched = true
					}
				}
				if !matched && n.additionalProperties != nil {
					next = append(next, n.additionalProperties)
				}
			}
			if len(next) == 0 {
				continue
			}
			if err := cv.check(next, x[k], append(path, k)); err != nil {
				return err
			}
		}
	case []any:
		for i, item := range x {
			var next []*node
			for _, n := range set {
				if i < len(n.prefixItems) {
					next = append(next, n.prefixItems[i])
				} else if n.items != nil {
					next = append(next, n.items)
				}
			}
			if len(next) == 0 {
				continue
			}
			if err := cv.check(next, item, append(path, fmt.Sprint(i))); err != nil {
				return err
			}
		}
	}
	return nil
}

// closure adds every schema reachable through in-place applicators.
func (cv *caseVariants) closure(start []*node) []*node {
	seen := map[*node]bool{}
	var out []*node
	var add func(n *node)
	add = func(n *node) {
		if seen[n] || n.isBool {
			return
		}
		cv.budget--
		if cv.budget < 0 {
			return
		}
		seen[n] = true
		out = append(out, n)
		for _, s := range n.inPlace() {
			add(s)
		}
	}
	for _, n := range start {
		add(n)
	}
	return out
}

// valueStats measures a value, to size the work spent on it.
type valueStats struct {
	nodes int // values, containers included
	bytes int // bytes of strings and keys
	depth int // deepest nesting
}

// budget is how many steps checking the value may take: generous for any
// real value, finite for a pathological schema.
func (st *valueStats) budget() int { return 1<<20 + 64*st.nodes + 2*st.bytes }

// check walks v, counting it, and refuses what is not JSON data or nests
// deeper than the decoder allows.
func (st *valueStats) check(v any, depth int) *ValidationError {
	if depth > hardMaxDepth {
		return &ValidationError{Reason: "value nests too deeply"}
	}
	st.nodes++
	st.depth = max(st.depth, depth)
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			st.bytes += len(k)
			if err := st.check(e, depth+1); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := st.check(e, depth+1); err != nil {
				return err
			}
		}
	case string:
		st.bytes += len(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return &ValidationError{Reason: "number must be finite"}
		}
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return &ValidationError{Reason: "number must be finite"}
		}
	case json.Number:
		if !validNumberLiteral(string(x)) {
			return &ValidationError{Reason: fmt.Sprintf("%s is not a valid JSON number in the supported range", quoteForMessage(string(x)))}
		}
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
	default:
		return &ValidationError{Reason: fmt.Sprintf("value of Go type %T is not a JSON value", v)}
	}
	return nil
}
