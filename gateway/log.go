package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"regexp"
)

// sessionID matches a session id as the SDK makes them (crypto/rand.Text:
// 26 characters of base32), wherever it turns up in a log line.
var sessionID = regexp.MustCompile(`\b[A-Z2-7]{26}\b`)

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
