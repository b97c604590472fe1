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

// DefaultMaxFileBytes is the largest file read_file reads when
// [Options.MaxFileBytes] is zero.
const DefaultMaxFileBytes = 2_000_000

// Options configures a [Server]. The zero value, and a nil *Options, give
// the documented defaults.
type Options struct {
	// MaxFileBytes is the largest file, in bytes, that a tool reads.
	// Zero or negative means DefaultMaxFileBytes.
	MaxFileBytes int64

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
	if o.Version == "" {
		o.Version = "dev"
	}

	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("open workspace root: %w", err)
	}
	s := &Server{root: r, escapeErr: escapeError(r), logger: o.Logger, maxFile: o.MaxFileBytes}
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
