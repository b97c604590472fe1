package issues

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
)

// sessionFingerprint stands for a session id in logs: enough to correlate
// lines, useless for joining the session.
func sessionFingerprint(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:6])
}

// sdkLogHandler is the handler the SDK logs through. It passes on warnings
// and errors only (the SDK reports every connection at info level, which
// in stateless mode is every request) and replaces raw session ids, which
// the SDK logs, with fingerprints.
type sdkLogHandler struct{ inner slog.Handler }

func (h sdkLogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.inner.Enabled(ctx, l)
}

func (h sdkLogHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h sdkLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = redactAttr(a)
	}
	return sdkLogHandler{h.inner.WithAttrs(red)}
}

func (h sdkLogHandler) WithGroup(name string) slog.Handler {
	return sdkLogHandler{h.inner.WithGroup(name)}
}

func redactAttr(a slog.Attr) slog.Attr {
	if a.Key == "session_id" || a.Key == "sessionID" {
		return slog.String("session", sessionFingerprint(a.Value.String()))
	}
	return a
}
