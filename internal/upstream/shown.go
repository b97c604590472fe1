package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// What a person is shown of a server's own output when it fails: the line
// on stdout that was not JSON-RPC, the last lines it wrote on stderr. Both
// come from a server nobody vouches for, so both are bounded, and what a
// terminal would act on (escape sequences, control and invisible
// characters) is shown escaped.

// Bounds of what is shown.
const (
	shownLineBytes   = 200 // of one line
	shownStderrLines = 10  // of stderr
	// stdoutWindowBytes is how much of the server's latest output on
	// stdout is kept to find the line a decoding error points into.
	stdoutWindowBytes = 8 << 10
)

// lineWait bounds how long the host waits for the rest of a line that is
// not JSON-RPC, to quote it whole.
const lineWait = 200 * time.Millisecond

// A stdoutWindow keeps the last bytes a server wrote on stdout and where
// they are in the stream, so that the line the JSON decoder stopped at
// can be shown. Its methods are safe for concurrent use.
type stdoutWindow struct {
	mu  sync.Mutex
	buf []byte // at most 2*stdoutWindowBytes
	end int64  // the stream offset just past buf
	// src is the server's stdout, from which the rest of a line is read
	// once the SDK has stopped reading it; nil reads nothing.
	src *os.File
}

// add records bytes read from stdout, in order.
func (w *stdoutWindow) add(p []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.end += int64(len(p))
	if len(p) >= stdoutWindowBytes {
		w.buf = append(w.buf[:0], p[len(p)-stdoutWindowBytes:]...)
		return
	}
	if len(w.buf)+len(p) > 2*stdoutWindowBytes {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)+len(p)-stdoutWindowBytes:]...)
	}
	w.buf = append(w.buf, p...)
}

// lineAt returns the line that holds the byte at stream offset off
// (counted from 0), whether its end has been read, and false when the
// window no longer has it. A line that began before the window starts
// where the window does.
func (w *stdoutWindow) lineAt(off int64) (line string, ended, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := off - (w.end - int64(len(w.buf)))
	if i < 0 || i >= int64(len(w.buf)) {
		return "", false, false
	}
	lo := bytes.LastIndexByte(w.buf[:i], '\n') + 1
	hi := len(w.buf)
	if n := bytes.IndexByte(w.buf[i:], '\n'); n >= 0 {
		hi, ended = int(i)+n, true
	}
	return strings.TrimSuffix(string(w.buf[lo:hi]), "\r"), ended, true
}

// finishLine reads the rest of the line that holds off, when only its
// start has come: until it ends or is long enough to show, for at most
// lineWait. It must be called only once the SDK has stopped reading
// stdout.
func (w *stdoutWindow) finishLine(off int64) {
	if w.src == nil || w.src.SetReadDeadline(time.Now().Add(lineWait)) != nil {
		return // without a deadline, a read could wait forever
	}
	defer w.src.SetReadDeadline(time.Time{})
	buf := make([]byte, 512)
	for {
		line, ended, ok := w.lineAt(off)
		if !ok || ended || len(line) >= shownLineBytes {
			return
		}
		n, err := w.src.Read(buf)
		w.add(buf[:n])
		if err != nil {
			return
		}
	}
}

// notJSON says what the server wrote on stdout that the JSON decoder
// stopped at (err): most often a log line or a banner, which belongs on
// stderr. The SDK must have stopped reading stdout (it does at a decoding
// error): the rest of the line is read from it.
func (w *stdoutWindow) notJSON(err *json.SyntaxError) string {
	w.finishLine(err.Offset - 1)
	line, _, ok := w.lineAt(err.Offset - 1)
	if !ok {
		return fmt.Sprintf("server wrote something on stdout that is not JSON-RPC (%v); a stdio server writes only MCP messages on stdout: logs belong on stderr", err)
	}
	if t := strings.TrimLeft(line, " \t"); t != "" && (t[0] == '{' || t[0] == '[') {
		return fmt.Sprintf("server wrote malformed JSON on stdout (%v): %s", err, quoteLine(line))
	}
	return fmt.Sprintf("server wrote a line on stdout that is not JSON-RPC: %s; a stdio server writes only MCP messages on stdout: logs belong on stderr", quoteLine(line))
}

// quoteLine quotes a line a server wrote, for a person: escaped, and cut
// to shownLineBytes.
func quoteLine(s string) string {
	if len(s) > shownLineBytes {
		return strconv.Quote(strings.ToValidUTF8(s[:shownLineBytes], "")) + "…"
	}
	return strconv.Quote(s)
}

// shownLine makes one line of a server's stderr safe to print: what a
// terminal would act on, or nobody would see, is written as a Go escape,
// and the line is cut to shownLineBytes.
func shownLine(s string) string {
	cut := len(s) > shownLineBytes
	if cut {
		s = strings.ToValidUTF8(s[:shownLineBytes], "")
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t' || unicode.IsGraphic(r): // not a control, format (bidirectional, zero-width, tag) or other invisible character
			b.WriteRune(r)
		default:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	if cut {
		b.WriteString("…")
	}
	return b.String()
}

// stderrTail returns the last lines the server wrote on stderr, each made
// safe to print (shownLine), or "".
func (c *Conn) stderrTail() string {
	s := c.stderr.lastLines(shownStderrLines)
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = shownLine(strings.TrimSuffix(l, "\r"))
	}
	return strings.Join(lines, "\n")
}

// LastWords returns the last lines a stdio server wrote on stderr, for a
// person reading why a call on it failed: at most ten lines, each cut to
// 200 bytes, with what a terminal would act on shown escaped; "" for a
// connection without a process or a server that wrote nothing. Once the
// server has exited, it first waits (at most a second) for the rest of
// what it wrote. It is not redacted: the caller redacts it.
func (c *Conn) LastWords() string {
	if c.cmd == nil {
		return ""
	}
	select {
	case <-c.exited:
		select {
		case <-c.stderrDone:
		case <-time.After(time.Second): // something it started still holds stderr
		}
	default:
	}
	return c.stderrTail()
}

// StderrSuffix is how a failure message ends with a server's last words
// (tail, as LastWords gives them): "; its stderr ended with:" and the
// lines, indented; "" for none.
func StderrSuffix(tail string) string {
	if tail == "" {
		return ""
	}
	return "; its stderr ended with:\n" + indent(tail)
}
