package console

import (
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"slices"
	"time"

	"github.com/airlockhq/airlock"
)

// printable is text from a server or a person made safe to show on one
// line, cut to limit runes: html/template escapes it for HTML, and
// Printable makes hidden characters visible.
func printable(s string, limit int) string { return airlock.Printable(s, limit) }

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	// when is a time as the pages show it: local, to the second.
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Local().Format(time.DateTime)
	},
	// iso is a time for a <time datetime=…> attribute.
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	// ago is how long before now t was: "40s ago", "3m ago", "2h5m ago".
	"ago": func(now, t time.Time) string { return span(now.Sub(t)) + " ago" },
	// in is how long after now t is: "in 4m", or "expired 3m ago".
	"in": func(now, t time.Time) string {
		if d := t.Sub(now); d > 0 {
			return "in " + span(d)
		}
		return "expired " + span(now.Sub(t)) + " ago"
	},
	"text": func(s string, limit int) string { return printable(s, limit) },
	"json": func(v any) string {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err.Error()
		}
		return printable(string(b), 20000)
	},
	"errtext": func(e *airlock.Error) string {
		if e == nil {
			return ""
		}
		return printable(e.Error(), 2000)
	},
	"ms": func(d time.Duration) string { return d.Round(time.Millisecond).String() },
}

// span is d for a person, to the second under an hour, to the minute
// above.
func span(d time.Duration) string {
	switch {
	case d < time.Second:
		return "0s"
	case d < time.Hour:
		return d.Round(time.Second).String()
	default:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	}
}
