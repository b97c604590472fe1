package agent

import (
	"encoding/json"
	"fmt"
	"slices"

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
}

// specOf is t as a provider's request carries it.
func specOf(t airlock.Tool) ToolSpec {
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	return ToolSpec{Name: t.Name, Description: desc, Schema: t.InputSchema}
}

// offer chooses the tools of a step: every tool of the catalog the
// provider takes, or, past max tools, the built-in find_tools and the
// tools the run found or used (in the order they were first found),
// within max.
func offer(p Provider, tools []airlock.Tool, max int, found []string) offered {
	o := offered{byName: make(map[string]airlock.Tool, len(tools))}
	var usable []airlock.Tool
	for _, t := range tools {
		if why := p.Unsupported(specOf(t)); why != "" {
			o.leftOut = append(o.leftOut, LeftOut{Name: t.Name, Reason: why})
			continue
		}
		o.byName[t.Name] = t
		usable = append(usable, t)
	}
	if n := p.MaxTools(); n > 0 && n < max {
		max = n
	}
	if len(usable) <= max {
		for _, t := range usable {
			o.specs = append(o.specs, specOf(t))
		}
		return o
	}
	o.finder = finderName(o.byName)
	o.specs = append(o.specs, finderSpec(o.finder, len(usable)))
	for _, name := range found {
		t, ok := o.byName[name]
		if !ok || len(o.specs) >= max {
			continue
		}
		if !slices.ContainsFunc(o.specs, func(s ToolSpec) bool { return s.Name == name }) {
			o.specs = append(o.specs, specOf(t))
		}
	}
	return o
}
