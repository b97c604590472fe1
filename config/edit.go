package config

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Editing airlock.yaml for `airlock add` and `airlock remove`: the YAML is
// read into nodes only to find where the servers: list and its entries are;
// the change itself is made to the lines of the file, so that every other
// line (comments, blank lines, quoting, flow or block style) stays exactly
// as the person wrote it. The caller validates the result with Parse before
// writing anything.

// A ServerEntry is a server for [AddServer] to add: a local one started
// with Command and Args, or a remote one reached at URL.
type ServerEntry struct {
	ID      string
	Command string
	Args    []string
	URL     string
}

// AddServer returns data, an airlock.yaml (or nothing, for a new file), with
// entry added at the end of its servers: list (made when there is none),
// with allowed_tools: [] so that it exposes nothing until a person allows
// its tools. A remote server gets the host of its URL as allowed_hosts.
// A file whose lines all end in CRLF keeps its line ends.
func AddServer(data []byte, entry ServerEntry) ([]byte, error) {
	crlf := bytes.Count(data, []byte("\r\n"))
	if crlf == 0 || crlf != bytes.Count(data, []byte("\n")) {
		return addServer(data, entry)
	}
	edited, err := addServer(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), entry)
	if err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(edited, []byte("\n"), []byte("\r\n")), nil
}

func addServer(data []byte, entry ServerEntry) ([]byte, error) {
	text, err := entryYAML(entry)
	if err != nil {
		return nil, err
	}
	top, err := topMapping(data)
	if err != nil {
		return nil, err
	}
	lines := splitLines(data)
	key, val := servers(top)
	switch {
	case key == nil:
		// No servers: key (or no file): a new list at the end.
		if n := len(lines); n > 0 && !strings.HasSuffix(lines[n-1], "\n") {
			lines[n-1] += "\n"
		}
		return []byte(strings.Join(lines, "") + "servers:\n" + indent(text, 2)), nil
	case val.Kind == yaml.ScalarNode && val.Tag == "!!null":
		// servers: with nothing after it.
		at := endOfBlock(lines, key.Line, nextKeyLine(top, key.Line))
		return splice(lines, at, at, indent(text, key.Column+1)), nil
	case val.Kind == yaml.SequenceNode && val.Style&yaml.FlowStyle != 0 && len(val.Content) == 0 && val.Line == key.Line:
		// servers: [] becomes a block list.
		line := lines[key.Line-1]
		head := strings.TrimRight(line[:val.Column-1], " \t")
		rest := strings.TrimSpace(line[val.Column-1:])
		rest = strings.TrimSpace(strings.TrimPrefix(rest, "[]"))
		if rest != "" && !strings.HasPrefix(rest, "#") {
			return nil, errors.New("servers: [] is followed by more on its line: put the list's entries on lines of their own")
		}
		if rest != "" {
			head += " " + rest
		}
		return splice(lines, key.Line-1, key.Line, head+"\n"+indent(text, key.Column+1)), nil
	case val.Kind != yaml.SequenceNode:
		return nil, errors.New("servers: is not a list")
	case val.Style&yaml.FlowStyle != 0:
		return nil, errors.New("servers: is written as a flow list ([…]): write it one entry per line (- id: …), or add the server by hand")
	}
	dash, err := dashColumn(lines, val.Content[0])
	if err != nil {
		return nil, err
	}
	at := endOfBlock(lines, key.Line, nextKeyLine(top, key.Line))
	return splice(lines, at, at, indent(text, dash-1)), nil
}

// RemoveServer returns data, an airlock.yaml, without the entry of its
// servers: list whose id is id, and without the comment lines right above
// that entry (they describe it). Removing the last entry leaves
// servers: []. It fails when no entry has that id; whether anything else
// still names the server, the caller checks (Parse does).
func RemoveServer(data []byte, id string) ([]byte, error) {
	top, err := topMapping(data)
	if err != nil {
		return nil, err
	}
	key, val := servers(top)
	if key == nil || val.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("it has no servers: list with a server %q", id)
	}
	if val.Style&yaml.FlowStyle != 0 {
		return nil, errors.New("servers: is written as a flow list ([…]): remove the server by hand")
	}
	i := entryIndex(val, id)
	if i < 0 {
		return nil, fmt.Errorf("servers: has no server %q", id)
	}
	lines := splitLines(data)
	start, err := entryStart(lines, val.Content[i])
	if err != nil {
		return nil, err
	}
	var end int // the line after the entry's last, 0-based
	if i+1 < len(val.Content) {
		next, err := entryStart(lines, val.Content[i+1])
		if err != nil {
			return nil, err
		}
		end = lastContent(lines, start, next)
	} else {
		end = endOfBlock(lines, key.Line, nextKeyLine(top, key.Line))
	}
	if len(val.Content) == 1 {
		// The list's only entry: servers: [] is left, for Parse to judge
		// (an import: may provide the servers).
		line := lines[key.Line-1]
		return splice(lines, key.Line-1, end, strings.TrimRight(line[:key.Column-1], " \t")+"servers: []\n"), nil
	}
	return splice(lines, start, end, ""), nil
}

// entryYAML is entry as one item of a block list, at the left margin.
func entryYAML(e ServerEntry) (string, error) {
	m := &yaml.Node{Kind: yaml.MappingNode}
	add := func(key string, val *yaml.Node) {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, val)
	}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	list := func(items ...string) *yaml.Node {
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, s := range items {
			n.Content = append(n.Content, str(s))
		}
		return n
	}
	add("id", str(e.ID))
	switch {
	case e.URL != "" && e.Command != "":
		return "", errors.New("give a command or a URL, not both")
	case e.URL != "":
		u, err := url.Parse(e.URL)
		if err != nil || u.Hostname() == "" {
			return "", fmt.Errorf("%s is not a URL such as https://mcp.example.com/mcp", show(e.URL))
		}
		add("transport", str("http"))
		add("url", str(e.URL))
		add("allowed_hosts", list(u.Hostname()))
	case e.Command != "":
		add("command", str(e.Command))
		if len(e.Args) > 0 {
			add("args", list(e.Args...))
		}
	default:
		return "", errors.New("give the command that starts the server, or its URL")
	}
	add("allowed_tools", list())
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{m}}); err != nil {
		return "", err
	}
	return b.String(), enc.Close()
}

// topMapping returns the top-level mapping of data, or nil for a file
// with no content.
func topMapping(data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("it is not valid YAML: %v", err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode || top.Style&yaml.FlowStyle != 0 {
		return nil, errors.New("its top level is not a block of key: value lines")
	}
	return top, nil
}

// servers returns the servers: key of top and its value, or nils.
func servers(top *yaml.Node) (key, val *yaml.Node) {
	if top == nil {
		return nil, nil
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "servers" {
			return top.Content[i], top.Content[i+1]
		}
	}
	return nil, nil
}

// entryIndex is the index of the entry of list whose id is id, or -1.
func entryIndex(list *yaml.Node, id string) int {
	for i, item := range list.Content {
		if item.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(item.Content); j += 2 {
			if item.Content[j].Value == "id" && item.Content[j+1].Value == id {
				return i
			}
		}
	}
	return -1
}

// nextKeyLine is the line of the first top-level key after line, or 0.
func nextKeyLine(top *yaml.Node, line int) int {
	next := 0
	for i := 0; i < len(top.Content); i += 2 {
		if l := top.Content[i].Line; l > line && (next == 0 || l < next) {
			next = l
		}
	}
	return next
}

// endOfBlock returns the 0-based index of the line after the last line of
// content of the value of the key at line keyLine, which ends before the
// line next (or at the end, for 0): blank lines and comments before the
// next key are that key's.
func endOfBlock(lines []string, keyLine, next int) int {
	if next == 0 {
		next = len(lines) + 1
	}
	return lastContent(lines, keyLine-1, next-1)
}

// lastContent returns the index after the last line in lines[from:to] that
// is neither blank nor a comment, or from+1 when only the first is.
func lastContent(lines []string, from, to int) int {
	for i := to - 1; i > from; i-- {
		if t := strings.TrimSpace(lines[i]); t != "" && !strings.HasPrefix(t, "#") {
			return i + 1
		}
	}
	return from + 1
}

// dashColumn returns the 1-based column of the "-" that starts item.
func dashColumn(lines []string, item *yaml.Node) (int, error) {
	line := lines[item.Line-1]
	if c := strings.LastIndexByte(line[:min(item.Column-1, len(line))], '-'); c >= 0 && strings.TrimSpace(line[:c]) == "" {
		return c + 1, nil
	}
	return 0, errors.New("an entry of servers: does not start its line with - id: …: edit it by hand")
}

// entryStart returns the 0-based line where item starts: its "-", or the
// comment lines right above it at the same indentation.
func entryStart(lines []string, item *yaml.Node) (int, error) {
	dash, err := dashColumn(lines, item)
	if err != nil {
		return 0, err
	}
	start := item.Line - 1
	for start > 0 {
		prev := lines[start-1]
		if t := strings.TrimLeft(prev, " \t"); !strings.HasPrefix(t, "#") || len(prev)-len(t) != dash-1 {
			break
		}
		start--
	}
	return start, nil
}

// splitLines splits data into lines, each with its line break.
func splitLines(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// splice replaces lines[from:to] with text.
func splice(lines []string, from, to int, text string) []byte {
	var b strings.Builder
	for _, l := range lines[:from] {
		b.WriteString(l)
	}
	if from > 0 && !strings.HasSuffix(lines[from-1], "\n") {
		b.WriteString("\n")
	}
	b.WriteString(text)
	for _, l := range lines[to:] {
		b.WriteString(l)
	}
	return []byte(b.String())
}

// indent puts n spaces before every line of text.
func indent(text string, n int) string {
	pad := strings.Repeat(" ", n)
	lines := splitLines([]byte(text))
	for i, l := range lines {
		lines[i] = pad + l
	}
	return strings.Join(lines, "")
}
