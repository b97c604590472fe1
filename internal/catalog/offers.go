package catalog

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/config"
)

// An Offer is one tool a server advertises, allowed or not, as a person
// deciding what to allow sees it: what the server said, unchecked, with
// its text made visible as discovery makes it (reveal) and cut to the
// limit. Offers are for people only: no Offer is ever part of a snapshot;
// a tool reaches a model only through the allowlist and [Allowed]'s
// checks.
type Offer struct {
	Server      string
	Name        string // the server's own name for the tool
	Title       string
	Description string
	// Input and Output are the tool's schemas as the server sent them,
	// neither compiled nor checked, with the hidden characters of every
	// string made visible. Output is nil when the tool declares none.
	Input, Output json.RawMessage
	Annotations   *mcp.ToolAnnotations
	// Allowed says whether the server's allowlist names the tool (it may
	// still fail discovery's checks).
	Allowed bool
}

// Offers returns every tool of advertised (a server's whole list, as
// [List] returns it) as an Offer, by name.
func Offers(srv *config.Server, advertised []*mcp.Tool, lim Limits) []Offer {
	lim = lim.withDefaults()
	out := make([]Offer, 0, len(advertised))
	for _, t := range advertised {
		title := t.Title
		if title == "" && t.Annotations != nil {
			title = t.Annotations.Title
		}
		title, _ = reveal(title)
		description, _ := reveal(t.Description)
		o := Offer{Server: srv.ID, Name: t.Name, Title: cut(title, lim.MaxDescription), Description: cut(description, lim.MaxDescription),
			Input: shown(t.InputSchema), Annotations: t.Annotations, Allowed: srv.Allows(t.Name)}
		if t.OutputSchema != nil {
			o.Output = shown(t.OutputSchema)
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b Offer) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// shown is a schema as the server sent it, for people to read: every
// string, names and values included, with its hidden characters made
// visible. (Unlike a bound tool's schema, nothing is validated against it.)
// A schema that is not JSON is shown as null.
func shown(schema any) json.RawMessage {
	b, err := json.Marshal(schema)
	if err != nil {
		return json.RawMessage("null")
	}
	if !mayHide(b) {
		return b
	}
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		return json.RawMessage("null")
	}
	if b, err = json.Marshal(revealAll(tree)); err != nil {
		return json.RawMessage("null")
	}
	return b
}

// revealAll returns v with the hidden characters of every string, keys
// included, made visible.
func revealAll(v any) any {
	switch x := v.(type) {
	case string:
		s, _ := reveal(x)
		return s
	case []any:
		for i := range x {
			x[i] = revealAll(x[i])
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			k, _ = reveal(k)
			out[k] = revealAll(e)
		}
		return out
	}
	return v
}
