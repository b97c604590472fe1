package gateway

import (
	"context"
	"io"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves one client on in and out (a process's stdin and
// stdout) until the client closes in or ctx ends. When ctx ends, calls in
// flight get up to the drain timeout to finish before the session closes.
// Nothing but MCP messages is written to out.
func (g *Gateway) ServeStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	t := &mcp.IOTransport{Reader: in, Writer: out, MaxLineLength: int(g.opts.MaxBodyBytes)}
	ss, err := g.server.Connect(context.WithoutCancel(ctx), t, nil)
	if err != nil {
		return err
	}
	ended := make(chan struct{})
	go func() {
		ss.Wait()
		close(ended)
	}()
	select {
	case <-ended:
		return nil
	case <-ctx.Done():
	}
	g.drain()
	ss.Close()
	select {
	case <-ended:
	case <-time.After(closeTimeout):
	}
	return nil
}
