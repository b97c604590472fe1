package schema

// shape says how a keyword's value relates to schemas: the walker descends
// only into values that are schemas, so names under "properties" and data
// under "enum" are never mistaken for keywords.
type shape uint8

const (
	shapeData          shape = iota // a plain value: number, string, data
	shapeSchema                     // one schema
	shapeSchemaArray                // an array of schemas
	shapeSchemaOrArray              // draft-07 "items": a schema or an array of schemas
	shapeSchemaMap                  // an object whose values are schemas
	shapeDependencies               // draft-07 "dependencies": schemas or string arrays
)

// availability restricts a keyword to one draft.
type availability uint8

const (
	bothDrafts availability = iota
	only2020
	only7
)

type keyword struct {
	shape shape
	in    availability
	// replacement, when set, is advice given when the keyword is used in the
	// draft it does not belong to.
	replacement string
}

// keywords is the allowlist: every keyword a schema may use. Anything else is
// refused rather than dropped, because the document a model is shown must be
// exactly the document arguments are validated against, and some model
// providers refuse keywords they do not know.
var keywords = map[string]keyword{
	// Core.
	"$schema":     {shape: shapeData},
	"$id":         {shape: shapeData},
	"$ref":        {shape: shapeData},
	"$defs":       {shape: shapeSchemaMap},
	"definitions": {shape: shapeSchemaMap},
	"$comment":    {shape: shapeData},
	"$anchor":     {shape: shapeData, in: only2020, replacement: `in draft-07 an anchor is written as "$id": "#name"`},

	// Applicators.
	"allOf":                {shape: shapeSchemaArray},
	"anyOf":                {shape: shapeSchemaArray},
	"oneOf":                {shape: shapeSchemaArray},
	"not":                  {shape: shapeSchema},
	"if":                   {shape: shapeSchema},
	"then":                 {shape: shapeSchema},
	"else":                 {shape: shapeSchema},
	"properties":           {shape: shapeSchemaMap},
	"patternProperties":    {shape: shapeSchemaMap},
	"additionalProperties": {shape: shapeSchema},
	"propertyNames":        {shape: shapeSchema},
	"items":                {shape: shapeSchemaOrArray},
	"prefixItems":          {shape: shapeSchemaArray, in: only2020, replacement: `in draft-07 write "items" as an array`},
	"contains":             {shape: shapeSchema},
	"dependentSchemas":     {shape: shapeSchemaMap, in: only2020, replacement: `in draft-07 use "dependencies"`},
	"additionalItems":      {shape: shapeSchema, in: only7, replacement: `in draft 2020-12 use "prefixItems" with "items"`},
	"dependencies":         {shape: shapeDependencies, in: only7, replacement: `in draft 2020-12 use "dependentRequired" or "dependentSchemas"`},

	// Validation.
	"type":              {shape: shapeData},
	"enum":              {shape: shapeData},
	"const":             {shape: shapeData},
	"multipleOf":        {shape: shapeData},
	"maximum":           {shape: shapeData},
	"exclusiveMaximum":  {shape: shapeData},
	"minimum":           {shape: shapeData},
	"exclusiveMinimum":  {shape: shapeData},
	"maxLength":         {shape: shapeData},
	"minLength":         {shape: shapeData},
	"pattern":           {shape: shapeData},
	"maxItems":          {shape: shapeData},
	"minItems":          {shape: shapeData},
	"uniqueItems":       {shape: shapeData},
	"maxContains":       {shape: shapeData, in: only2020, replacement: "draft-07 has no equivalent"},
	"minContains":       {shape: shapeData, in: only2020, replacement: "draft-07 has no equivalent"},
	"maxProperties":     {shape: shapeData},
	"minProperties":     {shape: shapeData},
	"required":          {shape: shapeData},
	"dependentRequired": {shape: shapeData, in: only2020, replacement: `in draft-07 use "dependencies"`},

	// Annotations: shown to the model, never asserted.
	"title":            {shape: shapeData},
	"description":      {shape: shapeData},
	"default":          {shape: shapeData},
	"examples":         {shape: shapeData},
	"deprecated":       {shape: shapeData},
	"readOnly":         {shape: shapeData},
	"writeOnly":        {shape: shapeData},
	"format":           {shape: shapeData},
	"contentEncoding":  {shape: shapeData},
	"contentMediaType": {shape: shapeData},
	"contentSchema":    {shape: shapeSchema},

	// MCP: binds a top-level or nested property to an HTTP header.
	"x-mcp-header": {shape: shapeData},
}

// unsupported explains keywords that are valid JSON Schema but refused.
var unsupported = map[string]string{
	"$dynamicRef":           "dynamic references are not supported; use $ref",
	"$dynamicAnchor":        "dynamic references are not supported; use $anchor",
	"$recursiveRef":         "recursive references are not supported; use $ref",
	"$recursiveAnchor":      "recursive references are not supported; use $anchor",
	"$vocabulary":           "custom vocabularies are not supported",
	"unevaluatedProperties": `unevaluated properties are not supported; use "additionalProperties"`,
	"unevaluatedItems":      `unevaluated items are not supported; use "items"`,
}

// annotationKeywords never affect validation. Under draft-07 they are the
// only keywords allowed beside "$ref", whose siblings that draft ignores.
var annotationKeywords = map[string]bool{
	"$comment": true, "title": true, "description": true, "default": true, "examples": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "format": true,
	"contentEncoding": true, "contentMediaType": true, "x-mcp-header": true,
	"$defs": true, "definitions": true, "$schema": true, "$id": true, "$ref": true,
}
