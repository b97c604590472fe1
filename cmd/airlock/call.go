package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/auth/oauth"
)

func (e *env) call(o *options, pos []string) error {
	raw, err := e.readArgs(o.callArgs)
	if err != nil {
		return err
	}
	e.askOnTerminal(o)
	view := newProgressView(e.stderr, o)
	if view != nil {
		e.callProgress = view.update
	}
	s, err := e.openSession(&o.common)
	if err != nil {
		return err
	}
	defer e.closeSession(s)

	r := s.h.Call(e.ctx, s.Snapshot(), airlock.Call{Name: pos[0], Arguments: raw})
	view.finish()
	return e.printOutcome(o, callOutput(r), r, toolServer(s.Snapshot(), pos[0]))
}

// printOutcome prints r, what a call or a prompt of server returned: out,
// its JSON, with --json; otherwise the result, and on stderr what the
// server asked during it. The exit code follows r's status.
func (e *env) printOutcome(o *options, out any, r *airlock.Result, server string) error {
	if o.json {
		if err := writeJSON(e.stdout, out); err != nil {
			return err
		}
	} else {
		printResult(e.stdout, e.stderr, r)
		printInputs(e.stderr, server, r)
	}
	return exitCode(kindExit(r.Status))
}

// askOnTerminal puts what needs a person to the one at the terminal, as
// the shell does: a call (or read, or prompt) that needs approval asks on
// stderr (stdout keeps the result alone) and reads the answer from the
// terminal; so do a server's step-up and its questions during the call.
// Not with --json, which scripts read, nor when the arguments came from
// stdin: then a server's question is declined, and the result says so.
func (e *env) askOnTerminal(o *options) {
	if o.json || o.callArgs == "-" || !isTerminalReader(e.stdin) || !isTerminal(e.stderr) {
		return
	}
	ta := &terminalApprover{out: e.stderr, ed: newLineEditor(e.stdin.(*os.File), e.stderr)}
	e.approver = ta
	e.elicit = ta.elicit
	e.stepUps = airlock.AuthOptions{Open: oauth.Opener(e.stderr, false), Consent: ta.consent}
}

// readArgs reads --args: JSON text, @FILE, or - (stdin). The text is passed
// on untouched: the pipeline decodes it strictly.
func (e *env) readArgs(v string) ([]byte, error) {
	switch {
	case v == "-":
		b, err := io.ReadAll(io.LimitReader(e.stdin, 64<<20))
		if err != nil {
			return nil, usageError("reading --args from stdin: %v", err)
		}
		return b, nil
	case strings.HasPrefix(v, "@"):
		b, err := os.ReadFile(v[1:])
		if err != nil {
			return nil, usageError("--args %s: cannot read the file: %v", v, errText(err))
		}
		return b, nil
	}
	return []byte(v), nil
}

// errText strips the path an os error repeats, so that messages say it once.
func errText(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}

func printResult(stdout, stderr io.Writer, r *airlock.Result) {
	switch {
	case r.Status == airlock.OK:
		if r.Content != "" {
			fmt.Fprintln(stdout, terminalText(r.Content))
		}
	case r.Status.ModelVisible():
		fmt.Fprintf(stderr, "%s: %s\n", r.Status, terminalText(r.Content))
	default:
		fmt.Fprintf(stderr, "%s: %s\n", r.Status, terminalText(r.Err.Msg))
	}
	for _, a := range r.Artifacts {
		fmt.Fprintln(stderr, artifactLine(a))
	}
}

// artifactLine names an artifact for a person: where it was saved, and
// what it holds.
func artifactLine(a airlock.Artifact) string {
	return fmt.Sprintf("artifact %s (%s, %d bytes) saved at %s", a.ID, a.MediaType, a.Size, a.Path)
}

// toolServer is the server of the snapshot's tool name, or "?".
func toolServer(snap *airlock.Snapshot, tool string) string {
	return serverOf(snap.Tools(), tool, func(t airlock.Tool) (string, string) { return t.Name, t.Server })
}

// serverOf is the server of the entry of list named name, or "?"; entry
// returns an entry's name and server.
func serverOf[T any](list []T, name string, entry func(T) (name, server string)) string {
	for _, x := range list {
		if n, server := entry(x); n == name {
			return server
		}
	}
	return "?"
}

// printInputs says what the server asked during the call, and what it
// was answered: on stderr, for the person reading a CI log at 2 a.m.
func printInputs(w io.Writer, server string, r *airlock.Result) {
	for _, in := range r.Inputs {
		what := in.Kind
		if in.Mode != "" {
			what += ", " + in.Mode
		}
		fmt.Fprintf(w, "airlock: server %s asked for input during the call (%s, question %d)", server, what, in.Round)
		if in.Message != "" {
			fmt.Fprintf(w, ": %q", printable(in.Message, 300))
		}
		if in.Domain != "" {
			fmt.Fprintf(w, " (a link to %s)", printable(in.Domain, 255))
		}
		action := in.Action
		if action == "" {
			action = "refused"
		} else {
			action += "d"
			if in.Action == airlock.AnswerAccept {
				action = "accepted"
			} else if in.Action == airlock.AnswerCancel {
				action = "cancelled"
			}
		}
		fmt.Fprintf(w, "; %s", action)
		if in.Reason != "" {
			fmt.Fprintf(w, ": %s", printable(in.Reason, 300))
		}
		fmt.Fprintln(w)
	}
}

// A progressView shows a call's progress notifications on stderr: a bar
// redrawn in place on a terminal, or, with --progress elsewhere, one line
// each.
type progressView struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	drawn bool // a bar is on the screen
}

// newProgressView returns the view --progress and the terminal ask for,
// or nil for none: a bar on a terminal (with --json only if --progress
// asks), lines with --progress elsewhere.
func newProgressView(w io.Writer, o *options) *progressView {
	switch tty := isTerminal(w); {
	case tty && (o.progress || !o.json):
		return &progressView{w: w, tty: true}
	case o.progress:
		return &progressView{w: w}
	}
	return nil
}

// barCells is the width of the bar itself, in cells.
const barCells = 24

func (v *progressView) update(p airlock.CallProgress) {
	v.mu.Lock()
	defer v.mu.Unlock()
	msg := printable(p.Message, 200)
	if !v.tty {
		if msg != "" {
			msg = ": " + msg
		}
		fmt.Fprintf(v.w, "airlock: %s progress %s%s\n", p.Tool, amount(p), msg)
		return
	}
	width := 80
	if f, ok := v.w.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
			width = w
		}
	}
	line := p.Tool + " "
	if p.Total > 0 {
		frac := min(max(p.Progress/p.Total, 0), 1)
		filled := int(frac * barCells)
		line += "[" + strings.Repeat("█", filled) + strings.Repeat("░", barCells-filled) + "] " + amount(p)
	} else {
		line += "[" + strings.Repeat("░", barCells) + "] " + amount(p)
	}
	if msg != "" {
		line += " " + msg
	}
	if r := []rune(line); len(r) > width-1 {
		line = string(r[:width-2]) + "…"
	}
	fmt.Fprint(v.w, "\r\x1b[K"+line)
	v.drawn = true
}

// finish takes the bar off the screen. It is nil-safe.
func (v *progressView) finish() {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.drawn {
		fmt.Fprint(v.w, "\r\x1b[K")
		v.drawn = false
	}
}

// amount says how far a call has got: "3/10 (30%)", or "3" without a
// total.
func amount(p airlock.CallProgress) string {
	n := strconv.FormatFloat(p.Progress, 'f', -1, 64)
	if p.Total <= 0 {
		return n
	}
	pct := min(max(p.Progress/p.Total, 0), 1) * 100
	return fmt.Sprintf("%s/%s (%d%%)", n, strconv.FormatFloat(p.Total, 'f', -1, 64), int(pct))
}

// printable is airlock.Printable.
func printable(s string, limit int) string { return airlock.Printable(s, limit) }
