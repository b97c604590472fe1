package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/airlockhq/airlock"
)

func (e *env) call(o *options, pos []string) error {
	raw, err := e.readArgs(o.callArgs)
	if err != nil {
		return err
	}
	s, err := e.openSession(&o.common)
	if err != nil {
		return err
	}
	defer e.closeSession(s)

	r := s.h.Call(e.ctx, s.Snapshot(), airlock.Call{Name: pos[0], Arguments: raw})
	if o.json {
		if err := writeJSON(e.stdout, callOutput(r)); err != nil {
			return err
		}
	} else {
		printResult(e.stdout, e.stderr, r)
	}
	return exitCode(kindExit(r.Status))
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
			fmt.Fprintln(stdout, r.Content)
		}
	case r.Status.ModelVisible():
		fmt.Fprintf(stderr, "%s: %s\n", r.Status, r.Content)
	default:
		fmt.Fprintf(stderr, "%s: %s\n", r.Status, r.Err.Msg)
	}
	for _, a := range r.Artifacts {
		fmt.Fprintf(stderr, "artifact %s (%s, %d bytes) saved at %s\n", a.ID, a.MediaType, a.Size, a.Path)
	}
}
