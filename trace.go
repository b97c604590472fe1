package airlock

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/redact"
)

// A wireTrace writes Options.Trace: every JSON-RPC message of every
// connection, redacted, one JSON object a line. Connections hand it
// messages (tap) on their own goroutines; one goroutine of its own, ended
// by close, encodes and writes them, so that no connection waits on the
// disk unless the queue is full. It flushes whenever the queue runs dry,
// so that a trace can be followed as it grows.
type wireTrace struct {
	redactor *redact.Redactor
	log      *slog.Logger
	queue    chan traced
	done     chan struct{}

	mu     sync.RWMutex // held for reading to queue, for writing to close
	closed bool
}

// traced is one message as a connection saw it.
type traced struct {
	at     time.Time
	server string
	sent   bool
	msg    []byte
}

// traceLine is one line of the trace.
type traceLine struct {
	Time      string `json:"time"`
	Server    string `json:"server"`
	Direction string `json:"direction"` // "sent" or "received", as the host sees it
	Message   any    `json:"message"`
}

// traceQueue bounds the messages waiting to be written; past it, a
// connection waits for the writer rather than a message being lost.
const traceQueue = 1024

func newWireTrace(w io.Writer, r *redact.Redactor, log *slog.Logger) *wireTrace {
	t := &wireTrace{redactor: r, log: log, queue: make(chan traced, traceQueue), done: make(chan struct{})}
	go t.write(w)
	return t
}

// tap returns the Trace option of server's connections, or nil when
// there is no trace.
func (t *wireTrace) tap(server string) func(sent bool, msg []byte) {
	if t == nil {
		return nil
	}
	return func(sent bool, msg []byte) {
		m := traced{at: time.Now(), server: server, sent: sent, msg: append([]byte(nil), msg...)}
		t.mu.RLock()
		defer t.mu.RUnlock()
		if !t.closed {
			t.queue <- m
		}
	}
}

func (t *wireTrace) write(w io.Writer) {
	defer close(t.done)
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	failed := false
	for m := range t.queue {
		if failed {
			continue // drain, so that no connection waits
		}
		line := traceLine{Time: m.at.UTC().Format(time.RFC3339Nano), Server: m.server, Direction: "received",
			Message: t.redactor.Value(json.RawMessage(m.msg))}
		if m.sent {
			line.Direction = "sent"
		}
		err := enc.Encode(line)
		if err == nil && len(t.queue) == 0 {
			err = bw.Flush()
		}
		if err != nil {
			t.log.Error("the wire trace cannot be written; it stops here", "error", err)
			failed = true
		}
	}
	if !failed {
		if err := bw.Flush(); err != nil {
			t.log.Error("the wire trace cannot be written", "error", err)
		}
	}
}

// close writes what is queued, flushes, and stops the writer. Messages
// tapped after it are dropped. It is idempotent and nil-safe.
func (t *wireTrace) close() {
	if t == nil {
		return
	}
	t.mu.Lock()
	if !t.closed {
		t.closed = true
		close(t.queue)
	}
	t.mu.Unlock()
	<-t.done
}
