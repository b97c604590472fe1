package workspace

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Name is the implementation name the server reports to clients.
const Name = "airlock-workspace"

// Instructions are the server instructions sent to clients.
const Instructions = "Tools operate inside the assigned workspace."

// DefaultMaxFileBytes is the largest file the tools read or write when
// [Options.MaxFileBytes] is zero.
const DefaultMaxFileBytes = 2_000_000

// DefaultMaxSearchBytes is how many bytes of file content one search_text
// call reads at most when [Options.MaxSearchBytes] is zero.
const DefaultMaxSearchBytes = 64_000_000

// Options configures a [Server]. The zero value, and a nil *Options, give
// the documented defaults.
type Options struct {
	// MaxFileBytes is the largest file, in bytes, that a tool reads, and
	// the most content write_file writes. Zero or negative means
	// DefaultMaxFileBytes.
	MaxFileBytes int64

	// MaxSearchBytes bounds the file content one search_text call reads;
	// past it the search stops and says so. Zero or negative means
	// DefaultMaxSearchBytes.
	MaxSearchBytes int64

	// AllowHardLinks lets the tools read, search and replace files that
	// have more than one hard link. By default they are refused, because
	// another name for the same file may live outside the workspace: a
	// hard link planted in the workspace would expose that file's content.
	// Replacing such a file never changes the other names (write_file
	// writes a new file and renames it into place), so the link is broken.
	AllowHardLinks bool

	// Protect lists host paths (absolute, or relative to the working
	// directory) of files and directories that the tools treat as
	// Airlock's own, as they do .airlock, airlock.yaml and airlock.yml
	// anywhere in the tree: refused by read_file, list_dir, search_text
	// and write_file, and left out of listings and searches. The host
	// names its state directory, its configuration file and the files
	// the configuration imports here. A path that does not exist yet is protected once
	// it does. A path outside the root, or one that contains the root (a
	// task's worktree lives in the state directory), has no name inside,
	// so only hard links into it are refused (see AllowHardLinks). A path
	// that is the root itself makes New fail.
	Protect []string

	// Logger receives the server's diagnostics, including the underlying
	// causes of refusals. Nil discards them. It must not write to the
	// stream the protocol uses (stdout for the stdio transport).
	Logger *slog.Logger

	// Version is the implementation version reported to clients.
	// Empty means "dev".
	Version string
}

// Server is the workspace MCP server. Its tools are confined to one root
// directory. A Server is safe for concurrent use; call Close when done.
type Server struct {
	root      *os.Root
	escapeErr error // what root reports for a path leading outside it
	mcp       *mcp.Server
	logger    *slog.Logger
	maxFile   int64

	maxSearch      int64 // bytes of content one search reads
	maxEntries     int   // directory entries one search visits
	allowHardLinks bool
	protect        *protection
}

// New returns a Server whose tools are confined to root, which must be an
// existing directory. The directory stays open until Close, so renaming it
// does not change what the server sees.
func New(root string, opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxSearchBytes <= 0 {
		o.MaxSearchBytes = DefaultMaxSearchBytes
	}
	if o.Version == "" {
		o.Version = "dev"
	}

	protect, err := newProtection(root, o.Protect)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("open workspace root: %w", err)
	}
	s := &Server{
		root:           r,
		escapeErr:      escapeError(r),
		logger:         o.Logger,
		maxFile:        o.MaxFileBytes,
		maxSearch:      o.MaxSearchBytes,
		maxEntries:     defaultMaxEntries,
		allowHardLinks: o.AllowHardLinks,
		protect:        protect,
	}
	s.mcp = mcp.NewServer(
		&mcp.Implementation{Name: Name, Title: "Airlock workspace", Version: o.Version},
		&mcp.ServerOptions{
			Instructions: Instructions,
			Logger:       o.Logger,
			// An empty capability set drops the SDK's default logging
			// capability: diagnostics go to Logger, never to the client.
			// The tools capability is still inferred from the tools added.
			Capabilities: &mcp.ServerCapabilities{},
		},
	)
	s.addReadFile()
	s.addListDir()
	s.addSearchText()
	s.addWriteFile()
	return s, nil
}

// MCP returns the underlying MCP server, for serving it over transports
// other than the one Run takes (for example several sessions).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Close releases the root directory. Tool calls after Close fail.
func (s *Server) Close() error { return s.root.Close() }

// Run serves one session over t (for example &mcp.StdioTransport{}) until
// the client disconnects or ctx is done. It does not close the Server.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.mcp.Run(ctx, t)
}
