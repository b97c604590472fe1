// Command taskserver is an MCP server with the tools the official
// conformance suite's tasks scenarios (@modelcontextprotocol/conformance,
// the io.modelcontextprotocol/tasks extension, SEP-2663) call: greet,
// slow_compute, failing_job, protocol_error_job, confirm_delete,
// multi_input and test_tool_with_task.
//
// The tools know nothing of tasks. They are plain tools that take their
// time, fail, or ask the client for input, so that a server in front of
// them, the gateway (airlock serve), is what creates, runs, parks, cancels
// and reports the tasks the suite asks about. A tool that needs an answer
// asks in the multi-round-trip form (SEP-2322: an input-required result, and
// a retry carrying the answers); the SDK turns that into elicitation/create
// requests of its own for a client on a protocol version older than
// 2026-07-28, so the same tool serves either kind of upstream connection.
//
// It serves MCP over stdin and stdout, or over stateless Streamable HTTP
// with -http ADDR, which is how the suite can be pointed at it directly:
//
//	taskserver                        # stdio
//	taskserver -http 127.0.0.1:8080   # http://127.0.0.1:8080/mcp and /
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	httpAddr := flag.String("http", "", "serve stateless Streamable HTTP at this address instead of stdin and stdout")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *httpAddr); err != nil {
		fmt.Fprintln(os.Stderr, "taskserver:", err)
		os.Exit(1)
	}
}

// run serves one server until ctx ends, or, over stdio, until the client
// closes its end.
func run(ctx context.Context, httpAddr string) error {
	server := newServer()
	if httpAddr == "" {
		return server.Run(ctx, &mcp.StdioTransport{})
	}

	ln, err := net.Listen("tcp", httpAddr)
	if err != nil {
		return err
	}
	// The address goes to stderr, so that a caller that asked for port 0
	// can read the port it got.
	fmt.Fprintf(os.Stderr, "taskserver listening on http://%s/mcp\n", ln.Addr())
	srv := &http.Server{Handler: newHTTPHandler(server)}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newHTTPHandler serves server over stateless Streamable HTTP, the wire the
// suite's 2026-07-28 client speaks, at any path.
func newHTTPHandler(server *mcp.Server) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true})
}
