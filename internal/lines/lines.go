// Package lines reads newline-delimited input, one bounded line at a
// time: a line longer than the bound is read to its end and passed over,
// so that the lines after it are read as usual; and writes lines that
// several goroutines share.
package lines

import (
	"bufio"
	"bytes"
	"io"
	"sync"
)

// Read reads one line from br, without its end (\n or \r\n), or what is
// left at the end of the input (nil for nothing). A line of more than max
// bytes is read to its end and not kept: long.
func Read(br *bufio.Reader, max int) (text []byte, long bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			text = append(text, chunk...)
			if long = len(text) > max+len("\r\n"); long {
				text = nil
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if long {
			return nil, true, err
		}
		if err != nil && len(text) == 0 {
			return nil, false, err
		}
		text = bytes.TrimSuffix(bytes.TrimSuffix(text, []byte("\n")), []byte("\r"))
		if len(text) > max {
			return nil, true, err
		}
		return text, false, err
	}
}

// A Writer passes each Write on to W whole, whichever goroutine makes it,
// so that lines written by several goroutines do not interleave.
type Writer struct {
	mu sync.Mutex
	W  io.Writer
}

func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.W.Write(p)
}
