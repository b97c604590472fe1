package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"regexp"
)

// sessionID matches a session id, wherever it turns up in a log line: as
// the gateway makes them (sessions.go: 52 characters of base32) or as the
// SDK does (crypto/rand.Text: 26).
var sessionID = regexp.MustCompile(`\b[A-Z2-7]{26}(?:[A-Z2-7]{26})?\b`)

// fingerprint names a session id in the log without giving it away: a
// session id is the only credential of a 2025-11-25 session.
func fingerprint(id string) string {
	if id == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(id))
	return "session:" + hex.EncodeToString(sum[:6])
}

// scrubSessions wraps h so that no session id reaches the log raw, in the
// message or in any string attribute: the SDK's own lines included.
func scrubSessions(h slog.Handler) slog.Handler { return &scrubber{h} }

type scrubber struct{ next slog.Handler }

func (s *scrubber) Enabled(ctx context.Context, l slog.Level) bool { return s.next.Enabled(ctx, l) }

func (s *scrubber) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, scrub(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(scrubAttr(a))
		return true
	})
	return s.next.Handle(ctx, out)
}

func (s *scrubber) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = scrubAttr(a)
	}
	return &scrubber{s.next.WithAttrs(out)}
}

func (s *scrubber) WithGroup(name string) slog.Handler { return &scrubber{s.next.WithGroup(name)} }

func scrubAttr(a slog.Attr) slog.Attr {
	switch v := a.Value.Resolve(); v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, scrub(v.String()))
	case slog.KindGroup:
		attrs := v.Group()
		out := make([]any, len(attrs))
		for i, g := range attrs {
			out[i] = scrubAttr(g)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, scrub(err.Error()))
		}
	}
	return a
}

func scrub(s string) string { return sessionID.ReplaceAllStringFunc(s, fingerprint) }

// perRequestLines are the SDK server's Info lines about a connection
// opening and closing. A 2026-07-28 request is served as a connection of
// its own, with no session id, that opens and closes with the request:
// there they say nothing, three times a call.
var perRequestLines = map[string]bool{
	"server connecting":           true,
	"server session connected":    true,
	"server session disconnected": true,
}

// dropPerRequest wraps h, the SDK server's log, so that the lines of
// perRequestLines reach it only when they name a session: a 2025-11-25
// session's opening and closing are still recorded ("server connecting",
// which names none, comes just before "server session connected").
func dropPerRequest(h slog.Handler) slog.Handler { return &perRequest{h} }

type perRequest struct{ next slog.Handler }

func (p *perRequest) Enabled(ctx context.Context, l slog.Level) bool { return p.next.Enabled(ctx, l) }

func (p *perRequest) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo && perRequestLines[r.Message] && !namesSession(r) {
		return nil
	}
	return p.next.Handle(ctx, r)
}

// namesSession reports whether r has a session_id attribute that is not
// empty.
func namesSession(r slog.Record) bool {
	named := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "session_id" {
			named = a.Value.Resolve().String() != ""
			return false
		}
		return true
	})
	return named
}

func (p *perRequest) WithAttrs(as []slog.Attr) slog.Handler {
	return &perRequest{p.next.WithAttrs(as)}
}

func (p *perRequest) WithGroup(name string) slog.Handler { return &perRequest{p.next.WithGroup(name)} }
