package main

import (
	"strings"
	"testing"

	"github.com/airlockhq/airlock/agent"
)

// TestRunViewLineEndingsAcrossChunks: a CRLF the model's stream splits
// between two chunks is still a line ending; a lone carriage return, at
// the end of the text too, is shown escaped.
func TestRunViewLineEndingsAcrossChunks(t *testing.T) {
	var out, errs strings.Builder
	v := newRunView(&out, &errs, false)
	for _, chunk := range []string{"one\r", "\ntwo\r", "three\r", "", "\r", "\n", "four\r"} {
		v.event(agent.Event{Event: agent.EventText, Text: chunk})
	}
	v.finish()
	if want := "one\r\ntwo\\rthree\\r\r\nfour\\r\n"; out.String() != want {
		t.Errorf("stdout = %q, want %q", out.String(), want)
	}
}
