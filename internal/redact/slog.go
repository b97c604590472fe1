package redact

import (
	"context"
	"encoding"
	"fmt"
	"log/slog"
)

// A Handler redacts log records before passing them on: the message, every
// attribute value (strings, errors, anything a handler would print) and
// every value under an attribute whose name is a SensitiveKey.
type Handler struct {
	next slog.Handler
	r    *Redactor
}

var _ slog.Handler = (*Handler)(nil)

// NewHandler returns a Handler that redacts with r and writes to next.
func NewHandler(next slog.Handler, r *Redactor) *Handler {
	return &Handler{next: next, r: r}
}

// Enabled reports whether next handles records at level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle redacts the record and passes it to next.
func (h *Handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs redacts attrs once, now, and returns a Handler whose next has
// them.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.attr(a)
	}
	return &Handler{next: h.next.WithAttrs(red), r: h.r}
}

// WithGroup returns a Handler whose next opens the group.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), r: h.r}
}

func (h *Handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		group := v.Group()
		red := make([]any, len(group))
		for i, g := range group {
			if SensitiveKey(a.Key) {
				g = h.sensitive(g)
			}
			red[i] = h.attr(g)
		}
		return slog.Group(a.Key, red...)
	case slog.KindString:
		if SensitiveKey(a.Key) && v.String() != "" {
			return slog.String(a.Key, marker("sensitive_field"))
		}
		return slog.String(a.Key, h.r.String(v.String()))
	case slog.KindAny:
		return slog.Any(a.Key, h.any(v.Any(), SensitiveKey(a.Key)))
	}
	// Numbers, booleans, times and durations hold no secrets.
	return slog.Attr{Key: a.Key, Value: v}
}

// sensitive marks every string in an attribute under a sensitive group.
func (h *Handler) sensitive(a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindString && a.Value.String() != "" {
		return slog.String(a.Key, marker("sensitive_field"))
	}
	return a
}

// any redacts a value of any type the way a handler would print it: errors
// and Stringers by their text, everything else by its JSON form.
func (h *Handler) any(v any, sensitive bool) any {
	var text string
	switch x := v.(type) {
	case nil:
		return nil
	case error:
		text = x.Error()
	case fmt.Stringer:
		text = x.String()
	case encoding.TextMarshaler:
		b, err := x.MarshalText()
		if err != nil {
			return marker("unencodable")
		}
		text = string(b)
	case []byte:
		text = string(x)
	default:
		if j, ok := toJSON(v); ok {
			return h.r.value(j, sensitive, false)
		}
		text = fmt.Sprintf("%+v", v)
	}
	if sensitive && text != "" {
		return marker("sensitive_field")
	}
	return h.r.String(text)
}
