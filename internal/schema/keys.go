package schema

import (
	"unicode"
	"unicode/utf8"
)

// keySet finds repeated keys in objects too large for pairwise comparison.
type keySet struct {
	exact map[string][]byte
	fold  map[string][]byte // by foldKey; nil unless case folding is checked
}

func newKeySet(caseFold bool) *keySet {
	s := &keySet{exact: make(map[string][]byte)}
	if caseFold {
		s.fold = make(map[string][]byte)
	}
	return s
}

func (s *keySet) add(key []byte) {
	s.exact[string(key)] = key
	if s.fold != nil {
		s.fold[foldKey(key)] = key
	}
}

// find returns an earlier key equal to key, or equal under case folding.
func (s *keySet) find(key []byte) ([]byte, bool) {
	if prev, ok := s.exact[string(key)]; ok {
		return prev, true
	}
	if s.fold != nil {
		if prev, ok := s.fold[foldKey(key)]; ok {
			return prev, true
		}
	}
	return nil, false
}

// foldKey maps every rune of valid UTF-8 text to the smallest rune of its
// simple case-folding orbit. Two strings have the same foldKey exactly when
// strings.EqualFold reports them equal, because EqualFold compares rune by
// rune and accepts two runes exactly when they share an orbit.
func foldKey(key []byte) string {
	out := make([]byte, 0, len(key))
	for i := 0; i < len(key); {
		c := key[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(key[i:])
		i += size
		out = utf8.AppendRune(out, foldRune(r))
	}
	return string(out)
}

func foldRune(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}
