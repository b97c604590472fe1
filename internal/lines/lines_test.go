package lines

import (
	"bufio"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRead: lines come without their ends (\n or \r\n), the last one
// without an end too; a line longer than the bound is read to its end and
// passed over, and the next line is read as usual.
func TestRead(t *testing.T) {
	type got struct {
		Text string
		Long bool
	}
	for _, tt := range []struct {
		in   string
		want []got
	}{
		{"a\nbb\r\n\nlast", []got{{"a", false}, {"bb", false}, {"", false}, {"last", false}}},
		{"12345\n123456\r\n1234567\nok\n", []got{{"12345", false}, {"123456", false}, {"", true}, {"ok", false}}},
		{strings.Repeat("x", 100) + "\nok", []got{{"", true}, {"ok", false}}},
		{strings.Repeat("x", 100), []got{{"", true}}},
		{"", nil},
		{"\r\n", []got{{"", false}}},
	} {
		br := bufio.NewReaderSize(strings.NewReader(tt.in), 16)
		var lines []got
		for {
			text, long, err := Read(br, 6)
			if long || text != nil {
				lines = append(lines, got{string(text), long})
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%q: %v", tt.in, err)
			}
		}
		if diff := cmp.Diff(tt.want, lines); diff != "" {
			t.Errorf("%q: lines (-want +got):\n%s", tt.in, diff)
		}
	}
}
