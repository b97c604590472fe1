package airlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/airlockhq/airlock/internal/schema"
)

// A form is the compiled schema of a form-mode elicitation: what the
// person's answer is checked against before the server sees it.
type form struct {
	schema   *schema.Schema
	names    []string       // its properties, sorted
	defaults map[string]any // property → its default (SEP-1034)
}

// maxFormProperties bounds the questions of one form.
const maxFormProperties = 64

// newForm compiles a requested schema (nil: a form with no fields, which
// asks only for a yes or no) and checks that it is what MCP allows: a flat
// object whose properties are strings, numbers, integers, booleans, enums
// of strings (SEP-1330: enum, oneOf of consts, or an array of them), each
// with an optional default. It returns the schema's JSON, as the person's
// Elicitor is to show it.
func newForm(requested any) (*form, json.RawMessage, error) {
	raw := []byte(`{"type":"object","properties":{}}`)
	if requested != nil {
		var err error
		if raw, err = json.Marshal(requested); err != nil {
			return nil, nil, err
		}
	}
	doc, err := schema.Decode(raw, nil)
	if err != nil {
		return nil, nil, err
	}
	root, ok := doc.(map[string]any)
	if t, typed := root["type"]; !ok || typed && t != "object" {
		return nil, nil, errors.New(`the form's schema is not of type "object"`)
	}
	props, _ := root["properties"].(map[string]any)
	if len(props) > maxFormProperties {
		return nil, nil, fmt.Errorf("the form has %d fields, more than %d", len(props), maxFormProperties)
	}
	f := &form{names: slices.Sorted(maps.Keys(props)), defaults: map[string]any{}}
	checked := maps.Clone(props) // what is compiled: without display-only enumNames
	for _, name := range f.names {
		p, ok := props[name].(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("form field %q is not a schema", name)
		}
		if err := flatField(p); err != nil {
			return nil, nil, fmt.Errorf("form field %q: %v", name, err)
		}
		if d, ok := p["default"]; ok {
			f.defaults[name] = plainJSON(d)
		}
		if _, ok := p["enumNames"]; ok { // the legacy titles of an enum's values (SEP-1330)
			p = maps.Clone(p)
			delete(p, "enumNames")
			checked[name] = p
		}
	}
	root = maps.Clone(root)
	root["type"] = "object" // as MCP has it, when the server left it out
	if props != nil {
		root["properties"] = checked
	}
	if f.schema, err = schema.Compile(root, &schema.CompileOptions{RequireObject: true, AssertFormat: true}); err != nil {
		return nil, nil, err
	}
	// A default must itself fit: otherwise accepting the form as offered
	// would send what the server said it does not take.
	if len(f.defaults) > 0 {
		for name, d := range f.defaults {
			if err := f.schema.Validate(map[string]any{name: d}); err != nil {
				var verr *schema.ValidationError
				if errors.As(err, &verr) && verr.Pointer == "/"+name {
					return nil, nil, fmt.Errorf("form field %q: its default does not fit: %v", name, err)
				}
			}
		}
	}
	return f, raw, nil
}

// flatField checks one property of a form: a primitive, or a list of
// strings to choose from, and nothing nested.
func flatField(p map[string]any) error {
	if _, nested := p["properties"]; nested {
		return errors.New("nested objects are not allowed in a form")
	}
	switch t := p["type"]; t {
	case "string", "number", "integer", "boolean":
		return nil
	case nil:
		if _, ok := p["enum"]; ok {
			return nil
		}
		if _, ok := p["oneOf"]; ok {
			return nil
		}
		return errors.New("it has no type")
	case "array":
		items, ok := p["items"].(map[string]any)
		if !ok {
			return errors.New(`an "array" field must list its choices in "items"`)
		}
		if _, ok := items["enum"]; ok {
			return nil
		}
		if _, ok := items["anyOf"]; ok {
			return nil
		}
		return errors.New(`an "array" field must list its choices in "items" (enum or anyOf)`)
	default:
		return fmt.Errorf("type %v is not allowed in a form (string, number, integer, boolean, or an array of choices)", t)
	}
}

// Check reports whether an answer fits the request: an action MCP knows,
// and for an accepted form, content that fits its Schema once defaults
// fill what was left out. The host checks every answer itself before the
// server sees it; Check lets an Elicitor tell the person at once.
func (r *InputRequest) Check(a *InputAnswer) error {
	_, err := r.content(a)
	return err
}

// content is what an accepted form sends: the answer's content with
// defaults filled in, decoded strictly (the one value that was checked is
// the one that is sent), or an error that says what does not fit.
func (r *InputRequest) content(a *InputAnswer) (map[string]any, error) {
	switch a.Action {
	case AnswerAccept:
	case AnswerDecline, AnswerCancel:
		return nil, nil
	default:
		return nil, fmt.Errorf("action %q: answer accept, decline or cancel", a.Action)
	}
	if r.form == nil { // a URL, or a sampling request: nothing to fill in
		return nil, nil
	}
	// A copy, as JSON has it (numbers as float64, as the SDK checks them
	// again): the value checked is the value sent.
	raw, err := json.Marshal(a.Content)
	if err != nil {
		return nil, fmt.Errorf("the answer cannot be encoded: %v", err)
	}
	var content map[string]any
	if err := json.Unmarshal(raw, &content); err != nil {
		return nil, fmt.Errorf("the answer: %v", err)
	}
	if content == nil {
		content = map[string]any{}
	}
	for name, d := range r.form.defaults {
		if _, ok := content[name]; !ok {
			content[name] = d
		}
	}
	// The server gets the fields it asked for: others, which a client may
	// add (and the schema would let through), are left out.
	maps.DeleteFunc(content, func(name string, _ any) bool {
		_, asked := slices.BinarySearch(r.form.names, name)
		return !asked
	})
	if err := r.form.schema.Validate(content); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrAnswerDoesNotFit, err)
	}
	return content, nil
}

// plainJSON is v (from schema.Decode) as encoding/json decodes it, numbers
// as float64: what the answers it goes into hold, and what the SDK checks
// them as.
func plainJSON(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(raw, &out) != nil {
		return v
	}
	return out
}
