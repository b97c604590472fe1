// Package schema decodes untrusted JSON strictly and compiles and checks JSON
// Schemas within fixed bounds.
//
// Tool arguments arrive from a model as raw JSON text, and tool schemas and
// results arrive from MCP servers that are not trusted. [Decode] turns such
// text into one value that policy, validation and forwarding all share; it
// refuses input that different parsers could read differently (duplicate keys,
// keys that differ only in letter case, invalid UTF-8, unpaired surrogates), so
// no later stage can see a different value than the one that was checked.
// [Check] applies the same rules without building the value.
//
// [Compile] accepts a tool's inputSchema or outputSchema only if every keyword
// is one a model provider can take, every $ref stays inside the document, and
// the document is small and shallow enough that validation cannot explode:
// its size, nesting, reference chains and expansion are bounded, and the
// worst-case validation work per value node is measured (a small recursive
// schema can otherwise be exponential in the depth of the value). The
// resulting [Schema] validates with github.com/santhosh-tekuri/jsonschema/v6
// after refusing values whose measured worst case is too expensive, and shows
// the model exactly the document it validates against ([Schema.JSON]).
//
// The package is internal: the host pipeline, the catalog and the gateway
// import it; it imports no other Airlock package.
package schema
