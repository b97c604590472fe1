package main

import (
	"fmt"
	"io"

	"github.com/airlockhq/airlock"
)

func (e *env) tools(o *options, _ []string) error {
	return e.reportServers(&o.common, func(s *session, servers []airlock.ServerStatus) any {
		out := toolsOutput(s.Snapshot(), servers)
		if !o.available {
			return out
		}
		return struct {
			toolsJSON
			Available []offerJSON `json:"available"`
		}{out, offersOutput(s)}
	}, func(w io.Writer, col colours, s *session, servers []airlock.ServerStatus) {
		printTools(w, col, s.Snapshot(), servers)
		printOffers(w, col, s, o.available)
	})
}

func (e *env) status(o *options, _ []string) error {
	return e.reportServers(&o.common, func(s *session, servers []airlock.ServerStatus) any {
		return map[string]any{"servers": statusOutput(servers), "warnings": warningsOutput(s.Snapshot())}
	}, func(w io.Writer, col colours, _ *session, servers []airlock.ServerStatus) {
		printStatus(w, col, servers)
	})
}

// reportServers opens a session and reports its catalog and servers, as
// JSON or as text (with each server's failure, and each configuration
// entry that names no tool, on stderr). It exits 3 when any server failed,
// else 6 when one needs a login.
func (e *env) reportServers(c *common,
	asJSON func(s *session, servers []airlock.ServerStatus) any,
	asText func(w io.Writer, col colours, s *session, servers []airlock.ServerStatus),
) error {
	s, err := e.openSession(c)
	if err != nil {
		return err
	}
	defer e.closeSession(s)

	servers := s.Servers()
	if c.json {
		if err := writeJSON(e.stdout, asJSON(s, servers)); err != nil {
			return err
		}
	} else {
		asText(e.stdout, coloursFor(e.stdout), s, servers)
		printFailures(e.stderr, servers)
		for _, w := range s.Snapshot().Warnings() {
			fmt.Fprintf(e.stderr, "\nairlock: warning: %s\n", w.Msg)
		}
		for _, w := range s.Snapshot().Withheld() {
			fmt.Fprintf(e.stderr, "\nairlock: warning: %s\n", w.Reason)
		}
		for _, t := range s.Snapshot().Tools() {
			if t.Hidden > 0 {
				fmt.Fprintf(e.stderr, "\nairlock: warning: tool %s: server %s's text for it had %s nobody would see "+
					"(bidirectional, zero-width or tag characters); the model gets them shown as [U+XXXX], tag characters removed\n",
					t.Name, t.Server, plural(t.Hidden, "character"))
			}
		}
	}
	return exitCode(serversExit(servers))
}

// serversExit is 3 when any server failed, else 6 when one needs a login.
func serversExit(servers []airlock.ServerStatus) int {
	code := exitOK
	for _, s := range servers {
		switch s.Status {
		case airlock.StatusFailed:
			return exitServer
		case airlock.StatusAuthRequired:
			code = exitAuth
		}
	}
	return code
}

func printTools(w io.Writer, col colours, snap *airlock.Snapshot, servers []airlock.ServerStatus) {
	printStatus(w, col, servers)
	fmt.Fprintln(w)
	tools := snap.Tools()
	if len(tools) == 0 {
		fmt.Fprintln(w, "No tools are exposed.")
		return
	}
	rows := [][]string{{"TOOL", "SERVER", "EFFECT", "DESCRIPTION"}}
	for _, t := range tools {
		rows = append(rows, []string{t.Name, t.Server, string(t.Effect), oneLine(t.Description, 60)})
	}
	table(w, col, rows)
	fmt.Fprintf(w, "\nSnapshot %s (generation %d), %s.\n", snap.ID(), snap.Generation(), plural(len(tools), "tool"))
}

func printStatus(w io.Writer, col colours, servers []airlock.ServerStatus) {
	rows := [][]string{{"SERVER", "STATUS", "PROTOCOL", "TOOLS", "STARTED IN"}}
	for _, s := range servers {
		proto := s.ProtocolVersion
		if proto == "" {
			proto = "-"
		}
		rows = append(rows, []string{s.ID, col.status(s.Status), proto, fmt.Sprint(s.Tools), roundDuration(s.Took).String()})
	}
	table(w, col, rows)
}

func printFailures(w io.Writer, servers []airlock.ServerStatus) {
	for _, s := range servers {
		if s.Err != nil {
			fmt.Fprintf(w, "\nairlock: %s\n", terminalText(s.Err.Msg))
		}
	}
}
