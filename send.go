package airlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/upstream"
)

// send sends tools/call and waits for the answer up to the server's
// request timeout. With max_call_duration set, the host asks the server for
// progress, and each progress notification starts that wait again, up to
// max_call_duration in all. With Options.CallProgress or the call's own
// Progress set, the host asks for progress too, and passes each
// notification on; that changes no bound. With the call's Log set, the
// host asks for the server's log messages during the call and passes on
// those that are the call's (upstream.LogWatch). Cancelling ctx, or
// either bound, makes the SDK send notifications/cancelled.
//
// A server that asks for input during the call (input.go) is answered:
// an input_required result by sending the call again, a fresh request
// each round, with the answers and the requestState as the server gave
// it; the request timeout starts again each round, and does not run
// while a person is asked.
func (h *Host) send(ctx context.Context, q *request) (*mcp.CallToolResult, error) {
	srv, conn := q.srv, q.link.conn
	params := &mcp.CallToolParams{Name: q.tool.Remote, Arguments: q.args}
	if f := q.call.Offers; f != nil {
		// The server hears what this call can answer, not all the host
		// declared (the SDK adds its own _meta but keeps this key).
		sampling := f.Sampling && (srv.cfg.Sampling != config.SamplingAsk || f.Elicitation)
		if caps := conn.Offered(upstream.Features{Form: f.Elicitation, URL: f.ElicitURL, Sampling: sampling, Roots: f.Roots}); caps != nil {
			params.Meta = mcp.Meta{mcp.MetaKeyClientCapabilities: caps}
		}
	}
	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(srv.cfg.RequestTimeout, func() { cancel(errTimeout) })
	defer idle.Stop()
	if srv.cfg.Remote() {
		// A remote connection can break while the request waits (its
		// session gone, its stream cut): the call ends then.
		stop := context.AfterFunc(conn.Live(), func() { cancel(errBroken) })
		defer stop()
	}
	extend, report, mine := srv.cfg.MaxCallDuration > srv.cfg.RequestTimeout, h.opts.CallProgress, q.call.Progress
	if extend {
		limit := time.AfterFunc(srv.cfg.MaxCallDuration, func() { cancel(errTooLong) })
		defer limit.Stop()
	}
	// While a person is asked (paused), the request timeout does not run,
	// and progress does not start it again.
	var pauses sync.Mutex
	paused := 0
	if extend || report != nil || mine != nil {
		token, done := conn.WatchProgress(func(p *mcp.ProgressNotificationParams) {
			if extend {
				pauses.Lock()
				if paused == 0 {
					idle.Reset(srv.cfg.RequestTimeout)
				}
				pauses.Unlock()
			}
			cp := h.progressOf(q, p)
			if report != nil {
				report(cp)
			}
			if mine != nil {
				mine(cp)
			}
		})
		defer done()
		params.SetProgressToken(token)
	}
	sendCtx := callCtx
	if q.call.Log != nil {
		sendCtx = upstream.WithLogWatch(sendCtx, h.logWatch(q))
	}
	pause := func() func() {
		pauses.Lock()
		if paused++; paused == 1 {
			idle.Stop()
		}
		pauses.Unlock()
		return func() {
			pauses.Lock()
			if paused--; paused == 0 {
				idle.Reset(srv.cfg.RequestTimeout)
			}
			pauses.Unlock()
		}
	}
	ask := h.newAsking(q, callCtx, pause, cancel)
	defer ask.close()
	sendCtx = upstream.WithAsker(sendCtx, ask.asker())
	for round := 1; ; round++ {
		if round > 1 {
			idle.Reset(srv.cfg.RequestTimeout)
		}
		res, err := h.sendRound(ctx, callCtx, sendCtx, q, params)
		if err != nil || !res.NeedsInput() {
			return res, err
		}
		if params, err = ask.inputRound(callCtx, params, res); err != nil {
			return nil, err
		}
	}
}

// sendRound sends one tools/call request of q and waits for its answer.
func (h *Host) sendRound(ctx, callCtx, sendCtx context.Context, q *request, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	note := (*upstream.CallNote)(nil)
	if q.srv.cfg.Remote() {
		// Only a remote request can be refused unread, fail on the way,
		// or lose its answer stream.
		sendCtx, note = upstream.WithCallNote(sendCtx)
	} else {
		// An answer that comes after the host stopped waiting can still
		// be caught on such a connection (see awaitLate).
		sendCtx, q.late = upstream.WithLateWatch(sendCtx)
	}
	q.exact.Store(nil)
	sendCtx = upstream.WithRawResult(sendCtx, func(raw json.RawMessage) { q.exact.Store(exactStructured(raw)) })
	res, err := q.link.conn.Session().CallTool(sendCtx, params)
	var status *upstream.StatusError
	if err != nil && note != nil && ctx.Err() == nil {
		switch werr := note.WriteErr(); {
		case werr != nil && refusedUnread(werr):
			// The server refused the request: it wanted credentials, or
			// its session was gone. The refusal may also have broken the
			// connection and so cancelled the call: what counts is the
			// refusal.
			err = werr
		case errors.As(werr, &status) && rejected(status.Code, err):
			// A 2026-07-28 server answers a request it rejects unread
			// with HTTP 400 or 404 and a JSON-RPC error (SEP-2575): the
			// error is its own answer, as on any other transport.
		case errors.As(werr, &status):
			// The server, or a proxy, answered with an HTTP error (a
			// 5xx, say), which the SDK reports as a JSON-RPC error,
			// its own or the one the body held: the request reached it,
			// and no answer of the protocol says what became of it.
			if rpc := (*jsonrpc.Error)(nil); note.BodyAnswered() && errors.As(err, &rpc) {
				err = &upstream.StatusError{Code: status.Code, Said: fmt.Sprintf("JSON-RPC error %d: %s", rpc.Code, printable(rpc.Message))}
			} else {
				err = werr
			}
		case werr != nil:
			// Sending the request failed on the way (the SDK reports
			// this as a JSON-RPC error of its own, as if the server had
			// answered): the server may have received it.
			err = fmt.Errorf("%w: %v", errUndelivered, werr)
		case note.AnswerLost() && context.Cause(callCtx) == nil:
			err = fmt.Errorf("%w: %v", upstream.ErrAnswerLost, err)
		}
	}
	if err != nil && ctx.Err() == nil {
		if cause := context.Cause(callCtx); errors.Is(cause, errTimeout) || errors.Is(cause, errTooLong) || errors.Is(cause, errInputRounds) {
			err = fmt.Errorf("%w: %w", cause, err)
		}
	}
	return res, err
}

// rejected reports whether err is a JSON-RPC error of the kind a
// 2026-07-28 server answers with HTTP status (SEP-2575): method not found
// with 404; invalid params, a missing client capability or an unsupported
// protocol version with 400.
func rejected(status int, err error) bool {
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		return false
	}
	switch werr.Code {
	case jsonrpc.CodeMethodNotFound:
		return status == http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeMissingRequiredClientCapabilities, mcp.CodeUnsupportedProtocolVersion:
		return status == http.StatusBadRequest
	}
	return false
}

var errTooLong = errors.New("still running at the absolute limit")

var errTimeout = errors.New("no answer in time")

var errBroken = errors.New("the connection broke")

var errUndelivered = errors.New("the connection failed while the request was being sent")

// lastWords is, for a call whose server died under it (or stopped reading
// its input), the end of what the server wrote on stderr, to close the
// failure's message: bounded, escaped and redacted, and only on
// connection_error and outcome_unknown, which are for a person and carry
// nothing to the model.
func (h *Host) lastWords(q *request) string {
	if q.sent == nil || q.r.Status != ConnectionError && q.r.Status != OutcomeUnknown {
		return ""
	}
	if f := q.sent.conn.Fault(); f == nil || f.Kind != upstream.FaultExited && f.Kind != upstream.FaultStalled {
		return ""
	}
	return upstream.StderrSuffix(h.gov.redactor.String(q.sent.conn.LastWords()))
}

// callError classifies a failed tools/call.
func (h *Host) callError(ctx context.Context, q *request, err error) *Error {
	srv, tool, conn := q.srv, q.tool, q.link.conn
	e := func(kind Kind, format string, args ...any) *Error {
		return newError(kind, tool.Server, tool.Name, err, format, args...)
	}
	if ae := authError(tool.Server, tool.Name, err); ae != nil {
		return ae
	}
	if conn.Fault() == nil && ctx.Err() == nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		// The server's output ended: the connection is about to say why
		// (the process exited, and with what), which decides the class.
		select {
		case <-conn.Broken():
		case <-time.After(2 * time.Second):
		}
	}
	var werr *jsonrpc.Error
	var ierr *inputError
	switch f := conn.Fault(); {
	case errors.As(err, &ierr):
		return e(ierr.kind, "%s", ierr.msg)
	case ctx.Err() != nil:
		return e(Cancelled, "%s: cancelled", tool.Name)
	case errors.Is(err, errInputRounds):
		return e(ContractError, "%s", h.tooManyRounds(q))
	case errors.Is(err, mcp.ErrSessionMissing):
		return e(ConnectionError, "%s: the server answered that its session is gone (HTTP 404)", tool.Name)
	case notDialed(err):
		return e(ConnectionError, "%s: server %s could not be reached, so nothing was sent: %v", tool.Name, tool.Server, err)
	case errors.Is(err, errTimeout) && f != nil && f.Kind == upstream.FaultStalled:
		return e(ConnectionError, "%s: not sent whole within %s (request_timeout): %s; the request was cancelled", tool.Name, srv.cfg.RequestTimeout, f.Msg)
	case errors.Is(err, errTimeout):
		return e(ConnectionError, "%s: no answer within %s (request_timeout); the request was cancelled", tool.Name, srv.cfg.RequestTimeout)
	case errors.Is(err, errTooLong):
		return e(ConnectionError, "%s: still running after %s (max_call_duration), however much progress it reported; the request was cancelled",
			tool.Name, srv.cfg.MaxCallDuration)
	case f != nil && f.Contract():
		return e(ContractError, "%s: %s", tool.Name, f.Msg)
	case errors.Is(err, errUndelivered), errors.Is(err, upstream.ErrAnswerLost), errors.As(err, new(*upstream.StatusError)):
		return e(ConnectionError, "%s: %v", tool.Name, err)
	case f != nil:
		return e(ConnectionError, "%s: %s", tool.Name, f.Msg)
	case errors.As(err, &werr) && werr.Code == mcp.CodeMissingRequiredClientCapabilities && len(missingFeatures(werr)) > 0:
		return e(Denied, "%s refused: server %s needs client features this call does not offer (%s); Airlock declares elicitation when it has a person to ask (Options.Elicit), sampling where servers[].sampling is ask or allow, roots when it relays a client's (Options.Roots), and through airlock serve only what the client declared",
			tool.Name, tool.Server, strings.Join(missingFeatures(werr), ", "))
	case errors.As(err, &werr):
		return e(ConnectionError, "%s: server answered with JSON-RPC error %d: %s", tool.Name, werr.Code, werr.Message)
	case errors.Is(err, mcp.ErrConnectionClosed):
		return e(ConnectionError, "%s: connection to server %s closed", tool.Name, tool.Server)
	}
	// The connection is healthy, so the SDK could not make sense of the
	// answer: the server broke the protocol contract.
	return e(ContractError, "%s: malformed result: %v", tool.Name, err)
}
