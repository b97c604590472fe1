package schema

// The bounds of Compile keep a schema document small, but a small recursive
// schema can still make validation exponential in the depth of the value:
// {"$defs": {"n": {"anyOf": [{"properties": {"a": {"$ref": "#/$defs/n"}}},
// {"properties": {"a": {"$ref": "#/$defs/n"}}}]}}} evaluates "n" twice for
// every level of {"a": {"a": …}}. The JSON Schema library has no budget of
// its own, and both the schema and (for output) the value come from the
// server, so Compile measures the worst case and Validate refuses values
// whose worst case is too expensive.

// maxLevels is the deepest value Validate accepts.
const maxLevels = 256

// argumentLevels is the value depth the per-location bound is checked at
// when compiling: the default nesting limit of decoded arguments.
const argumentLevels = DefaultMaxDepth

// workSaturation caps the counts, which may grow exponentially.
const workSaturation = int64(1) << 50

// A selector is the part of a value a descending keyword applies to: the
// items of an array, a member of an object by name, or a member whose name
// no "properties" keyword names ("other").
type selectorCounts struct {
	item, other int64
	names       map[string]int64 // names some "properties" declares; absent: as other
}

func (s *selectorCounts) name(n string) int64 {
	if v, ok := s.names[n]; ok {
		return v
	}
	return s.other
}

func (s *selectorCounts) add(o *selectorCounts) {
	s.item = sat(s.item + o.item)
	for n := range o.names {
		if _, ok := s.names[n]; !ok {
			if s.names == nil {
				s.names = map[string]int64{}
			}
			s.names[n] = s.other
		}
	}
	for n, v := range s.names {
		s.names[n] = sat(v + o.name(n))
	}
	s.other = sat(s.other + o.other)
}

func (s *selectorCounts) max() int64 {
	m := max(s.item, s.other)
	for _, v := range s.names {
		m = max(m, v)
	}
	return m
}

func sat(v int64) int64 { return min(v, workSaturation) }

// workProfile returns, for each value depth k up to maxLevels, an upper
// bound on the schema evaluations at any one location k levels deep, and
// the largest of those bounds up to k: the cost of one value node. It over-
// approximates (every patternProperties schema is assumed to match, and
// additionalProperties to apply to every name no "properties" of the same
// schema declares) and never under-approximates.
func (c *compiler) workProfile(root *node) []int64 {
	order := c.inPlaceOrder()
	// local(n): schemas evaluated at the location n is applied to.
	local := make(map[*node]int64, len(order))
	for _, n := range order {
		v := int64(1)
		for _, m := range n.inPlace() {
			v = sat(v + local[m])
		}
		local[n] = v
	}
	profile := make([]int64, maxLevels+1)
	profile[0] = local[root]
	prev := local
	for k := 1; k <= maxLevels; k++ {
		cur := make(map[*node]int64, len(order))
		counts := make(map[*node]*selectorCounts, len(order))
		zero := true
		for _, n := range order {
			g := n.descents(prev)
			for _, m := range n.inPlace() {
				g.add(counts[m])
			}
			counts[n] = g
			cur[n] = g.max()
			if cur[n] != 0 {
				zero = false
			}
		}
		profile[k] = max(profile[k-1], cur[root])
		if zero {
			// No schema reaches this deep: deeper values cost nothing more.
			for j := k + 1; j <= maxLevels; j++ {
				profile[j] = profile[k]
			}
			break
		}
		if sameCounts(prev, cur) {
			// A steady state: every further level costs the same.
			for j := k + 1; j <= maxLevels; j++ {
				profile[j] = max(profile[j-1], cur[root])
			}
			break
		}
		prev = cur
	}
	return profile
}

// descents counts, per selector, the evaluations one level down that n's
// own descending keywords cause, given the counts w of the level below.
func (n *node) descents(w map[*node]int64) *selectorCounts {
	g := &selectorCounts{}
	for _, s := range n.prefixItems {
		g.item = sat(g.item + w[s])
	}
	for _, s := range []*node{n.items, n.contains} {
		if s != nil {
			g.item = sat(g.item + w[s])
		}
	}
	var anyName int64 // schemas that may apply to a member of any name
	for _, pp := range n.patternProperties {
		anyName = sat(anyName + w[pp.schema])
	}
	if n.propertyNames != nil {
		anyName = sat(anyName + w[n.propertyNames])
	}
	g.other = anyName
	if n.additionalProperties != nil {
		g.other = sat(g.other + w[n.additionalProperties])
	}
	if len(n.properties) > 0 {
		g.names = make(map[string]int64, len(n.properties))
		for name, s := range n.properties {
			g.names[name] = sat(anyName + w[s])
		}
	}
	return g
}

// inPlaceOrder lists every node after the nodes it applies in place (the
// in-place graph is acyclic once checkCycles has passed).
func (c *compiler) inPlaceOrder() []*node {
	seen := make(map[*node]bool, len(c.nodes))
	order := make([]*node, 0, len(c.nodes))
	var visit func(n *node)
	visit = func(n *node) {
		seen[n] = true
		for _, m := range n.inPlace() {
			if !seen[m] {
				visit(m)
			}
		}
		order = append(order, n)
	}
	for _, n := range c.nodes {
		if !seen[n] {
			visit(n)
		}
	}
	return order
}

func sameCounts(a, b map[*node]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for n, v := range a {
		if b[n] != v {
			return false
		}
	}
	return true
}

// profileAt returns the cost bound of one value node in a value of the
// given depth.
func profileAt(profile []int64, depth int) int64 {
	return profile[min(depth, len(profile)-1)]
}
