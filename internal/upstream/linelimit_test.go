package upstream

import (
	"io"
	"os"
	"strings"
	"testing"
)

// TestLineLimit: a line of exactly the limit passes, one byte more breaks
// the connection, however the lines are cut into reads; a newline starts
// the count again.
func TestLineLimit(t *testing.T) {
	const limit = 8
	for _, tt := range []struct {
		name, out string
		over      bool
	}{
		{"lines at the limit", "12345678\n12345678\n", false},
		{"no newline yet, at the limit", "12345678", false},
		{"a line one over", "12345678\n123456789\n", true},
		{"no newline yet, one over", "123456789", true},
		{"many short lines", strings.Repeat("1234\n", 50), false},
		{"empty lines", "\n\n\n12345678\n\n", false},
	} {
		for _, chunk := range []int{1, 3, 4096} {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				for s := tt.out; s != ""; {
					n := min(chunk, len(s))
					w.Write([]byte(s[:n]))
					s = s[n:]
				}
				w.Close()
			}()
			var faults []Fault
			lr := &lineLimitReader{f: r, limit: limit, fault: func(f Fault) { faults = append(faults, f) }}
			_, err = io.ReadAll(lr)
			r.Close()
			if over := err == errOversize; over != tt.over || len(faults) > 0 != tt.over {
				t.Errorf("%s, reads of %d bytes: error %v, faults %v; want over the limit: %v", tt.name, chunk, err, faults, tt.over)
			}
			if tt.over && len(faults) == 1 && faults[0].Kind != FaultOversize {
				t.Errorf("%s: fault %+v", tt.name, faults[0])
			}
		}
	}
}
