package schema

import (
	"fmt"
	"net/url"
	"strings"
)

// resolve maps a "$ref" value to the schema it names inside the document.
// Only references within the document are accepted: "#", "#/json/pointer",
// "#anchor", and the same forms after the root "$id".
func (c *compiler) resolve(ref string) (*node, error) {
	uriPart, frag, _ := strings.Cut(ref, "#")
	if uriPart != "" {
		u, err := url.Parse(uriPart)
		local := false
		if err == nil && c.baseID != nil && c.baseID.IsAbs() {
			r := c.baseID.ResolveReference(u)
			r.Fragment, r.RawFragment = "", ""
			local = r.String() == c.baseID.String()
		}
		if !local {
			return nil, fmt.Errorf(`$ref %s points outside this schema document; only references within the document (such as "#/$defs/name") are allowed`, quoteForMessage(ref))
		}
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return nil, fmt.Errorf("$ref %s has an invalid percent-encoding", quoteForMessage(ref))
	}
	if frag == "" {
		return c.index[""], nil
	}
	if frag[0] != '/' {
		if n, ok := c.anchors[frag]; ok {
			return n, nil
		}
		return nil, fmt.Errorf("$ref %s names anchor %s, which is not defined in this document", quoteForMessage(ref), quoteForMessage(frag))
	}
	if !validPointerEscapes(frag) {
		return nil, fmt.Errorf("$ref %s is not a valid JSON Pointer ('~' must be followed by 0 or 1)", quoteForMessage(ref))
	}
	if n, ok := c.index[frag]; ok {
		return n, nil
	}
	return nil, fmt.Errorf("$ref %s does not point to a schema in this document", quoteForMessage(ref))
}

func validPointerEscapes(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return false
		}
	}
	return true
}

// inPlace lists the schemas that apply to the same instance as n: following
// them does not move into the instance, so a cycle made only of these edges
// would never end.
func (n *node) inPlace() []*node {
	var out []*node
	if n.ref != nil {
		out = append(out, n.ref)
	}
	out = append(out, n.allOf...)
	out = append(out, n.anyOf...)
	out = append(out, n.oneOf...)
	for _, s := range []*node{n.not, n.ifSchema, n.thenSchema, n.elseSchema} {
		if s != nil {
			out = append(out, s)
		}
	}
	for _, d := range n.dependentSchemas {
		out = append(out, d.schema)
	}
	return out
}

// descending lists the schemas that apply to a part of the instance: a
// property value, an item, or a property name. Each step along them consumes
// a level of the (finite) instance, so cycles through them end.
// ("contentSchema" is no edge: content is never decoded and checked here.)
func (n *node) descending() []*node {
	var out []*node
	for _, name := range n.propertyOrder {
		out = append(out, n.properties[name])
	}
	for _, pp := range n.patternProperties {
		out = append(out, pp.schema)
	}
	for _, s := range []*node{n.additionalProperties, n.propertyNames} {
		if s != nil {
			out = append(out, s)
		}
	}
	out = append(out, n.prefixItems...)
	for _, s := range []*node{n.items, n.contains} {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// checkBounds proves that validation with the graph rooted at root is
// bounded: no reference cycle stays on one instance, no chain of in-place
// applicators is longer than MaxRefDepth, and inlining every reference from
// the root (cutting cycles) yields at most MaxExpansion nodes. Every step is
// linear in the document or stops at the expansion limit.
func (c *compiler) checkBounds(root *node, l compileLimits) error {
	if err := c.checkCycles(); err != nil {
		return err
	}
	if err := checkExpansion(root, l.maxExpansion); err != nil {
		return err
	}
	return c.checkRefDepth(l.maxRefDepth)
}

func (c *compiler) checkCycles() error {
	const (
		unvisited = iota
		onStack
		done
	)
	state := make(map[*node]uint8, len(c.nodes))
	var stack []*node
	var visit func(n *node) error
	visit = func(n *node) error {
		state[n] = onStack
		stack = append(stack, n)
		for _, next := range n.inPlace() {
			switch state[next] {
			case onStack:
				var path []string
				for i := len(stack) - 1; i >= 0; i-- {
					path = append(path, displayPointer(stack[i].ptr))
					if stack[i] == next {
						break
					}
				}
				for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
					path[i], path[j] = path[j], path[i]
				}
				path = append(path, displayPointer(next.ptr))
				return errAt(n.ptr, "unbounded reference cycle %s: it returns to the same schema without descending into a property or item, so validation would never end",
					strings.Join(path, " -> "))
			case unvisited:
				if err := visit(next); err != nil {
					return err
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
		return nil
	}
	for _, n := range c.nodes {
		if state[n] == unvisited {
			if err := visit(n); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkRefDepth measures the longest chain of in-place edges; the graph of
// those edges is acyclic once checkCycles has passed.
func (c *compiler) checkRefDepth(maxRefDepth int) error {
	longest := make(map[*node]int, len(c.nodes))
	var measure func(n *node) int
	measure = func(n *node) int {
		if d, ok := longest[n]; ok {
			return d
		}
		d := 0
		for _, next := range n.inPlace() {
			d = max(d, 1+measure(next))
		}
		longest[n] = d
		return d
	}
	for _, start := range c.nodes {
		if measure(start) <= maxRefDepth {
			continue
		}
		// Follow the longest chain to the first schema beyond the limit.
		cur := start
		for range maxRefDepth + 1 {
			for _, next := range cur.inPlace() {
				if longest[next] == longest[cur]-1 {
					cur = next
					break
				}
			}
		}
		return errAt(cur.ptr, "chain of $ref/allOf/anyOf/oneOf/not/if/then/else/dependentSchemas starting at %s is longer than MaxRefDepth (%d)",
			displayPointer(start.ptr), maxRefDepth)
	}
	return nil
}

// checkExpansion counts the nodes of the tree obtained by inlining every
// reference from the root, with an edge back to a schema already on the
// current path counted once and not followed. It stops as soon as the count
// passes the limit, so exponential documents cost O(limit).
func checkExpansion(root *node, limit int) error {
	count := 0
	onPath := map[*node]bool{}
	var visit func(n *node) error
	tooMany := func(n *node) error {
		return errAt(n.ptr, "schema expands to more than MaxExpansion (%d) schemas when its references are inlined; reduce repeated references", limit)
	}
	visit = func(n *node) error {
		count++
		if count > limit {
			return tooMany(n)
		}
		onPath[n] = true
		defer delete(onPath, n)
		for _, edges := range [2][]*node{n.inPlace(), n.descending()} {
			for _, next := range edges {
				if onPath[next] {
					count++
					if count > limit {
						return tooMany(next)
					}
					continue
				}
				if err := visit(next); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return visit(root)
}
