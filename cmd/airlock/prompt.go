package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/airlockhq/airlock"
)

// A lineEditor reads lines from a person at a terminal with line editing
// and history, through golang.org/x/term's Terminal (kept by the Go team
// and already a dependency): cursor keys, Home and End, Ctrl-A, -E, -K, -U
// and -W, Alt-left and -right, up and down through earlier lines, and
// bracketed paste (a pasted line may be longer than the 4096 characters a
// typed one may). The terminal is in raw mode only while a line is read,
// so that output in between and Ctrl-C while a call runs behave as usual.
// History is kept in memory only: call arguments may hold secrets.
type lineEditor struct {
	mu   sync.Mutex
	fd   int
	t    *term.Terminal
	hist *history
	intr *interruptReader
	// pending is the read under way, if a readLine ended (its context
	// did) before the person entered a line.
	pending chan lineRead
}

// newLineEditor reads from in, a terminal, and echoes to out (the same
// terminal, through stdout or stderr).
func newLineEditor(in *os.File, out io.Writer) *lineEditor {
	intr := &interruptReader{r: in}
	hist := &history{}
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{intr, out}, "")
	t.History = hist
	return &lineEditor{fd: int(in.Fd()), t: t, hist: hist, intr: intr}
}

// errInterrupted is a line read that ended with Ctrl-C.
var errInterrupted = errors.New("interrupted")

// readLine shows prompt and reads one line; keep says whether the line goes
// into the history. It returns io.EOF at the end of the input (Ctrl-D on an
// empty line), errInterrupted for Ctrl-C (the process gets SIGINT, as from
// a terminal in its usual mode), and ctx's error once ctx ends.
func (l *lineEditor) readLine(ctx context.Context, prompt string, keep bool) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if w, h, err := term.GetSize(l.fd); err == nil && w > 0 {
		l.t.SetSize(w, h) // a terminal of unknown size stays at 80 columns
	}
	l.t.SetPrompt(prompt)
	l.hist.skip = !keep
	state, err := term.MakeRaw(l.fd)
	if err != nil {
		return "", fmt.Errorf("the terminal cannot be read: %v", err)
	}
	var restore sync.Once
	defer restore.Do(func() { term.Restore(l.fd, state) })
	l.t.SetBracketedPasteMode(true)
	defer l.t.SetBracketedPasteMode(false)

	if l.pending == nil {
		// One read at a time: a read that a question withdrawn (its
		// context ended) left waiting for a line is the next line's.
		got := make(chan lineRead, 1)
		go func() {
			line, err := l.t.ReadLine()
			got <- lineRead{line, err}
		}()
		l.pending = got
	} else {
		// The waiting read shows the new prompt from now on.
		l.t.Write(nil)
	}
	select {
	case r := <-l.pending:
		l.pending = nil
		if errors.Is(r.err, term.ErrPasteIndicator) {
			r.err = nil // a pasted line: as good as a typed one
		}
		if r.err == io.EOF && l.intr.hit.Swap(false) {
			// Ctrl-C: the signal makes ctx end, as it would have in the
			// terminal's usual mode.
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			return "", errInterrupted
		}
		return r.line, r.err
	case <-ctx.Done():
		// The read goes on until a line is entered, which the next
		// readLine takes; the terminal goes back to its usual mode now.
		restore.Do(func() { term.Restore(l.fd, state) })
		return "", ctx.Err()
	}
}

// A lineRead is what one ReadLine of the terminal returned.
type lineRead struct {
	line string
	err  error
}

// An interruptReader passes a terminal's input on, and sends the process
// SIGINT when it sees Ctrl-C, as the terminal would outside raw mode.
type interruptReader struct {
	r   io.Reader
	hit atomic.Bool
}

func (r *interruptReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if bytes.IndexByte(p[:n], 0x03) >= 0 {
		r.hit.Store(true)
		syscall.Kill(os.Getpid(), syscall.SIGINT)
	}
	return n, err
}

// history keeps the lines a person entered, the newest first, up to
// maxHistory; answers to questions (skip) are not kept.
type history struct {
	lines []string // oldest first
	skip  bool
}

const maxHistory = 500

func (h *history) Add(line string) {
	if h.skip || strings.TrimSpace(line) == "" || len(h.lines) > 0 && h.lines[len(h.lines)-1] == line {
		return
	}
	if len(h.lines) == maxHistory {
		h.lines = h.lines[1:]
	}
	h.lines = append(h.lines, line)
}

func (h *history) Len() int { return len(h.lines) }

func (h *history) At(i int) string { return h.lines[len(h.lines)-1-i] }

// terminalApprover asks the person at a terminal about calls that need
// approval, and about step-ups: once (y), never (n), or, where policy
// asks, always (a remembered rule). out gets the question; the answer is
// the next line ed reads.
type terminalApprover struct {
	mu  sync.Mutex
	out io.Writer
	ed  *lineEditor
}

var _ airlock.RememberingApprover = (*terminalApprover)(nil)

func (a *terminalApprover) Approve(ctx context.Context, req airlock.ApprovalRequest) (airlock.Verdict, error) {
	v, _, err := a.ask(ctx, req, false)
	return v, err
}

func (a *terminalApprover) ApproveRemember(ctx context.Context, req airlock.ApprovalRequest) (airlock.Verdict, bool, error) {
	return a.ask(ctx, req, true)
}

func (a *terminalApprover) ask(ctx context.Context, req airlock.ApprovalRequest, always bool) (airlock.Verdict, bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	fmt.Fprintf(a.out, "\n%s needs your approval (%s, until %s):\n  %s\n  server %s: %s\n",
		req.Tool, req.ID, localTime(req.ExpiresAt), strings.ReplaceAll(req.Summary, "\n", "\n  "), req.Server, req.Target)
	question := "Approve this call once? [y/N] "
	if always {
		fmt.Fprintf(a.out, "  always: don't ask again about %s for %s/%s while policy would ask (airlock approvals rules)\n",
			req.Tool, req.Principal.Tenant, req.Principal.User)
		question = "Approve this call? [y/N/always] "
	}
	answer, ok, err := a.answer(ctx, question)
	if errors.Is(context.Cause(ctx), airlock.ErrDecidedElsewhere) {
		fmt.Fprintln(a.out, "\n(answered elsewhere, in the console or with airlock approvals)")
		return "", false, err
	}
	if err != nil || !ok {
		return "", false, err // no answer: the request stays pending
	}
	switch strings.ToLower(answer) {
	case "y", "yes":
		return airlock.Allow, false, nil
	case "a", "always":
		if always {
			return airlock.Allow, true, nil
		}
	}
	return airlock.Deny, false, nil
}

// answer reads the answer to question: ok is false when the input ended.
func (a *terminalApprover) answer(ctx context.Context, question string) (string, bool, error) {
	text, err := a.ed.readLine(ctx, question, false)
	switch {
	case err == io.EOF:
		return "", false, nil
	case errors.Is(err, errInterrupted):
		return "", false, context.Canceled
	case err != nil:
		return "", false, err
	}
	return strings.TrimSpace(text), true, nil
}
