package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/airlockhq/airlock"
)

func (e *env) tools(args []string) error {
	var c common
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	c.register(fs)
	c.registerTask(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return e.help(err, "airlock tools [--json] [--task ID] [--config FILE] [--state DIR]")
	}
	if len(pos) > 0 {
		return usageError("tools takes no arguments, got %q", pos[0])
	}
	s, err := e.openSession(&c)
	if err != nil {
		return err
	}
	defer e.closeSession(s)

	servers := s.Servers()
	if c.json {
		if err := writeJSON(e.stdout, toolsOutput(s.Snapshot(), servers)); err != nil {
			return err
		}
	} else {
		printTools(e.stdout, coloursFor(e.stdout), s.Snapshot(), servers)
		printFailures(e.stderr, servers)
	}
	return exitCode(serversExit(servers))
}

func (e *env) status(args []string) error {
	var c common
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	c.register(fs)
	c.registerTask(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return e.help(err, "airlock status [--json] [--task ID] [--config FILE] [--state DIR]")
	}
	if len(pos) > 0 {
		return usageError("status takes no arguments, got %q", pos[0])
	}
	s, err := e.openSession(&c)
	if err != nil {
		return err
	}
	defer e.closeSession(s)

	servers := s.Servers()
	if c.json {
		if err := writeJSON(e.stdout, map[string]any{"servers": statusOutput(servers)}); err != nil {
			return err
		}
	} else {
		printStatus(e.stdout, coloursFor(e.stdout), servers)
		printFailures(e.stderr, servers)
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
			fmt.Fprintf(w, "\nairlock: %s\n", s.Err.Msg)
		}
	}
}

// help turns a flag.ErrHelp into the command's usage line.
func (e *env) help(err error, line string) error {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(e.stdout, "usage: "+line)
		return nil
	}
	return err
}
