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

// WithLogWatch returns a context whose tools/call carries w.
func WithLogWatch(ctx context.Context, w *LogWatch) context.Context {
	return context.WithValue(ctx, logWatchKey{}, w)
}

// logLevels are the syslog severities of MCP logging, least severe first.
var logLevels = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// logs are the calls of one connection in flight, and those among them
// that watch for log messages.
type logs struct {
	mu       sync.Mutex
	inFlight int                // tools/call requests awaiting their answers
	watches  map[*logWatch]bool // those that asked for log messages
	level    mcp.LoggingLevel   // what an older server's session was set to, or ""
	setMu    sync.Mutex         // one logging/setLevel at a time
}

// A logWatch is a LogWatch while its call is in flight; f is nil once the
// call has returned.
type logWatch struct {
	mu    sync.Mutex
	level mcp.LoggingLevel
	f     func(level, logger string, data any)
}

// watchCalls is a sending middleware that counts the calls in flight and
// registers the LogWatch of those that carry one, asking the server for
// their log messages: in the request's _meta on a 2026-07-28 connection,
// through the session's level on an older one.
func (c *Conn) watchCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		lw, _ := ctx.Value(logWatchKey{}).(*LogWatch)
		level := mcp.LoggingLevel("")
		if lw != nil && lw.F != nil && slices.Contains(logLevels, mcp.LoggingLevel(lw.Level)) && c.serverLogs() {
			level = mcp.LoggingLevel(lw.Level)
		}
		if level != "" && !c.newProtocol() {
			c.lowerLevel(ctx, level)
		}
		if p, ok := req.GetParams().(*mcp.CallToolParams); ok && level != "" && c.newProtocol() {
			m := p.GetMeta()
			if m == nil {
				m = map[string]any{}
			}
			m[mcp.MetaKeyLogLevel] = string(level)
			p.SetMeta(m)
		}
		var w *logWatch
		if level != "" {
			w = &logWatch{level: level, f: lw.F}
		}
		c.logs.enter(w)
		defer c.logs.leave(w)
		return next(context.WithValue(ctx, callLogsKey{}, &callLogs{w}), method, req)
	}
}

// callLogs marks the context of a tools/call request, and so the response
// stream a remote server answers it on: w is the call's watch, or nil when
// it asked for no log messages.
type callLogs struct{ w *logWatch }

type callLogsKey struct{}

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
	c.logs.mu.Lock()
	cur := c.logs.level
	c.logs.mu.Unlock()
	if cur != "" && severity(cur) <= severity(level) {
		return
	}
	if err := c.session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
		c.log.Debug("server did not take a logging level", "level", level, "error", err)
		return
	}
	c.logs.mu.Lock()
	c.logs.level = level
	c.logs.mu.Unlock()
}

func severity(l mcp.LoggingLevel) int { return slices.Index(logLevels, l) }

func (l *logs) enter(w *logWatch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight++
	if w != nil {
		if l.watches == nil {
			l.watches = map[*logWatch]bool{}
		}
		l.watches[w] = true
	}
}

func (l *logs) leave(w *logWatch) {
	l.mu.Lock()
	l.inFlight--
	delete(l.watches, w)
	l.mu.Unlock()
	if w != nil {
		w.mu.Lock()
		w.f = nil
		w.mu.Unlock()
	}
}

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
	if cl, ok := contextValue[*callLogs](stream, callLogsKey{}); ok {
		w = cl.w // the call's own stream: its watch, or nobody's
	} else {
		l := &c.logs
		l.mu.Lock()
		if len(l.watches) == 1 && (c.newProtocol() || l.inFlight == 1) {
			for w = range l.watches {
			}
		}
		l.mu.Unlock()
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
