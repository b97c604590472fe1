package workspace

import (
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// inferSchema returns the schema inferred from T, a tool's input or output
// type; what names the schema in the panic that only a broken type causes.
func inferSchema[T any](what string) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("%s: %v", what, err))
	}
	return s
}

// boundArray makes the slice property p an array of at most n items.
// Inference allows null for a slice; the handlers always send an array.
func boundArray(p *jsonschema.Schema, n int) {
	p.Types, p.Type = nil, "array"
	p.MaxItems = jsonschema.Ptr(n)
}
