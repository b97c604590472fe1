package upstream

import (
	"strings"
	"sync"
)

// A tail keeps the last bytes written to it. It holds a server's stderr so
// that a failure report can show what the server said before it died, while a
// chatty server can never make the host's memory grow.
type tail struct {
	mu   sync.Mutex
	buf  []byte
	size int
	cut  bool // bytes were dropped from the front
}

func newTail(size int) *tail { return &tail{size: size} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) >= t.size {
		t.buf = append(t.buf[:0], p[len(p)-t.size:]...)
		t.cut = true
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.size; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.cut = true
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String returns the kept bytes, starting at a line boundary when the front
// was cut, and without a trailing newline.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(t.buf)
	if t.cut {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return strings.TrimRight(s, "\n")
}

// lastLines returns at most n trailing lines of the tail.
func (t *tail) lastLines(n int) string {
	s := t.String()
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
