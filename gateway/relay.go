//lint:file-ignore SA1019 passing servers' log messages on uses the logging API that protocol version 2026-07-28 deprecates (SEP-2577), for as long as clients ask for them.

package gateway

import (
	"context"
	"iter"
	"maps"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
)

// What a server says about a call while it runs, progress and log
// messages, goes to the client that made the call, and to no other: the
// host tells the gateway of each through the call's own Call.Progress and
// Call.Log (a read's Read.Progress and Read.Log, a get's
// PromptGet.Progress and PromptGet.Log), and the gateway sends it through the session and in the
// context of the client's own request, so that the SDK writes it on that
// request's stream (Streamable HTTP) and, for a log message, only at the
// level that client asked for: in the request's _meta (2026-07-28), or
// with logging/setLevel on its session (2025-11-25).

// relayDepth bounds what waits to be sent to one slow client; past it,
// progress and log messages are dropped rather than hold up the server's
// connection, which every client shares.
const relayDepth = 64

// A relay sends one call's notifications to its client, in order, from a
// goroutine of its own: the host calls back on the server connection's
// reader, which must never wait for a client.
type relay struct {
	ch   chan func()
	done chan struct{}

	// What the host call of the request takes (onto).
	progress func(airlock.CallProgress)
	log      func(airlock.CallLog)
	level    string
}

// relayFor returns the relay of a request of ss with params (a tool call,
// a read, a get), which passes on progress when the client asked for it (a
// progress token) and log messages when it asked for them; nil when it
// asked for neither.
func (g *Gateway) relayFor(ctx context.Context, ss *mcp.ServerSession, params mcp.RequestParams) *relay {
	token := params.GetProgressToken()
	level := g.logLevel(ss, params)
	if token == nil && level == "" {
		return nil
	}
	r := &relay{ch: make(chan func(), relayDepth), done: make(chan struct{})}
	go r.run()
	if token != nil {
		r.progress = func(p airlock.CallProgress) {
			r.send(func() {
				ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
					Progress: p.Progress, Total: p.Total, Message: p.Message})
			})
		}
	}
	if level != "" {
		r.level = string(level)
		r.log = func(l airlock.CallLog) {
			r.send(func() {
				ss.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(l.Level), Logger: l.Logger, Data: l.Data})
			})
		}
	}
	return r
}

// onto sets a request's Progress, Log and LogLevel to r's.
func (r *relay) onto(progress *func(airlock.CallProgress), log *func(airlock.CallLog), level *string) {
	if r != nil {
		*progress, *log, *level = r.progress, r.log, r.level
	}
}

func (r *relay) run() {
	defer close(r.done)
	for f := range r.ch {
		f()
	}
}

func (r *relay) send(f func()) {
	select {
	case r.ch <- f:
	default:
	}
}

// close sends what is waiting, before the call's result goes out. The host
// calls back no more once the call has returned.
func (r *relay) close() {
	if r == nil {
		return
	}
	close(r.ch)
	<-r.done
}

// logLevel is the level at which the client of a request of ss with
// params wants server log messages: a 2026-07-28 request's own (its
// _meta), else the level its session set; "" when it wants none.
func (g *Gateway) logLevel(ss *mcp.ServerSession, params mcp.RequestParams) mcp.LoggingLevel {
	if m := params.GetMeta(); m != nil {
		if _, ok := m[mcp.MetaKeyProtocolVersion]; ok {
			l, _ := m[mcp.MetaKeyLogLevel].(string)
			return mcp.LoggingLevel(l)
		}
	}
	return g.levels.of(ss)
}

// sessionLevels are the logging levels 2025-11-25 sessions set
// (logging/setLevel), which the SDK keeps to itself.
type sessionLevels struct {
	mu     sync.Mutex
	levels map[*mcp.ServerSession]mcp.LoggingLevel
}

func (l *sessionLevels) of(ss *mcp.ServerSession) mcp.LoggingLevel {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.levels[ss]
}

// set records ss's level, and forgets the sessions no longer among live.
func (l *sessionLevels) set(ss *mcp.ServerSession, level mcp.LoggingLevel, live iter.Seq[*mcp.ServerSession]) {
	open := map[*mcp.ServerSession]bool{}
	for s := range live {
		open[s] = true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.levels == nil {
		l.levels = map[*mcp.ServerSession]mcp.LoggingLevel{}
	}
	maps.DeleteFunc(l.levels, func(s *mcp.ServerSession, _ mcp.LoggingLevel) bool { return !open[s] })
	l.levels[ss] = level
}

// noteLevel is a receiving middleware that records the level a session
// sets, once the SDK has taken it.
func (g *Gateway) noteLevel(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "logging/setLevel" || err != nil {
			return res, err
		}
		ss, _ := req.GetSession().(*mcp.ServerSession)
		p, _ := req.GetParams().(*mcp.SetLoggingLevelParams)
		if ss != nil && p != nil {
			g.levels.set(ss, p.Level, g.server.Sessions())
			g.sessions.setLevel(ctx, ss, p.Level)
		}
		return res, err
	}
}
