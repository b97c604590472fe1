package airlock_test

import (
	"testing"

	"github.com/airlockhq/airlock"
)

func TestPrintable(t *testing.T) {
	for _, tt := range []struct {
		in    string
		limit int
		want  string
	}{
		{"plain text", 100, "plain text"},
		{"  two\n\tlines  \r\n", 100, "two lines"},
		{"red \x1b[31malert\x1b[0m", 100, "red [31malert[0m"},
		{"abc\u202edef\u200bghi\ufeff", 100, "abcdefghi"},
		{"bad \xff byte", 100, "bad byte"},
		{"abcdefgh", 5, "abcde…"},
		{"ab cd", 3, "ab …"},
		{"héllo wörld", 5, "héllo…"},
		{"", 10, ""},
	} {
		if got := airlock.Printable(tt.in, tt.limit); got != tt.want {
			t.Errorf("Printable(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
		}
	}
}
