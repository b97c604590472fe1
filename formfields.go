package airlock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A FormField is one property of a form-mode elicitation's schema, as a
// person is asked for it.
type FormField struct {
	Name, Title, Description string
	Kind                     string // string, number, integer, boolean; "" for a choice
	Required                 bool
	Default                  any
	HasDefault               bool
	Choices                  []FormChoice // enum, oneOf consts (SEP-1330)
	Multi                    bool         // an array of choices
}

// A FormChoice is one value a field may take, and its title.
type FormChoice struct{ Value, Title string }

// FormFields reads the fields of a form-mode elicitation's schema (as
// InputRequest.Schema holds it), in the order the server wrote them, for
// an Elicitor to ask for one by one.
func FormFields(raw json.RawMessage) ([]FormField, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	order, err := propertyOrder(raw)
	if err != nil {
		return nil, err
	}
	var out []FormField
	for _, name := range order {
		var p struct {
			Type        string          `json:"type"`
			Title       string          `json:"title"`
			Description string          `json:"description"`
			Default     json.RawMessage `json:"default"`
			Enum        []any           `json:"enum"`
			EnumNames   []string        `json:"enumNames"`
			OneOf       []struct {
				Const any    `json:"const"`
				Title string `json:"title"`
			} `json:"oneOf"`
			Items *struct {
				Enum  []any `json:"enum"`
				AnyOf []struct {
					Const any    `json:"const"`
					Title string `json:"title"`
				} `json:"anyOf"`
			} `json:"items"`
		}
		if err := json.Unmarshal(doc.Properties[name], &p); err != nil {
			return nil, fmt.Errorf("field %q: %v", name, err)
		}
		f := FormField{Name: name, Title: p.Title, Description: p.Description, Kind: p.Type,
			Required: slices.Contains(doc.Required, name)}
		if len(p.Default) > 0 {
			f.HasDefault = json.Unmarshal(p.Default, &f.Default) == nil
		}
		for i, v := range p.Enum {
			c := FormChoice{Value: fmt.Sprint(v)}
			if i < len(p.EnumNames) {
				c.Title = p.EnumNames[i]
			}
			f.Choices = append(f.Choices, c)
		}
		for _, o := range p.OneOf {
			f.Choices = append(f.Choices, FormChoice{Value: fmt.Sprint(o.Const), Title: o.Title})
		}
		if p.Type == "array" && p.Items != nil {
			f.Multi = true
			for _, v := range p.Items.Enum {
				f.Choices = append(f.Choices, FormChoice{Value: fmt.Sprint(v)})
			}
			for _, o := range p.Items.AnyOf {
				f.Choices = append(f.Choices, FormChoice{Value: fmt.Sprint(o.Const), Title: o.Title})
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// propertyOrder returns the names of a schema's properties in the order
// they were written.
func propertyOrder(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("the form's schema is not an object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if tok != "properties" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
			continue
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return nil, fmt.Errorf(`the form's "properties" is not an object`)
		}
		var names []string
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			names = append(names, tok.(string))
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
		}
		return names, nil
	}
	return nil, nil
}

// Parse reads a person's answer, as typed, as the field's type: a choice
// by its number or its value (several, comma-separated, for a list), y or
// n for a boolean, a number.
func (f FormField) Parse(text string) (any, error) {
	if len(f.Choices) > 0 {
		if !f.Multi {
			return f.choice(text)
		}
		var out []any
		for _, part := range strings.Split(text, ",") {
			v, err := f.choice(strings.TrimSpace(part))
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	switch f.Kind {
	case "boolean":
		switch strings.ToLower(text) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, fmt.Errorf("answer y or n")
	case "integer":
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", text)
		}
		return n, nil
	case "number":
		n, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", text)
		}
		return n, nil
	}
	return text, nil
}

// choice reads one of a field's choices, by number or by value.
func (f FormField) choice(text string) (any, error) {
	if n, err := strconv.Atoi(text); err == nil && n >= 1 && n <= len(f.Choices) {
		return f.Choices[n-1].Value, nil
	}
	for _, c := range f.Choices {
		if c.Value == text {
			return c.Value, nil
		}
	}
	return nil, fmt.Errorf("%q is not one of the choices: answer its number or its value", text)
}
