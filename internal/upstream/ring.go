package upstream

import (
	"strings"
	"sync"
)

// A tail keeps the last bytes written to it. It holds a server's stderr so
// that a failure report can show what the server said before it died, while a
// chatty server can never make the host's memory grow. It holds up to twice
// its size, so that dropping the front costs one copy per size bytes written
// rather than one per write.
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
	if len(t.buf)+len(p) > 2*t.size {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)+len(p)-t.size:]...)
		t.cut = true
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String returns the last size bytes kept, starting at a line boundary when
// the front was cut, and without a trailing newline.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, cut := t.buf, t.cut
	if len(b) > t.size {
		b, cut = b[len(b)-t.size:], true
	}
	s := string(b)
	if cut {
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
