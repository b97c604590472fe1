//lint:file-ignore SA1019 passing servers' log messages on uses the logging API that protocol version 2026-07-28 deprecates (SEP-2577), for as long as clients ask for them.

package upstream

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's log messages (notifications/message) name no request: over
// stdio nothing ties one to the call it was written during. What does tie
// them is when a server may write them:
//
//   - a 2026-07-28 server writes a call's log messages only when the call
//     asked for them, in its _meta (io.modelcontextprotocol/logLevel), and
//     writes none outside a request;
//   - an older server writes whatever reaches the level its session was
//     given (logging/setLevel), during any call or none;
//   - either writes a call's messages before its answer.
//
// So a call that wants its server's log messages is sent with a LogWatch
// in its context, and the connection looks at each log message as it reads
// it, in the order the server wrote it (the SDK hands notifications to its
// handlers later, on another goroutine, when the call they were about may
// have returned and another begun). A message that came on the response
// stream of a call (a remote server's) is that call's. Any other goes to
// the call it can only belong to: on a 2026-07-28 connection, the only
// call in flight that asked for log messages; on an older one, the only
// call in flight at all. Otherwise it goes to nobody (the host's log
// notes it, at debug level): a message goes to the call it belongs to or
// to none, never to another caller.

// A LogWatch asks for the log messages a server writes during one call, at
// Level (debug, info, notice, warning, error, critical, alert or
// emergency; any other asks for none) and above, and receives each one's
// level, logger and data in F (on the connection's reader, one at a time;
// F must return quickly). F is not called once the call's CallTool has
// returned.
type LogWatch struct {
	Level string
	F     func(level, logger string, data any)
}

type logWatchKey struct{}

// WithLogWatch returns a context whose tools/call (or prompts/get, or
// resources/read) carries w.
func WithLogWatch(ctx context.Context, w *LogWatch) context.Context {
	return context.WithValue(ctx, logWatchKey{}, w)
}

// logLevels are the syslog severities of MCP logging, least severe first.
var logLevels = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// logs is what a connection knows about log messages: the level an older
// server's session was set to.
type logs struct {
	level mcp.LoggingLevel // what an older server's session was set to, or ""
	setMu sync.Mutex       // one logging/setLevel at a time; guards level
}

// A logWatch is a LogWatch while its call is in flight; f is nil once the
// call has returned.
type logWatch struct {
	mu    sync.Mutex
	level mcp.LoggingLevel
	f     func(level, logger string, data any)
}

// logWatch returns the watch of a tools/call that carries a LogWatch in
// ctx, or nil, and asks the server for its log messages: in the request's
// _meta on a 2026-07-28 connection, through the session's level on an
// older one.
func (c *Conn) logWatch(ctx context.Context, req mcp.Request) *logWatch {
	lw, _ := ctx.Value(logWatchKey{}).(*LogWatch)
	if lw == nil || lw.F == nil || !slices.Contains(logLevels, mcp.LoggingLevel(lw.Level)) || !c.serverLogs() {
		return nil
	}
	level := mcp.LoggingLevel(lw.Level)
	if !c.newProtocol() {
		c.lowerLevel(ctx, level)
	} else if p := req.GetParams(); p != nil {
		m := p.GetMeta()
		if m == nil {
			m = map[string]any{}
		}
		m[mcp.MetaKeyLogLevel] = string(level)
		p.SetMeta(m)
	}
	return &logWatch{level: level, f: lw.F}
}

// serverLogs reports whether the server declared logging. A 2026-07-28
// server's logs need no capability of their own; an older one's do.
func (c *Conn) serverLogs() bool {
	if c.session == nil {
		return false
	}
	init := c.session.InitializeResult()
	return c.newProtocol() || init != nil && init.Capabilities != nil && init.Capabilities.Logging != nil
}

func (c *Conn) newProtocol() bool {
	return c.session != nil && c.session.InitializeResult() != nil && c.ProtocolVersion() >= "2026-07-28"
}

// lowerLevel makes an older server's session send log messages of level
// and above, if it sends fewer now. A server that refuses sends none; the
// call goes on without them.
func (c *Conn) lowerLevel(ctx context.Context, level mcp.LoggingLevel) {
	c.logs.setMu.Lock()
	defer c.logs.setMu.Unlock()
	if cur := c.logs.level; cur != "" && severity(cur) <= severity(level) {
		return
	}
	if err := c.session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
		c.log.Debug("server did not take a logging level", "level", level, "error", err)
		return
	}
	c.logs.level = level
}

func severity(l mcp.LoggingLevel) int { return slices.Index(logLevels, l) }

// heardLog is told of each log message as it is read (Conn.heard): params
// are the notification's, stream the context of the request whose response
// stream carried it, or nil (stdio, or a remote server's stream of its
// own).
func (c *Conn) heardLog(stream context.Context, params json.RawMessage) {
	var p mcp.LoggingMessageParams
	if json.Unmarshal(params, &p) != nil {
		return
	}
	var w *logWatch
	if call, ok := contextValue[*inFlight](stream, inFlightKey{}); ok {
		w = call.logs // the call's own stream: its watch, or nobody's
	} else {
		var call *inFlight
		if c.newProtocol() {
			call = c.calls.only(func(f *inFlight) bool { return f.logs != nil })
		} else {
			call = c.calls.only(nil)
		}
		if call != nil {
			w = call.logs
		}
		if w == nil {
			c.log.Debug("server log message not passed on: no single call in flight it can belong to", "level", p.Level)
			return
		}
	}
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f != nil && severity(p.Level) >= severity(w.level) {
		w.f(string(p.Level), p.Logger, p.Data)
	}
}

// contextValue is ctx's value for key, if ctx is not nil and has one of
// type T.
func contextValue[T any](ctx context.Context, key any) (T, bool) {
	var zero T
	if ctx == nil {
		return zero, false
	}
	v, ok := ctx.Value(key).(T)
	return v, ok
}
