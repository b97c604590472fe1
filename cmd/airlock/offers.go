package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
)

// What the servers offer, allowed or not (airlock tools --available): for a
// person deciding what to allow, with what allowing a tool takes.

// offerJSON is one tool a server offers (docs/cli.md): the contract's
// shape, only ever added to.
type offerJSON struct {
	Server       string          `json:"server"`
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema"`
	Annotations  any             `json:"annotations"`
	Allowed      bool            `json:"allowed"`
	// Allow says what allowing the tool takes; absent when it is allowed.
	Allow string `json:"allow,omitempty"`
}

func offersOutput(s *session) []offerJSON {
	out := []offerJSON{}
	for _, o := range s.Available() {
		oj := offerJSON{Server: o.Server, Name: o.Name, Title: o.Title, Description: o.Description,
			InputSchema: o.Input, OutputSchema: o.Output, Allowed: o.Allowed}
		if oj.OutputSchema == nil {
			oj.OutputSchema = json.RawMessage("null")
		}
		if o.Annotations != nil {
			oj.Annotations = o.Annotations
		}
		if !o.Allowed {
			oj.Allow = allowHint(s.cfg, o.Server, o.Name)
		}
		out = append(out, oj)
	}
	return out
}

// allowHint says what allowing tool of server takes in cfg: a command-line
// flag for an mcpServers file given with --config, else the entry of the
// configuration to add it to.
func allowHint(cfg *config.Config, server, tool string) string {
	if cfg.Path != "" && strings.EqualFold(filepath.Ext(cfg.Path), ".json") {
		return fmt.Sprintf("--allow %s:%s", server, tool)
	}
	i := slices.IndexFunc(cfg.Servers, func(s config.Server) bool { return s.ID == server })
	if i < 0 || cfg.Path == "" {
		return fmt.Sprintf("configure server %s in an airlock.yaml, with %s in its allowed_tools", server, tool)
	}
	file, line := splitSource(cfg.Servers[i].Source)
	if abs, err := filepath.Abs(file); err == nil && abs == cfg.Path {
		return fmt.Sprintf("add %s to allowed_tools of server %s (%s:%s)", tool, server, shortPath(file), line)
	}
	// An imported mcpServers file: its import entry lists the tools.
	return fmt.Sprintf("add %s to allowed_tools.%s of the import of %s in %s", tool, server, shortPath(file), shortPath(cfg.Path))
}

// shortPath is path as reached from the working directory, when that is
// shorter.
func shortPath(path string) string {
	wd, err := os.Getwd()
	if err != nil || !filepath.IsAbs(path) {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil && len(rel) < len(path) {
		return rel
	}
	return path
}

// splitSource splits a server's Source, "file:line".
func splitSource(source string) (file, line string) {
	if i := strings.LastIndexByte(source, ':'); i > 0 {
		return source[:i], source[i+1:]
	}
	return source, ""
}

// printOffers prints, server by server, the tools it offers, allowed or
// not, and how to allow one: for every server with all, else for the
// servers that expose no tools because nothing of theirs is allowed (an
// mcpServers file without --allow, or allowed_tools: []).
func printOffers(w io.Writer, col colours, s *session, all bool) {
	byServer := map[string][]airlock.Offer{}
	var order []string
	for _, o := range s.Available() {
		if byServer[o.Server] == nil {
			order = append(order, o.Server)
		}
		byServer[o.Server] = append(byServer[o.Server], o)
	}
	for _, id := range order {
		offers := byServer[id]
		allowed := 0
		for _, o := range offers {
			if o.Allowed {
				allowed++
			}
		}
		if !all && allowed > 0 {
			continue
		}
		fmt.Fprintf(w, "\nServer %s offers %s, %d allowed:\n", id, plural(len(offers), "tool"), allowed)
		rows := [][]string{{"TOOL", "ALLOWED", "INPUT", "DESCRIPTION"}}
		for _, o := range offers {
			yes := "no"
			if o.Allowed {
				yes = "yes"
			}
			rows = append(rows, []string{o.Name, yes, oneLine(inputNames(o.Input), 30), oneLine(o.Description, 60)})
		}
		table(w, col, rows)
		if allowed < len(offers) {
			fmt.Fprintf(w, "To allow one: %s.\n", allowHint(s.cfg, id, "TOOL"))
		}
	}
	if all && len(order) == 0 {
		fmt.Fprintln(w, "\nNo server listed its tools.")
	}
}

// inputNames lists the properties of an input schema, the optional ones
// marked with ?, or "-" for none.
func inputNames(schema json.RawMessage) string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return "-"
	}
	var names []string
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		if !slices.Contains(s.Required, name) {
			name += "?"
		}
		names = append(names, name)
	}
	return strings.Join(names, ", ")
}
