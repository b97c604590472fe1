package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The YAML reader walks yaml.Node trees by hand rather than decoding into
// structs, so that every message can name the line and the key path.

// yamlReader reads one YAML file and collects its problems.
type yamlReader struct {
	file  string // name used in messages
	dir   string // absolute directory relative paths resolve against
	probs problems
	// lookupEnv expands ${VAR} in tenancy: and in imported mcpServers
	// files, and gives the default user.
	lookupEnv func(string) (string, bool)
	// urls wait for the development flag, which may come late in the file.
	urls []urlCheck
	// notices are what reading found worth telling that is no error.
	notices []string
}

func (r *yamlReader) errorf(line int, path, format string, args ...any) {
	r.probs.add(line, &Error{File: r.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// errorAt reports a problem that a check found once reading was done, at
// the mark where reading met what it checked.
func (r *yamlReader) errorAt(mark, line int, path, format string, args ...any) {
	r.probs.addAt(mark, line, &Error{File: r.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// wrongKind reports a value that is not a want ("a list such as [a, b]"),
// or none at all, in which case the message says to give one (give).
func (r *yamlReader) wrongKind(n *yaml.Node, path, want, give string) {
	if isNull(n) {
		r.errorf(n.Line, path, "has no value: give %s, or remove the key", give)
	} else {
		r.errorf(n.Line, path, "must be %s, not %s", want, kindName(n))
	}
}

var yamlLineError = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// decodeYAML parses data as exactly one YAML document whose top level is a
// mapping.
func decodeYAML(data []byte, file string) (*yaml.Node, *Error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &Error{File: file, Msg: "is empty: add a servers: list (see the documentation for an example)"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: file, Msg: "has no content, only comments: add a servers: list"}
		}
		return nil, yamlSyntaxError(err, data, file)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, yamlSyntaxError(err, data, file)
	default:
		line := extra.Line
		if len(extra.Content) > 0 {
			line = extra.Content[0].Line
		}
		return nil, &Error{File: file, Line: line, Msg: "a second YAML document starts here: keep everything in one document (remove the ---)"}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &Error{File: file, Msg: "is not a YAML document"}
	}
	root := resolve(doc.Content[0])
	switch {
	case isNull(root):
		return nil, &Error{File: file, Line: root.Line, Msg: "has no content: add a servers: list"}
	case root.Kind != yaml.MappingNode:
		return nil, &Error{File: file, Line: root.Line, Msg: fmt.Sprintf("the top level must be a mapping of keys such as servers:, not %s", kindName(root))}
	}
	return root, nil
}

func yamlSyntaxError(err error, data []byte, file string) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLineError.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	hint := ""
	switch msg {
	case "did not find expected key", "did not find expected '-' indicator", "mapping values are not allowed in this context":
		hint = " (check the indentation of this line)"
	}
	line = problemLine(data, line, msg)
	if tabIndented(data, line) {
		// The parser's words for it ("found character that cannot start
		// any token", say) do not name the tab nobody sees.
		return &Error{File: file, Line: line, Msg: "tabs are not allowed for indentation in YAML; use spaces"}
	}
	return &Error{File: file, Line: line, Msg: "invalid YAML: " + msg + hint}
}

// tabIndented reports whether line n (counted from 1) of data has a tab
// in its indentation: the blanks before its first other character.
func tabIndented(data []byte, n int) bool {
	if n < 1 {
		return false
	}
	for i, l := range bytes.Split(data, []byte("\n")) {
		if i == n-1 {
			indent := l[:len(l)-len(bytes.TrimLeft(l, " \t"))]
			return bytes.IndexByte(indent, '\t') >= 0
		}
	}
	return false
}

// problemLine finds the line of a syntax error. The YAML parser reports
// where the enclosing block starts, which for a mis-indented key can be
// many lines above the mistake; the first prefix of the file that fails
// with the same message ends at the line to fix.
func problemLine(data []byte, reported int, msg string) int {
	// Bounds that keep a huge file from costing seconds.
	const maxLines, maxBytes = 1000, 8 << 20
	ends := make([]int, 0, 64)
	for i, c := range data {
		if c == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	first, scanned := max(1, reported-1), 0
	for k := first; k <= len(ends) && k < first+maxLines; k++ {
		if scanned += ends[k-1]; scanned > maxBytes {
			break
		}
		var n yaml.Node
		err := yaml.Unmarshal(data[:ends[k-1]], &n)
		if err == nil {
			continue
		}
		got := err.Error()
		if m := yamlLineError.FindStringSubmatch(got); m != nil {
			got = m[2]
		} else {
			got = strings.TrimPrefix(got, "yaml: ")
		}
		if got == msg {
			return k
		}
	}
	return reported
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; i < 8 && n.Kind == yaml.AliasNode && n.Alias != nil; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// kindName describes a node for "must be X, not Y" messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "empty"
		case "!!bool":
			return "true/false"
		case "!!int", "!!float":
			return "a number"
		}
		return "a string"
	}
	return "an unsupported YAML node"
}

// pair is one key and value of a mapping.
type pair struct {
	key  string
	line int // line of the key
	val  *yaml.Node
}

// pairs returns the entries of a mapping. It reports non-string keys,
// merge keys and duplicates, and leaves those entries out.
func (r *yamlReader) pairs(n *yaml.Node, path string) ([]pair, bool) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		r.wrongKind(n, path, "a mapping (key: value lines)", "key: value lines")
		return nil, false
	}
	var out []pair
	seen := make(seenAt[string])
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind == yaml.ScalarNode && (k.ShortTag() == "!!merge" || k.Value == "<<" && k.Style == 0) {
			r.errorf(k.Line, path, "merge keys (<<) are not supported: write the keys out")
			continue
		}
		if k.Kind != yaml.ScalarNode || isNull(k) {
			r.errorf(k.Line, path, "keys must be strings, not %s", kindName(k))
			continue
		}
		if first, dup := seen.again(k.Value, k.Line); dup {
			r.errorf(k.Line, joinPath(path, k.Value), "duplicate key (first set at line %d)", first)
			continue
		}
		out = append(out, pair{key: k.Value, line: k.Line, val: v})
	}
	return out, true
}

// fields returns the known keys of a mapping and reports all others.
func (r *yamlReader) fields(n *yaml.Node, path string, ks keySet) (map[string]pair, bool) {
	ps, ok := r.pairs(n, path)
	if !ok {
		return nil, false
	}
	out := make(map[string]pair, len(ps))
	for _, p := range ps {
		if !slices.Contains(ks.known, p.key) {
			r.errorf(p.line, joinPath(path, p.key), "%s", ks.unknownKey(p.key))
			continue
		}
		out[p.key] = p
	}
	return out, true
}

// text returns the string form of a scalar: YAML numbers, booleans and
// dates are taken as written, so `args: [--port, 8080]` works.
func (r *yamlReader) text(n *yaml.Node, path string) (string, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode {
		r.errorf(n.Line, path, "must be a string, not %s", kindName(n))
		return "", false
	}
	switch tag := n.ShortTag(); tag {
	case "!!str", "!!int", "!!float", "!!bool", "!!timestamp":
		return n.Value, true
	case "!!null":
		r.errorf(n.Line, path, "has no value: give one, or remove the key")
	default:
		r.errorf(n.Line, path, "must be a plain string (the tag %s is not supported)", tag)
	}
	return "", false
}

func (r *yamlReader) boolean(n *yaml.Node, path string) (bool, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		r.errorf(n.Line, path, "must be true or false")
		return false, false
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		r.errorf(n.Line, path, "must be true or false")
		return false, false
	}
	return b, true
}

// integer returns a whole number in [lo, hi]; unit names the quantity in
// the message.
func (r *yamlReader) integer(n *yaml.Node, path string, lo, hi int64, unit string) (int, bool) {
	n = resolve(n)
	bad := func() (int, bool) {
		r.errorf(n.Line, path, "must be a whole number of %s from %d to %d", unit, lo, hi)
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return bad()
	}
	var v int64
	if err := n.Decode(&v); err != nil || v < lo || v > hi {
		return bad()
	}
	return int(v), true
}

// timeout returns a duration for a *_timeout key.
func (r *yamlReader) timeout(n *yaml.Node, path string) (time.Duration, bool) {
	s, ok := r.text(n, path)
	if !ok {
		return 0, false
	}
	d, msg := parseTimeout(s)
	if msg != "" {
		r.errorf(resolve(n).Line, path, "%s", msg)
		return 0, false
	}
	return d, true
}
