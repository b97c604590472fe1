package bearer

import "strings"

// ParseScope splits an RFC 6749 §3.3 scope value, the form of a token's
// "scope" claim (RFC 9068 §2.2.3, RFC 8693 §4.2): one or more scope tokens
// separated by single spaces. It reports false for anything else: an empty
// value, a tab, newline or other whitespace, a leading, trailing or doubled
// space, or a token that is not one of [IsScopeToken].
func ParseScope(s string) ([]string, bool) {
	tokens := strings.Split(s, " ")
	for _, t := range tokens {
		if !IsScopeToken(t) {
			return nil, false
		}
	}
	return tokens, true
}

// IsScopeToken reports whether s is one RFC 6749 scope-token:
// 1*NQCHAR, where NQCHAR is %x21 / %x23-5B / %x5D-7E (visible ASCII but
// the double quote and the backslash).
func IsScopeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c == 0x22 || c == 0x5c || c > 0x7e {
			return false
		}
	}
	return true
}
