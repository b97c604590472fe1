package airlock

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/upstream"
)

// What a server says about a request while it runs, progress and log
// messages, reaches the request's own Progress and Log (Call's, and a
// Read's or PromptGet's, which a read or a get takes on as its call's):
// a tool call wires them in send, a read or a get in watchAccess.

// progressOf is what q's caller is told of a progress notification.
func (h *Host) progressOf(q *request, p *mcp.ProgressNotificationParams) CallProgress {
	return CallProgress{ToolCallID: q.call.ID, Tool: q.tool.Name, Server: q.tool.Server,
		Progress: p.Progress, Total: p.Total, Message: h.gov.scrub(p.Message)}
}

// logWatch asks for the log messages of q's server at q.call.LogLevel,
// for q.call.Log, which must be set.
func (h *Host) logWatch(q *request) *upstream.LogWatch {
	f := q.call.Log
	return &upstream.LogWatch{Level: q.call.LogLevel, F: func(level, logger string, data any) {
		raw, err := json.Marshal(h.gov.scrubValue(data))
		if err != nil {
			return
		}
		f(CallLog{ToolCallID: q.call.ID, Tool: q.tool.Name, Server: q.tool.Server,
			Level: level, Logger: h.gov.scrub(logger), Data: raw})
	}}
}

// watchAccess asks q's server for progress on the request of params and
// for its log messages, when q's caller wants them, and returns the
// context to send the request with and what ends the watch, to call once
// the request has returned.
func (h *Host) watchAccess(ctx context.Context, q *request, params interface{ SetProgressToken(any) }) (context.Context, func()) {
	done := func() {}
	if f := q.call.Progress; f != nil {
		var token string
		token, done = q.link.conn.WatchProgress(func(p *mcp.ProgressNotificationParams) { f(h.progressOf(q, p)) })
		params.SetProgressToken(token)
	}
	if q.call.Log != nil {
		ctx = upstream.WithLogWatch(ctx, h.logWatch(q))
	}
	return ctx, done
}
