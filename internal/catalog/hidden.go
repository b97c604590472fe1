package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/airlockhq/airlock/internal/schema"
)

// Text a server writes for the model (a tool's title and description, and
// the descriptions in its schemas) may carry characters nobody reading it
// sees, or that make it read in another order: Unicode tag characters
// spelling an instruction, bidirectional overrides such as U+202E,
// zero-width characters. Discovery makes them visible before the catalog
// is frozen, and the tool says so (Tool.Hidden).

// FlagHidden is the flag of a tool whose text had hidden characters.
const FlagHidden = "hidden_characters"

// isHidden reports whether r is a character a person reading a description
// would not see, or would see out of order: format characters
// (bidirectional controls, zero-width characters, tags, the byte order
// mark, the soft hyphen), variation selectors, the line and paragraph
// separators, and control characters other than tab and newline.
func isHidden(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return false
	case r == 0x2028 || r == 0x2029:
		return true
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Variation_Selector)
}

func isTag(r rune) bool { return 0xE0000 <= r && r <= 0xE007F }

// reveal makes the hidden characters of s visible: each becomes [U+XXXX],
// except a run of tag characters, which can spell out text (an
// instruction) that no person sees but a model reads: it is removed, and
// one marker says how many there were. It returns how many characters it
// changed.
func reveal(s string) (string, int) {
	if strings.IndexFunc(s, isHidden) < 0 {
		return s, 0
	}
	var b strings.Builder
	n, tags := 0, 0
	flush := func() {
		if tags > 0 {
			fmt.Fprintf(&b, "[%d hidden tag characters removed]", tags)
			tags = 0
		}
	}
	for _, r := range s {
		switch {
		case isTag(r):
			tags++
			n++
			continue
		case isHidden(r):
			flush()
			fmt.Fprintf(&b, "[U+%04X]", r)
			n++
			continue
		}
		flush()
		b.WriteRune(r)
	}
	flush()
	return b.String(), n
}

// mayHide reports whether JSON text may hold a hidden character: one
// written as itself (the canonical schema text writes every character so,
// but for the escapes below), or an escape of a control character or of
// U+2028 or U+2029. A false alarm (a backslash followed by r, say) costs
// only a closer look.
func mayHide(text []byte) bool {
	for _, esc := range []string{`\u00`, `\u202`, `\r`, `\b`, `\f`} {
		if bytes.Contains(text, []byte(esc)) {
			return true
		}
	}
	for len(text) > 0 {
		r, size := utf8.DecodeRune(text)
		if r >= 0x80 && isHidden(r) {
			return true
		}
		text = text[size:]
	}
	return false
}

// revealSchema makes the hidden characters in a compiled schema's
// descriptions and titles visible, and compiles it again when it changed
// any. It returns the schema to use and how many characters it changed.
// Hidden characters elsewhere (property names, enum values, defaults)
// are left: calls are validated against them.
func revealSchema(s *schema.Schema, opts *schema.CompileOptions) (*schema.Schema, int, error) {
	if s == nil || !mayHide(s.JSON()) {
		return s, 0, nil
	}
	dec := json.NewDecoder(bytes.NewReader(s.JSON()))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, 0, err
	}
	n := revealText(tree)
	if n == 0 {
		return s, 0, nil
	}
	revealed, err := schema.Compile(tree, opts)
	return revealed, n, err
}

// revealText reveals the hidden characters of every "description" and
// "title" string of a decoded schema and its subschemas, in place. Values
// that are data, not schemas (enum, const, default, examples), are left as
// they are.
func revealText(v any) int {
	m, ok := v.(map[string]any)
	if !ok {
		return 0 // a boolean schema
	}
	n := 0
	for k, e := range m {
		switch k {
		case "description", "title":
			if s, ok := e.(string); ok {
				var c int
				m[k], c = reveal(s)
				n += c
			}
		case "enum", "const", "default", "examples":
		case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
			if named, ok := e.(map[string]any); ok {
				for _, sub := range named {
					n += revealText(sub)
				}
			}
		default:
			switch x := e.(type) {
			case map[string]any:
				n += revealText(x)
			case []any:
				for _, sub := range x {
					n += revealText(sub)
				}
			}
		}
	}
	return n
}

// Instructions is a server's instructions as a model may read them: hidden
// characters made visible as in descriptions, at most max characters (0
// means 2000). It also returns how many characters it changed.
func Instructions(s string, max int) (string, int) {
	if max <= 0 {
		max = 2000
	}
	s, hidden := reveal(s)
	return cut(s, max), hidden
}
