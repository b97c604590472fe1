package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/airlockhq/airlock/config"
)

// airlock add and airlock remove: a server into or out of airlock.yaml,
// every other line of the file kept as it was (config.AddServer,
// config.RemoveServer). The result is validated as every command validates
// the configuration, and nothing is written when it fails.

// newConfigHeader starts an airlock.yaml that airlock add creates.
const newConfigHeader = `# airlock.yaml: the MCP servers Airlock runs, and which of their tools an
# agent may use (docs/config.md). Made by airlock add; edit it freely.
`

func (e *env) add(o *options, pos []string) error {
	id, command := pos[0], pos[1:]
	entry := config.ServerEntry{ID: id, URL: o.url}
	switch {
	case o.url != "" && len(command) > 0:
		return usageError("add takes a command (after --) or --url URL, not both")
	case o.url == "" && len(command) == 0:
		return usageError("add needs the command that starts the server, after --: airlock add %s -- COMMAND ARGS…, or --url URL for a remote server", id)
	case len(command) > 0:
		entry.Command, entry.Args = command[0], command[1:]
	}
	path, created, err := e.editableConfig(&o.common)
	if err != nil {
		return err
	}
	var data []byte
	if !created {
		if data, err = os.ReadFile(path); err != nil {
			return usageError("cannot read %s: %v", path, err)
		}
	}
	edited, err := config.AddServer(data, entry)
	if err != nil {
		return usageError("cannot add server %s to %s: %v", id, path, err)
	}
	if created {
		edited = append([]byte(newConfigHeader), edited...)
	}
	if err := e.writeConfig(path, edited); err != nil {
		return err
	}
	what := "Added server " + id + " to " + path
	if created {
		what = "Created " + path + " with server " + id
	}
	fmt.Fprintf(e.stderr, "airlock: %s, none of its tools allowed yet.\n", what)

	// What it offers, as tools --available shows it: only this server is
	// started.
	cfg, err := config.Load(path, nil)
	if err != nil {
		return configError(err)
	}
	i := slices.IndexFunc(cfg.Servers, func(s config.Server) bool { return s.ID == id })
	only := *cfg
	only.Servers = cfg.Servers[i : i+1]
	h, ran, err := e.startHost(&o.common, &only)
	if err != nil {
		return err
	}
	s := &session{h: h, cfg: ran}
	defer e.closeSession(s)
	servers := s.Servers()
	if o.json {
		out := struct {
			ID        string      `json:"id"`
			File      string      `json:"file"`
			Created   bool        `json:"created"`
			Server    serverJSON  `json:"server"`
			Available []offerJSON `json:"available"`
		}{id, path, created, toolsOutput(s.Snapshot(), servers).Servers[0], offersOutput(s)}
		if err := writeJSON(e.stdout, out); err != nil {
			return err
		}
	} else {
		col := coloursFor(e.stdout)
		printStatus(e.stdout, col, servers)
		printOffers(e.stdout, col, s, true)
		printFailures(e.stderr, servers)
	}
	if code := serversExit(servers); code != exitOK {
		fmt.Fprintf(e.stderr, "airlock: server %s is in %s, but it did not start; fix its entry, or take it out with airlock remove %s\n", id, path, id)
		return exitCode(code)
	}
	return nil
}

func (e *env) remove(o *options, pos []string) error {
	id := pos[0]
	path, err := e.configFile(&o.common)
	if errors.Is(err, fs.ErrNotExist) {
		return usageError("no airlock.yaml here or above: there is no server %s to remove", id)
	}
	if err != nil {
		return err
	}
	path = shortPath(path)
	if err := checkYAML(path); err != nil {
		return err
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		return configError(err)
	}
	i := slices.IndexFunc(cfg.Servers, func(s config.Server) bool { return s.ID == id })
	if i < 0 {
		var ids []string
		for _, s := range cfg.Servers {
			ids = append(ids, s.ID)
		}
		return usageError("%s has no server %s (servers: %s)", path, id, strings.Join(ids, ", "))
	}
	if file, _ := splitSource(cfg.Servers[i].Source); !sameFile(file, path) {
		return usageError("server %s comes from %s, which %s imports: remove it there, or remove the import", id, file, path)
	}
	if names := namedBy(cfg, id); len(names) > 0 {
		return usageError("server %s is named by %s: remove or change those entries first, then airlock remove %s", id, strings.Join(names, ", "), id)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return usageError("cannot read %s: %v", path, err)
	}
	edited, err := config.RemoveServer(data, id)
	if err != nil {
		return usageError("cannot remove server %s from %s: %v", id, path, err)
	}
	if err := e.writeConfig(path, edited); err != nil {
		return err
	}
	if o.json {
		return writeJSON(e.stdout, map[string]any{"id": id, "file": path, "removed": true})
	}
	fmt.Fprintf(e.stdout, "Removed server %s from %s.\n", id, path)
	if cfg.Servers[i].OAuth != nil {
		fmt.Fprintf(e.stdout, "Its login tokens, if any, stay in the credential store; to delete them, put the server back and run airlock auth logout %s.\n", id)
	}
	return nil
}

// editableConfig returns the airlock.yaml that add edits: --config, else
// the one found from the working directory, else a new ./airlock.yaml
// (created reports that it does not exist yet).
func (e *env) editableConfig(c *common) (path string, created bool, err error) {
	path, err = e.configFile(c)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintln(e.stderr, "airlock: no airlock.yaml here or above: creating ./airlock.yaml")
		return config.FileName, true, nil
	case err != nil:
		return "", false, err
	}
	path = shortPath(path)
	if err := checkYAML(path); err != nil {
		return "", false, err
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && c.config != "" {
		fmt.Fprintf(e.stderr, "airlock: %s does not exist: creating it\n", path)
		return path, true, nil
	}
	return path, false, nil
}

// checkYAML refuses to edit an mcpServers JSON file: other programs own
// its format, and it has no allowlist.
func checkYAML(path string) error {
	if strings.EqualFold(filepath.Ext(path), ".json") {
		return usageError("%s is an mcpServers file: add and remove edit an airlock.yaml (one can import it: import: [%s])", path, filepath.Base(path))
	}
	return nil
}

// namedBy lists the entries of cfg that name server id: policy entries
// for exactly that server, and audit.record_values of its tools (the local
// names that start with its prefix; with tool_prefix: "" its tools' names
// cannot be told from others', and none is listed). Removing the server
// would leave them naming nothing.
func namedBy(cfg *config.Config, id string) []string {
	prefix := id + "__"
	for i := range cfg.Servers {
		if cfg.Servers[i].ID == id {
			prefix = cfg.Servers[i].LocalPrefix()
		}
	}
	var names []string
	for i, c := range cfg.Policy.Tools {
		if c.Server == id {
			names = append(names, fmt.Sprintf("policy.tools[%d] (%s)", i, c.Source))
		}
	}
	for i, r := range cfg.Policy.Rules {
		if r.Server == id {
			names = append(names, fmt.Sprintf("policy.rules[%d] (%s)", i, r.Source))
		}
	}
	for i, v := range cfg.Audit.RecordValues {
		if prefix != "" && strings.HasPrefix(v, prefix) && i < len(cfg.Audit.RecordValueSources) {
			names = append(names, fmt.Sprintf("audit.record_values[%d] (%s)", i, cfg.Audit.RecordValueSources[i]))
		}
	}
	return names
}

// writeConfig checks edited, the new text of the configuration at path, as
// every command reads it, and only then replaces the file (through a
// temporary file beside it, so that the file is never half written).
func (e *env) writeConfig(path string, edited []byte) error {
	if _, err := config.Parse(edited, path, filepath.Dir(path)); err != nil {
		return &exitError{code: exitUsage, msg: "nothing was changed: the result would not be valid:\n" + strings.TrimSpace(err.Error())}
	}
	target := path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		target = real // a link to the configuration stays a link
	}
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(target); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), ".airlock.yaml.*")
	if err != nil {
		return usageError("cannot write %s: %v", path, err)
	}
	_, err = tmp.Write(edited)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), target)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return usageError("cannot write %s: %v", path, err)
	}
	return nil
}

// sameFile reports whether a and b name the same file.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
