package testenv

import (
	"bytes"
	"sync"
)

// A Buffer is a bytes.Buffer that goroutines may write to while a test
// reads it: a log sink shared by a server's goroutines and the test. The
// zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
