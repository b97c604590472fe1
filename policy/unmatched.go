package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/airlockhq/airlock/config"
)

// A Warning is a configuration entry that names a tool no server has: a
// misspelt deny that never matches, a classification that classifies
// nothing. The configuration is valid; what it says just has no effect.
type Warning struct {
	// Entry is the entry, such as "policy.rules[2]".
	Entry string `json:"entry"`
	// Source is where it was written, such as "airlock.yaml:14", or "".
	Source string `json:"source,omitempty"`
	// Msg says what is wrong, naming the entry and its source, with a
	// "did you mean" when a tool's name is close.
	Msg string `json:"message"`
}

// A Catalog is what discovery found, for [Policy.Unmatched] to check the
// configuration against.
type Catalog struct {
	// Ready are the servers that answered discovery: their tools are
	// known, including when there are none.
	Ready []string
	// NotReady are the other configured servers (failed, starting, waiting
	// for a login): entries about them cannot be checked.
	NotReady []string
	// Prefixes maps a server's id to what its tools' local names start
	// with (config.Server.LocalPrefix). A server not in it has the
	// default, its id and "__".
	Prefixes map[string]string
	// Tools are the tools of the ready servers.
	Tools []CatalogTool
}

// A CatalogTool is one tool of a Catalog: its server, its local name and
// the server's own name for it.
type CatalogTool struct {
	Server, Name, Remote string
}

// Unmatched reports the entries of the policy and of audit.record_values
// that name no tool of a ready server:
//
//   - a policy.tools entry whose server is ready and has no such tool;
//   - a policy.rules entry with an exact tool name (no *) that no tool of
//     the ready servers its server glob matches has, as a local or remote
//     name;
//   - a policy.rules entry with a tool glob and an exact server that is
//     ready, has tools, and has none the glob matches;
//   - an audit.record_values entry (other than "*") that is no local name
//     of the catalog, when the server its name points at is ready or
//     unknown.
//
// Entries about servers that are not ready are not reported: their tools
// are unknown. Nor are rules about resources or prompts, which name no
// tool.
func (p *Policy) Unmatched(cat Catalog, audit config.Audit) []Warning {
	ready := make(map[string]bool, len(cat.Ready))
	for _, id := range cat.Ready {
		ready[id] = true
	}
	byServer := make(map[string][]CatalogTool)
	for _, t := range cat.Tools {
		byServer[t.Server] = append(byServer[t.Server], t)
	}
	var out []Warning
	warn := func(at entry, format string, args ...any) {
		out = append(out, Warning{Entry: at.name, Source: at.source, Msg: at.String() + ": " + fmt.Sprintf(format, args...)})
	}
	if p != nil {
		for _, k := range p.classOrder {
			c := p.classes[k]
			if !ready[k.server] || slices.ContainsFunc(byServer[k.server], func(t CatalogTool) bool { return t.Remote == k.tool }) {
				continue
			}
			hint := didYouMean(k.tool, remoteNames(byServer[k.server]))
			if i := slices.IndexFunc(byServer[k.server], func(t CatalogTool) bool { return t.Name == k.tool }); i >= 0 {
				// The catalog lists it, under its local name: policy.tools
				// names the server's own.
				hint = fmt.Sprintf("; %q is the tool's local name: policy.tools names the server's own, %q",
					k.tool, byServer[k.server][i].Remote)
			}
			warn(c.at, "server %s has no tool %q in the catalog, so this entry classifies nothing%s", k.server, k.tool, hint)
		}
		for _, r := range p.rules {
			if w, ok := r.unmatched(cat, byServer); ok {
				warn(r.at, "%s", w)
			}
		}
	}
	for i, name := range audit.RecordValues {
		if name == "*" || slices.ContainsFunc(cat.Tools, func(t CatalogTool) bool { return t.Name == name }) {
			continue
		}
		if slices.ContainsFunc(cat.NotReady, func(id string) bool { return strings.HasPrefix(name, cat.prefix(id)) }) {
			continue
		}
		at := entry{name: fmt.Sprintf("audit.record_values[%d]", i)}
		if i < len(audit.RecordValueSources) {
			at.source = audit.RecordValueSources[i]
		}
		hint := didYouMean(name, localNames(cat.Tools))
		if i := slices.IndexFunc(cat.Tools, func(t CatalogTool) bool { return t.Remote == name }); i >= 0 {
			t := cat.Tools[i]
			hint = fmt.Sprintf("; %q is what server %s calls it: its local name is %q", name, t.Server, t.Name)
		}
		warn(at, "no tool named %q in the catalog, so no values are recorded for it%s", name, hint)
	}
	return out
}

// prefix is what the local names of server id's tools start with.
func (c Catalog) prefix(id string) string {
	if p, ok := c.Prefixes[id]; ok {
		return p
	}
	return id + "__"
}

// unmatched says why the rule can never apply to a tool of the catalog,
// if it can be told.
func (r *rule) unmatched(cat Catalog, byServer map[string][]CatalogTool) (string, bool) {
	if r.kind != KindTool {
		// A rule about resources or prompts names no tool.
		return "", false
	}
	var servers, unchecked []string
	for _, id := range cat.Ready {
		if r.server.re.MatchString(id) {
			servers = append(servers, id)
		}
	}
	for _, id := range cat.NotReady {
		if r.server.re.MatchString(id) {
			unchecked = append(unchecked, id)
		}
	}
	var tools []CatalogTool
	for _, id := range servers {
		tools = append(tools, byServer[id]...)
	}
	if slices.ContainsFunc(tools, func(t CatalogTool) bool { return r.tool.re.MatchString(t.Name) || r.tool.re.MatchString(t.Remote) }) {
		return "", false
	}
	if r.tool.spec.exact {
		if len(servers) == 0 {
			return "", false // only servers whose tools are unknown
		}
		where := "server " + servers[0]
		if len(servers) > 1 || !r.server.spec.exact {
			where = "the ready servers it names (" + strings.Join(servers, ", ") + ")"
		}
		msg := fmt.Sprintf("no tool named %q on %s, so this rule never applies%s",
			r.tool.pattern, where, didYouMean(r.tool.pattern, append(localNames(tools), remoteNames(tools)...)))
		if len(unchecked) > 0 {
			msg += fmt.Sprintf(" (not checked: %s, not ready)", strings.Join(unchecked, ", "))
		}
		return msg, true
	}
	// A pattern over every server (delete_* on *) is a guard against what
	// may come; a pattern for one server that has tools, and matches none
	// of them, is more likely a slip.
	if !r.server.spec.exact || len(servers) != 1 || len(tools) == 0 {
		return "", false
	}
	return fmt.Sprintf("%q matches none of the %d tools of server %s, so this rule never applies", r.tool.pattern, len(tools), servers[0]), true
}

func didYouMean(name string, candidates []string) string {
	if s := config.Suggest(name, candidates); s != "" {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return ""
}

func localNames(tools []CatalogTool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

func remoteNames(tools []CatalogTool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Remote
	}
	return out
}
