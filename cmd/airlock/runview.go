package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/agent"
)

// A runView shows what a run does. With --json every event is a JSON
// line on stdout. Otherwise the model's text goes to stdout as it
// streams, and everything else (tool calls as they start and end,
// approvals, retries, notices) to stderr, one line each, so that stdout
// holds the model's words alone.
type runView struct {
	mu     sync.Mutex
	stdout io.Writer
	stderr io.Writer
	json   bool
	col    colours
	// open: text was written to stdout and no newline ended it yet.
	open bool
	// cr: the model's text so far ended with a carriage return, not
	// written yet: a line feed in the next text makes it a line ending,
	// anything else a control shown escaped.
	cr  bool
	err error // the first failed write of stdout
}

func newRunView(stdout, stderr io.Writer, asJSON bool) *runView {
	return &runView{stdout: stdout, stderr: stderr, json: asJSON, col: coloursFor(stderr)}
}

// event shows one event; Options.Events calls it one event at a time.
func (v *runView) event(e agent.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.json {
		if err := writeJSON(v.stdout, e); err != nil && v.err == nil {
			v.err = err
		}
		return
	}
	switch e.Event {
	case agent.EventText:
		text := e.Text
		if v.cr {
			text, v.cr = "\r"+text, false
		}
		if strings.HasSuffix(text, "\r") {
			text, v.cr = text[:len(text)-1], true
		}
		fmt.Fprint(v.stdout, terminalText(text)) // the model's: what a terminal would obey is shown
		if text != "" {
			v.open = !strings.HasSuffix(text, "\n")
		}
		v.open = v.open || v.cr
		return
	case agent.EventRun, agent.EventDone:
		// The run's id is said when it matters: when it waits, fails or is
		// interrupted (the exit message names it).
		v.endLine()
		return
	}
	v.endLine()
	switch e.Event {
	case agent.EventToolCall:
		v.toolLine(e)
	case agent.EventApprovalRequired:
		fmt.Fprintf(v.stderr, "%s %s needs a person's approval: %s\n", v.col.paint("33", "!"), printable(e.Name, 200), e.ApprovalID)
	case agent.EventRetry:
		wait := time.Duration(e.WaitMS) * time.Millisecond
		fmt.Fprintf(v.stderr, "%s %s; asking again in %s\n", v.col.paint("33", "↻"), printable(e.Text, 300), wait.Round(100*time.Millisecond))
	case agent.EventNotice:
		fmt.Fprintf(v.stderr, "%s %s\n", v.col.dim("·"), printable(e.Text, 500))
	case agent.EventError:
		fmt.Fprintf(v.stderr, "%s %s: %s\n", v.col.red("✗"), printable(e.Name, 200), printable(e.Text, 1000))
	case agent.EventWaiting, agent.EventFailed, agent.EventCancelled:
		// The exit message says it.
	}
}

// toolLine shows a tool call starting or ending.
func (v *runView) toolLine(e agent.Event) {
	if e.Status == "started" {
		// The name is the model's, as it wrote it: a made-up one too.
		fmt.Fprintf(v.stderr, "%s %s %s\n", v.col.dim("→"), printable(e.Name, 200), v.col.dim(e.Args))
		return
	}
	mark := v.col.green("✓")
	if e.Status != "ok" {
		mark = v.col.red("✗")
	}
	line := fmt.Sprintf("%s %s %s", mark, printable(e.Name, 200), e.Status)
	if e.DurationMS > 0 {
		line += " " + v.col.dim(roundDuration(time.Duration(e.DurationMS)*time.Millisecond).String())
	}
	fmt.Fprintln(v.stderr, line)
}

// endLine ends the model's text with a newline before another line.
func (v *runView) endLine() {
	if v.cr {
		fmt.Fprint(v.stdout, terminalText("\r"))
		v.cr = false
	}
	if v.open {
		fmt.Fprintln(v.stdout)
		v.open = false
	}
}

// finish ends the output.
func (v *runView) finish() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.endLine()
}
