// Package catalog turns what MCP servers advertise into the immutable
// catalog snapshot that a model sees and that every call resolves against.
//
// Discovery is not authorization: Discover pages through a server's
// tools/list with every check a hostile or broken server calls for (page
// limit, repeated cursor, catalog size, duplicate names, the deployment's
// allowlist, object input schemas that compile within bounds, descriptions
// cut to a limit), and a server that fails any check contributes no tools.
// Build then gives each allowed tool a deterministic, provider-safe local
// name and freezes the result in a Snapshot whose id is a hash of its
// bindings and schemas.
//
// Only the root airlock package imports catalog.
package catalog
