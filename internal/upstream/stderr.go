package upstream

import (
	"bufio"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// drainStderr copies the server's stderr into the tail, every line, and
// into the host's log, within its limits (stderrLog), line by line, until
// every process holding the pipe is gone.
func (c *Conn) drainStderr(r *os.File) {
	defer close(c.stderrDone)
	defer r.Close()
	out := newStderrLog(c.log, c.cfg.ID, defaultStderrLimits)
	defer out.close()
	br := bufio.NewReaderSize(r, 4096)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			c.stderr.Write(line)
			if err == bufio.ErrBufferFull {
				c.stderr.Write([]byte("\n"))
			}
			out.line(strings.TrimRight(string(line), "\r\n"), time.Now())
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

// stderrLimits bound what of one connection's stderr reaches the log.
type stderrLimits struct {
	lines, lineBurst float64 // lines per second, and at once
	bytes, byteBurst float64 // bytes per second, and at once
	total            int     // bytes for the whole connection
	reportEvery      time.Duration
}

// defaultStderrLimits let a server log its start-up and the odd error or
// burst in full, at most about 2.7 MB a minute after that and 8 MiB in
// all; 24 MB in 12 s becomes a few hundred kilobytes and a count.
var defaultStderrLimits = stderrLimits{
	lines: 50, lineBurst: 500,
	bytes: 32 << 10, byteBurst: 256 << 10,
	total:       8 << 20,
	reportEvery: 10 * time.Second,
}

// A stderrLog passes a server's stderr lines to the host's log within
// limits: a burst and then a steady rate of lines and of bytes, and a total
// for the connection. Lines over them are dropped and counted; the count
// is logged at most every reportEvery while lines are dropped, and when
// the server's stderr ends (close). Its methods are safe for concurrent
// use.
type stderrLog struct {
	log    *slog.Logger
	server string
	limits stderrLimits

	mu           sync.Mutex
	lines, bytes *rate.Limiter
	left         int         // bytes of the total not used yet
	droppedLines int         // since the last report
	droppedBytes int         // since the last report
	report       *time.Timer // the next report, while lines were dropped
	closed       bool
}

func newStderrLog(log *slog.Logger, server string, l stderrLimits) *stderrLog {
	return &stderrLog{
		log: log, server: server, limits: l, left: l.total,
		lines: rate.NewLimiter(rate.Limit(l.lines), int(l.lineBurst)),
		bytes: rate.NewLimiter(rate.Limit(l.bytes), int(l.byteBurst)),
	}
}

// line logs one line the server wrote at now, or counts it as dropped.
func (s *stderrLog) line(text string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(text)
	if n <= s.left && s.bytes.AllowN(now, n) && s.lines.AllowN(now, 1) {
		s.left -= n
		s.log.Info("stderr", "line", text)
		return
	}
	if n > s.left && s.left >= 0 {
		s.log.Warn(fmt.Sprintf("server %s wrote more than %d bytes on stderr over this connection; the rest is counted, not logged", s.server, s.limits.total))
		s.left = -1 // said once
	}
	s.droppedLines++
	s.droppedBytes += n
	if s.report == nil && !s.closed {
		s.report = time.AfterFunc(s.limits.reportEvery, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.report = nil
			s.flush()
		})
	}
}

// flush logs what was dropped since the last report, if anything.
func (s *stderrLog) flush() {
	if s.droppedLines == 0 {
		return
	}
	s.log.Warn(fmt.Sprintf("dropped %d lines / %d bytes of stderr from server %s", s.droppedLines, s.droppedBytes, s.server),
		"dropped_lines", s.droppedLines, "dropped_bytes", s.droppedBytes)
	s.droppedLines, s.droppedBytes = 0, 0
}

// close reports what is left to report; nothing is logged after it.
func (s *stderrLog) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.report != nil {
		s.report.Stop()
		s.report = nil
	}
	s.flush()
}
