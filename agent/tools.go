package agent

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/airlockhq/airlock"
)

// schemaMap splits a tool's input schema into its keywords, each value
// the JSON text the catalog holds: what a provider's SDK sends is then the
// schema the pipeline validates against, byte for byte below the root
// (SDKs re-encode numbers they decode, and some as strings).
func schemaMap(schema []byte) (map[string]any, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(schema, &raw); err != nil || raw == nil {
		return nil, fmt.Errorf("its input schema is not a JSON object")
	}
	m := make(map[string]any, len(raw))
	for k, v := range raw {
		m[k] = v
	}
	return m, nil
}

// A LeftOut is a tool of the catalog that a provider's requests do not
// carry, and why.
type LeftOut struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// offered is what one step offers the model: the provider's tool specs,
// and the catalog tools behind them by name.
type offered struct {
	specs   []ToolSpec
	byName  map[string]airlock.Tool
	leftOut []LeftOut
	// finder is the name of the built-in find_tools tool when the catalog
	// is too large to send whole, "" when it is sent whole.
	finder string
	// cat is the catalog the step's tools were chosen from.
	cat *catalog
}

// specOf is t as a provider's request carries it.
func specOf(t airlock.Tool) ToolSpec {
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	return ToolSpec{Name: t.Name, Description: desc, Schema: t.InputSchema}
}

// A catalog is what the steps of one snapshot may offer a provider: the
// tools it takes, by name, and those it would refuse. Asking the provider
// about every tool takes longer than the rest of a step (each schema is
// decoded), so a catalog is made once per snapshot and shared by the
// agent's runs, which only read it; find_tools' index of it is made once,
// when it is first searched.
type catalog struct {
	id      string // the snapshot's
	usable  []airlock.Tool
	byName  map[string]airlock.Tool
	leftOut []LeftOut
	// whole are the specs of usable when a request carries them all; when
	// it cannot, finder is find_tools' name and finderSpec its spec.
	whole      []ToolSpec
	finder     string
	finderSpec ToolSpec
	max        int // how many tools a request may carry

	indexOnce sync.Once
	index     *ToolIndex
}

// newCatalog sorts the tools of the snapshot id for p: every tool it
// takes is offered whole, or, past max tools (or p's own limit), found
// with find_tools.
func newCatalog(p Provider, id string, tools []airlock.Tool, max int) *catalog {
	c := &catalog{id: id, byName: make(map[string]airlock.Tool, len(tools))}
	for _, t := range tools {
		if why := p.Unsupported(specOf(t)); why != "" {
			c.leftOut = append(c.leftOut, LeftOut{Name: t.Name, Reason: why})
			continue
		}
		c.byName[t.Name] = t
		c.usable = append(c.usable, t)
	}
	if n := p.MaxTools(); n > 0 && n < max {
		max = n
	}
	c.max = max
	if len(c.usable) <= max {
		for _, t := range c.usable {
			c.whole = append(c.whole, specOf(t))
		}
		return c
	}
	c.finder = finderName(c.byName)
	c.finderSpec = finderSpec(c.finder, len(c.usable))
	return c
}

// toolIndex is find_tools' index of the catalog, made when it is first
// searched.
func (c *catalog) toolIndex() *ToolIndex {
	c.indexOnce.Do(func() { c.index = NewToolIndex(c.usable) })
	return c.index
}

// offer chooses the tools of a step: every tool of the catalog the
// provider takes, or, past its max tools, the built-in find_tools and the
// tools the run found or used (in the order they were first found),
// within max.
func (c *catalog) offer(found []string) offered {
	o := offered{byName: c.byName, leftOut: c.leftOut, finder: c.finder, cat: c}
	if c.finder == "" {
		// A step's specs are its own: a provider may do with them as it
		// likes.
		o.specs = slices.Clone(c.whole)
		return o
	}
	o.specs = append(o.specs, c.finderSpec)
	for _, name := range found {
		if len(o.specs) >= c.max {
			break
		}
		t, ok := c.byName[name]
		if ok && !slices.ContainsFunc(o.specs, func(s ToolSpec) bool { return s.Name == name }) {
			o.specs = append(o.specs, specOf(t))
		}
	}
	return o
}
