package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/lines"
)

// ServeStdio serves one client on in and out (a process's stdin and
// stdout) until the client closes in, and the requests it sent are
// answered (within the drain timeout), or ctx ends. When ctx ends, calls in
// flight get up to the drain timeout to finish before the session closes.
// Nothing but MCP messages is written to out.
func (g *Gateway) ServeStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	w := &lineWriter{Writer: lines.Writer{W: out}, c: out, open: newOpenRequests()}
	r := guardLines(in, w, int(g.opts.MaxBodyBytes), g.opts.DrainTimeout)
	t := &mcp.IOTransport{Reader: r, Writer: w, MaxLineLength: int(g.opts.MaxBodyBytes)}
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
// Blank lines are passed over. When in ends, the requests read are
// answered first, for at most settle.
func guardLines(in io.ReadCloser, w *lineWriter, max int, settle time.Duration) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(in, 64<<10)
		for {
			text, long, err := lines.Read(br, max)
			if refusal := refuseLine(text, long, max); refusal != nil {
				w.Write(refusal)
			} else if trimmed := bytes.TrimSpace(text); len(trimmed) > 0 {
				// Trimmed: the SDK's decoder ends the session at anything
				// but a line end after a message, a space included.
				w.open.read(trimmed)
				if _, werr := pw.Write(append(trimmed, '\n')); werr != nil {
					return // the session is closed
				}
			}
			if err != nil {
				if err == io.EOF {
					// The client closed its input, as a client ends a
					// stdio session: the requests it sent are answered
					// first (a write cut off now would be an unknown
					// outcome), for at most the drain timeout.
					w.open.settled(settle)
				}
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return closeBoth{pr, in}
}

// openRequests are the ids of the client's requests read and not yet
// answered.
type openRequests struct {
	mu   sync.Mutex
	ids  map[string]bool
	none chan struct{} // closed when ids empties; nil when nobody waits
}

func newOpenRequests() *openRequests { return &openRequests{ids: map[string]bool{}} }

// idKey is the id of line, a request (or, with response, a response),
// as a key the same however the id is spelled; ok is false for any other
// line.
func idKey(line []byte, response bool) (key string, ok bool) {
	id, isRequest, isResponse, ok := head(line)
	var v any
	if !ok || (response && !isResponse) || (!response && !isRequest) || json.Unmarshal(id, &v) != nil || v == nil {
		return "", false
	}
	return fmt.Sprintf("%T:%v", v, v), true
}

// read notes a line the client sent: a request is open until answered.
func (o *openRequests) read(line []byte) {
	if o == nil {
		return
	}
	if k, ok := idKey(line, false); ok {
		o.mu.Lock()
		o.ids[k] = true
		o.mu.Unlock()
	}
}

// wrote notes a line sent to the client: a response closes its request.
func (o *openRequests) wrote(line []byte) {
	if o == nil {
		return
	}
	if k, ok := idKey(line, true); ok {
		o.mu.Lock()
		delete(o.ids, k)
		if len(o.ids) == 0 && o.none != nil {
			close(o.none)
			o.none = nil
		}
		o.mu.Unlock()
	}
}

// settled returns once every request read was answered, or after d.
func (o *openRequests) settled(d time.Duration) {
	if o == nil {
		return
	}
	o.mu.Lock()
	if len(o.ids) == 0 {
		o.mu.Unlock()
		return
	}
	if o.none == nil {
		o.none = make(chan struct{})
	}
	none := o.none
	o.mu.Unlock()
	select {
	case <-none:
	case <-time.After(d):
	}
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
		if !json.Valid(trimmed) {
			// The decoder took the first of several JSON values; the
			// SDK would end the session at the second.
			e = &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "Parse error: more than one JSON value on the line; each line must be one JSON-RPC message"}
		} else if e, id = checkMessage(trimmed); e == nil {
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
	c    io.Closer
	open *openRequests // the client's requests not yet answered
}

func (l *lineWriter) Write(p []byte) (int, error) {
	n, err := l.Writer.Write(p)
	if err == nil {
		l.open.wrote(p)
	}
	return n, err
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
