// Package workspace is the task-workspace MCP server bundled with Airlock.
//
// It exposes one directory, the workspace root, to an MCP client over any
// [mcp.Transport]; the CLI serves it over stdio as
// `airlock server workspace --root DIR`. The command-line wiring and
// tests import it; nothing else in Airlock should, since the rest of the
// code reaches servers only through MCP.
//
// # Tools
//
// read_file returns the first line_limit lines (default 200, at most 1000)
// of a UTF-8 text file, with line endings removed, as structured content
// {path, content, truncated}.
//
// # Confinement
//
// Every path is resolved inside the root with [os.Root], and these rules
// hold for every tool:
//
//   - Paths are relative to the root and slash-separated. Absolute paths and
//     paths with ".." elements are refused.
//   - Symbolic links are followed only when they are relative and every step
//     of their resolution stays inside the root. An absolute link is refused
//     even when its target lies inside the root.
//   - Only regular files are read. FIFOs, sockets, devices and directories
//     are refused; files are opened without blocking and checked after
//     opening, so a file swapped for a FIFO cannot stall a call.
//   - A file with more than one hard link is refused, because another name
//     for it may live outside the root.
//   - Files larger than [Options.MaxFileBytes] and files that are not valid
//     UTF-8 are refused.
//
// A refusal is a tool error (a result with isError set) whose text names the
// path as the client gave it and says what is wrong; it never contains host
// paths or operating-system error text. Details go to [Options.Logger] only.
package workspace
