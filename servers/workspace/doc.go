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
//   - read_file {path, line_limit, offset} returns up to line_limit lines
//     (default 200, at most 1000) of a UTF-8 text file after skipping offset
//     lines, with line endings removed, as {path, content, truncated,
//     start_line, total_lines, next_offset}.
//   - list_dir {path, pattern} returns a directory's entries
//     {name, type, size}, sorted by name, at most 1000, optionally filtered
//     by a path.Match glob on the name.
//   - search_text {pattern, path, regex} finds lines matching literal text
//     or an RE2 expression in the files under path, at most 200 matches.
//   - write_file {path, content} creates or atomically replaces a file.
//
// The user documentation, docs/workspace-server.md, gives every field and
// limit.
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
//     even when its target lies inside the root. write_file follows no link
//     at all, and search_text follows none it meets while walking.
//   - Only regular files are read. FIFOs, sockets, devices and directories
//     are refused; files are opened without blocking and checked after
//     opening, so a file swapped for a FIFO cannot stall a call.
//     Directories are opened through a final "." element, which makes every
//     element a directory open that fails at once on a FIFO.
//   - A file with more than one hard link is refused, because another name
//     for it may live outside the root, unless [Options.AllowHardLinks].
//   - Files larger than [Options.MaxFileBytes] and binary files are not
//     read; read_file refuses files that are not valid UTF-8.
//   - write_file refuses paths inside .git, whose hooks and configuration
//     steer commands run on the host.
//   - Airlock's own state and configuration are out of reach of every tool:
//     a path with an element .airlock, airlock.yaml or airlock.yml (in any
//     letter case, and as case-insensitive, normalising file systems spell
//     it), or inside a path of [Options.Protect], is refused by read_file,
//     list_dir, search_text and write_file, and left out of listings and
//     searches. Links are resolved before the check, so a link into the
//     state directory is refused too, and another name for a protected
//     entry (a hard link, a second mount) is recognised by its identity.
//
// A refusal is a tool error (a result with isError set) whose text names the
// path as the client gave it and says what is wrong; it never contains host
// paths or operating-system error text. Details go to [Options.Logger] only.
package workspace
