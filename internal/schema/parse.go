package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf8"
)

// smallObject is the number of keys up to which duplicates are found by
// comparing each new key with the earlier ones; larger objects use a map.
const smallObject = 16

// Numbers beyond these bounds are refused: exact comparison of such numbers
// (math/big) costs time that grows with their size.
const (
	maxNumberLen      = 1000
	maxNumberExponent = 1000
)

// parser is a recursive-descent JSON parser that either builds values (Decode)
// or only checks them (Check). One implementation serves both so that they
// can never disagree about what is acceptable.
type parser struct {
	data     []byte
	pos      int
	build    bool
	maxDepth int
	caseFold bool

	// keys holds the keys of every object currently open, innermost last, as
	// slices of data or of arena (keys written with escapes). Objects with more
	// than smallObject keys also get a keySet in sets, indexed by depth.
	keys  [][]byte
	arena []byte
	sets  []*keySet
	buf   []byte // scratch for decoding escaped strings in build mode

	err     *DecodeError
	errPath []string // reference tokens of the error location, innermost first
}

// parsers recycles parsers so that their key stacks and scratch buffers are
// reused: checking a message then allocates nothing in the common case.
var parsers = sync.Pool{New: func() any { return new(parser) }}

// Buffers that grew beyond these sizes are not kept for reuse.
const (
	maxPooledKeys  = 1024
	maxPooledBytes = 64 << 10
)

func newParser(data []byte, opts *DecodeOptions, build bool) (*parser, error) {
	maxDepth, maxBytes, caseFold := opts.limits()
	if len(data) > maxBytes {
		return nil, &DecodeError{
			Reason: fmt.Sprintf("input is %d bytes, more than the limit of %d bytes; send a smaller value", len(data), maxBytes),
			code:   codeSize,
		}
	}
	p := parsers.Get().(*parser)
	*p = parser{
		data: data, build: build, maxDepth: maxDepth, caseFold: caseFold,
		keys: p.keys[:0], arena: p.arena[:0], sets: p.sets[:0], buf: p.buf[:0], errPath: p.errPath[:0],
	}
	return p, nil
}

// release returns p to the pool without keeping references to the input.
func (p *parser) release() {
	if cap(p.keys) > maxPooledKeys || cap(p.sets) > maxPooledKeys || cap(p.errPath) > maxPooledKeys ||
		cap(p.arena) > maxPooledBytes || cap(p.buf) > maxPooledBytes {
		return
	}
	clear(p.keys[:cap(p.keys)])
	clear(p.sets[:cap(p.sets)])
	clear(p.errPath[:cap(p.errPath)])
	p.data, p.err = nil, nil
	parsers.Put(p)
}

// error returns the recorded error with its pointer filled in.
func (p *parser) error() error {
	e := p.err
	toks := make([]string, len(p.errPath))
	for i, t := range p.errPath {
		toks[len(toks)-1-i] = t
	}
	e.Pointer = pointerString(toks)
	return e
}

func (p *parser) fail(code decodeCode, format string, args ...any) bool {
	p.err = &DecodeError{Reason: fmt.Sprintf(format, args...), code: code}
	return false
}

func (p *parser) syntax(what string) bool {
	if p.pos >= len(p.data) {
		return p.fail(codeSyntax, "unexpected end of input: %s", what)
	}
	return p.fail(codeSyntax, "invalid character %s at byte %d: %s", describeByte(p.data, p.pos), p.pos, what)
}

func describeByte(data []byte, pos int) string {
	c := data[pos]
	if c < 0x20 || c == 0x7f {
		return fmt.Sprintf("U+%04X", c)
	}
	if c < utf8.RuneSelf {
		return fmt.Sprintf("%q", rune(c))
	}
	r, size := utf8.DecodeRune(data[pos:])
	if r == utf8.RuneError && size <= 1 {
		return fmt.Sprintf("byte 0x%02x", c)
	}
	return fmt.Sprintf("%q", r)
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// document parses the whole input as exactly one JSON value.
func (p *parser) document() (any, bool) {
	if bytes.HasPrefix(p.data, []byte("\xef\xbb\xbf")) {
		return nil, p.fail(codeSyntax, "input starts with a byte order mark (U+FEFF); send plain UTF-8 JSON without it")
	}
	p.skipSpace()
	if p.pos == len(p.data) {
		return nil, p.fail(codeSyntax, "empty input; expected a JSON value")
	}
	v, ok := p.value(0)
	if !ok {
		return nil, false
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		p.errPath = p.errPath[:0]
		return nil, p.fail(codeSyntax, "unexpected data after the JSON value at byte %d; send exactly one JSON value", p.pos)
	}
	return v, true
}

func (p *parser) value(depth int) (any, bool) {
	if p.pos >= len(p.data) {
		return nil, p.syntax("expected a JSON value")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		if depth == p.maxDepth {
			return nil, p.fail(codeDepth, "nested deeper than %d levels of arrays and objects; flatten the value", p.maxDepth)
		}
		return p.object(depth + 1)
	case c == '[':
		if depth == p.maxDepth {
			return nil, p.fail(codeDepth, "nested deeper than %d levels of arrays and objects; flatten the value", p.maxDepth)
		}
		return p.array(depth + 1)
	case c == '"':
		return p.stringValue()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return p.literal("true", true)
	case c == 'f':
		return p.literal("false", false)
	case c == 'n':
		return p.literal("null", nil)
	default:
		return nil, p.syntax("expected a JSON value")
	}
}

func (p *parser) literal(word string, v any) (any, bool) {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(word)) {
		// Point at the first byte that differs.
		for i := 0; i < len(word) && p.pos < len(p.data) && p.data[p.pos] == word[i]; i++ {
			p.pos++
		}
		return nil, p.syntax("expected " + word)
	}
	p.pos += len(word)
	return v, true
}

func (p *parser) object(depth int) (any, bool) {
	p.pos++ // '{'
	var obj map[string]any
	if p.build {
		obj = make(map[string]any)
	}
	start := len(p.keys)
	arenaStart := len(p.arena)
	defer func() {
		p.keys = p.keys[:start]
		p.arena = p.arena[:arenaStart]
		if depth < len(p.sets) {
			p.sets[depth] = nil
		}
	}()

	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return obj, true
	}
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.syntax("expected a string key in double quotes")
		}
		key, ok := p.key()
		if !ok {
			return nil, false
		}
		if !p.addKey(depth, start, key) {
			return nil, false
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			p.errPath = append(p.errPath, string(key))
			return nil, p.syntax("expected ':' after object key")
		}
		p.pos++
		p.skipSpace()
		v, ok := p.value(depth)
		if !ok {
			p.errPath = append(p.errPath, string(key))
			return nil, false
		}
		if p.build {
			obj[string(key)] = v
		}
		closed, ok := p.next('}', "expected ',' or '}' after object member")
		if !ok {
			return nil, false
		}
		if closed {
			return obj, true
		}
	}
}

// next moves past what must follow a member or an element: a ',' and the
// space after it, or the closing byte end, and reports whether it was end.
// Anything else is a syntax error, described by what.
func (p *parser) next(end byte, what string) (closed, ok bool) {
	p.skipSpace()
	if p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
			return false, true
		case end:
			p.pos++
			return true, true
		}
	}
	return false, p.syntax(what)
}

// addKey records key for the object whose keys start at p.keys[start] and
// refuses it if it repeats an earlier key, exactly or (with caseFold) up to
// case.
func (p *parser) addKey(depth, start int, key []byte) bool {
	n := len(p.keys) - start
	var set *keySet
	if depth < len(p.sets) {
		set = p.sets[depth]
	}
	if set == nil && n < smallObject {
		for _, prev := range p.keys[start:] {
			if p.conflict(prev, key) {
				return false
			}
		}
	} else {
		if set == nil {
			set = newKeySet(p.caseFold)
			for _, prev := range p.keys[start:] {
				set.add(prev)
			}
			for len(p.sets) <= depth {
				p.sets = append(p.sets, nil)
			}
			p.sets[depth] = set
		}
		if prev, dup := set.find(key); dup {
			if p.conflict(prev, key) {
				return false
			}
		}
		set.add(key)
	}
	p.keys = append(p.keys, key)
	return true
}

// conflict reports (and records) whether key may not follow prev in one object.
func (p *parser) conflict(prev, key []byte) bool {
	if bytes.Equal(prev, key) {
		p.errPath = append(p.errPath, string(key))
		p.fail(codeDuplicate, "duplicate key %s; each key may appear only once in an object", quoteForMessage(string(key)))
		return true
	}
	if p.caseFold && bytes.EqualFold(prev, key) {
		p.errPath = append(p.errPath, string(key))
		p.fail(codeCaseFold, "key %s differs only in letter case from key %s in the same object; use one spelling once",
			quoteForMessage(string(key)), quoteForMessage(string(prev)))
		return true
	}
	return false
}

func (p *parser) array(depth int) (any, bool) {
	p.pos++ // '['
	var arr []any
	if p.build {
		arr = []any{}
	}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return arr, true
	}
	for i := 0; ; i++ {
		v, ok := p.value(depth)
		if !ok {
			p.errPath = append(p.errPath, strconv.Itoa(i))
			return nil, false
		}
		if p.build {
			arr = append(arr, v)
		}
		closed, ok := p.next(']', "expected ',' or ']' after array element")
		if !ok {
			return nil, false
		}
		if closed {
			return arr, true
		}
	}
}

// key scans an object key and returns its decoded bytes, which stay valid
// until the enclosing object is finished.
func (p *parser) key() ([]byte, bool) {
	start := p.pos + 1
	end, escaped, ok := p.scanString()
	if !ok {
		return nil, false
	}
	if !escaped {
		return p.data[start:end], true
	}
	from := len(p.arena)
	p.arena = appendUnescaped(p.arena, p.data[start:end])
	return p.arena[from:len(p.arena):len(p.arena)], true
}

func (p *parser) stringValue() (any, bool) {
	start := p.pos + 1
	end, escaped, ok := p.scanString()
	if !ok {
		return nil, false
	}
	if !p.build {
		return nil, true
	}
	if !escaped {
		return string(p.data[start:end]), true
	}
	p.buf = appendUnescaped(p.buf[:0], p.data[start:end])
	return string(p.buf), true
}

// scanString validates the string starting at the opening quote at p.pos and
// leaves p.pos after the closing quote. It returns the end of the contents and
// whether they contain escapes. Every escape it accepts is one that
// appendUnescaped can decode into valid UTF-8.
func (p *parser) scanString() (end int, escaped, ok bool) {
	data := p.data
	i := p.pos + 1
	for {
		// Fast path over plain ASCII.
		for i < len(data) {
			c := data[i]
			if c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
				break
			}
			i++
		}
		if i >= len(data) {
			p.pos = i
			return 0, false, p.syntax("unterminated string")
		}
		switch c := data[i]; {
		case c == '"':
			p.pos = i + 1
			return i, escaped, true
		case c < 0x20:
			p.pos = i
			return 0, false, p.fail(codeSyntax, "control character U+%04X at byte %d must be escaped inside a string", c, i)
		case c == '\\':
			escaped = true
			n, ok := p.scanEscape(i)
			if !ok {
				return 0, false, false
			}
			i += n
		default:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size <= 1 {
				p.pos = i
				return 0, false, p.fail(codeUTF8, "invalid UTF-8 byte 0x%02x at byte %d; send valid UTF-8 text", c, i)
			}
			i += size
		}
	}
}

// scanEscape validates the escape sequence at data[i] == '\\' and returns its
// length.
func (p *parser) scanEscape(i int) (int, bool) {
	data := p.data
	if i+1 >= len(data) {
		p.pos = len(data)
		return 0, p.syntax("unterminated string")
	}
	switch data[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, true
	case 'u':
	default:
		p.pos = i + 1
		return 0, p.syntax("invalid escape sequence in string")
	}
	r, ok := hex4(data, i+2)
	if !ok {
		p.pos = i
		return 0, p.fail(codeSyntax, "invalid \\u escape at byte %d: expected four hexadecimal digits", i)
	}
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		p.pos = i
		return 0, p.fail(codeSurrogate, "escape \\u%04x at byte %d is an unpaired UTF-16 low surrogate, which is not valid Unicode", r, i)
	case r >= 0xD800 && r <= 0xDBFF:
		if i+7 < len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
			if r2, ok := hex4(data, i+8); ok && r2 >= 0xDC00 && r2 <= 0xDFFF {
				return 12, true
			}
		}
		p.pos = i
		return 0, p.fail(codeSurrogate, "escape \\u%04x at byte %d is a UTF-16 high surrogate not followed by a low surrogate escape, which is not valid Unicode", r, i)
	}
	return 6, true
}

func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// appendUnescaped decodes string contents already checked by scanString.
func appendUnescaped(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			j := bytes.IndexByte(s[i:], '\\')
			if j < 0 {
				return append(dst, s[i:]...)
			}
			dst = append(dst, s[i:i+j]...)
			i += j
			continue
		}
		switch s[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, _ := hex4(s, i+2)
			if r >= 0xD800 && r <= 0xDBFF {
				r2, _ := hex4(s, i+8)
				r = 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00)
				i += 6
			}
			dst = utf8.AppendRune(dst, r)
			i += 6
			continue
		default: // '"', '\\', '/'
			dst = append(dst, s[i+1])
		}
		i += 2
	}
	return dst
}

func (p *parser) number() (any, bool) {
	start := p.pos
	end, ok := p.scanNumber()
	if !ok {
		return nil, false
	}
	p.pos = end
	if reason := numberBounds(p.data[start:end]); reason != "" {
		p.pos = start
		return nil, p.fail(codeNumber, "%s", reason)
	}
	if !p.build {
		return nil, true
	}
	return json.Number(p.data[start:end]), true
}

// scanNumber checks the RFC 8259 number grammar from p.pos and returns its end.
func (p *parser) scanNumber() (int, bool) {
	data, i := p.data, p.pos
	digits := func() bool {
		s := i
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		return i > s
	}
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		digits()
	default:
		p.pos = i
		return 0, p.syntax("expected a digit in number")
	}
	if i < len(data) && data[i] == '.' {
		i++
		if !digits() {
			p.pos = i
			return 0, p.syntax("expected a digit after the decimal point")
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if !digits() {
			p.pos = i
			return 0, p.syntax("expected a digit in the exponent")
		}
	}
	return i, true
}

// numberBounds returns why a syntactically valid number literal is refused,
// or "" if it is accepted.
func numberBounds(lit []byte) string {
	if len(lit) > maxNumberLen {
		return fmt.Sprintf("number is %d characters long; at most %d are accepted", len(lit), maxNumberLen)
	}
	e := bytes.IndexAny(lit, "eE")
	if e < 0 {
		return ""
	}
	exp := lit[e+1:]
	if len(exp) > 0 && (exp[0] == '+' || exp[0] == '-') {
		exp = exp[1:]
	}
	for len(exp) > 1 && exp[0] == '0' {
		exp = exp[1:]
	}
	n := 0
	for _, c := range exp {
		n = n*10 + int(c-'0')
		if n > maxNumberExponent {
			return fmt.Sprintf("number %s has an exponent beyond ±%d; send a number in a normal range", quoteForMessage(string(lit)), maxNumberExponent)
		}
	}
	return ""
}
