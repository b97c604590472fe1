package airlock

import (
	"strings"
	"unicode"
)

// Printable is text a server or a model gave, as one line a terminal or a
// log shows as it is: control and formatting characters (escape
// sequences, bidirectional overrides, zero-width characters) removed,
// whitespace runs made one space, at most limit characters, then "…".
func Printable(s string, limit int) string {
	var b strings.Builder
	n, space := 0, false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r), r == unicode.ReplacementChar:
			continue
		}
		if space && n < limit {
			b.WriteByte(' ')
			n++
			space = false
		}
		if n >= limit {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
