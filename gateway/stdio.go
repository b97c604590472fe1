package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/lines"
)

// ServeStdio serves one client on in and out (a process's stdin and
// stdout) until the client closes in or ctx ends. When ctx ends, calls in
// flight get up to the drain timeout to finish before the session closes.
// Nothing but MCP messages is written to out.
func (g *Gateway) ServeStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	w := &lineWriter{Writer: lines.Writer{W: out}, c: out}
	t := &mcp.IOTransport{Reader: guardLines(in, w, int(g.opts.MaxBodyBytes)), Writer: w, MaxLineLength: int(g.opts.MaxBodyBytes)}
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

// guardLines passes the lines of in that are JSON-RPC messages on to the
// SDK's transport, which would end the session at the first that is not;
// every other line is answered on w, as JSON-RPC asks, and the session
// goes on: one that is not JSON (-32700), longer than max bytes, a batch
// (MCP has none since 2025-06-18), or JSON that is not a message (-32600).
// Blank lines are passed over.
func guardLines(in io.ReadCloser, w *lineWriter, max int) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(in, 64<<10)
		for {
			text, long, err := lines.Read(br, max)
			if refusal := refuseLine(text, long, max); refusal != nil {
				w.Write(refusal)
			} else if len(bytes.TrimSpace(text)) > 0 {
				if _, werr := pw.Write(append(text, '\n')); werr != nil {
					return // the session is closed
				}
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return closeBoth{pr, in}
}

// refuseLine is the JSON-RPC error line that answers a line that is not a
// message the session can take, or nil. A message is decoded once here
// (and again by the SDK); only a line that fails is looked at further.
func refuseLine(text []byte, long bool, max int) []byte {
	trimmed := bytes.TrimSpace(text)
	if !long && len(trimmed) == 0 {
		return nil
	}
	var id jsonrpc.ID
	var e *jsonrpc.Error
	if long {
		e = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("Invalid Request: a message of more than %d bytes; it was not read", max)}
	} else if _, err := jsonrpc.DecodeMessage(trimmed); err == nil {
		if e, id = checkMessage(trimmed); e == nil {
			return nil
		}
	} else if !json.Valid(trimmed) {
		e = &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "Parse error: the line is not JSON; each line must be one JSON-RPC message"}
	} else if trimmed[0] == '[' {
		e = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: a batch; send each JSON-RPC message on a line of its own"}
	} else {
		e = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: not a JSON-RPC 2.0 message: " + err.Error()}
	}
	return append(errorResponse(id, e), '\n')
}

// A lineWriter writes each message to w in one piece, whichever
// goroutine writes it: the session's, or guardLines' answers.
type lineWriter struct {
	lines.Writer
	c io.Closer
}

func (l *lineWriter) Close() error { return l.c.Close() }

// closeBoth reads from the pipe, and closes it and the input it is fed from.
type closeBoth struct {
	*io.PipeReader
	in io.Closer
}

func (c closeBoth) Close() error {
	c.PipeReader.Close()
	return c.in.Close()
}
