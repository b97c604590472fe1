package config

import (
	"fmt"
	"iter"
	"slices"

	"go.yaml.in/yaml/v3"
)

// Every list of airlock.yaml is read here: list checks that the value is a
// list, and the loops below go over its entries, each with its key path
// ("servers[2]") and line, so that no reader repeats the bookkeeping.

// listItem is one entry of a YAML list.
type listItem struct {
	node *yaml.Node // as written; the readers follow an alias themselves
	path string     // the list's key path and the index, as in servers[2]
	line int
}

// indexed yields the items of a list with their key paths, as in args[2].
func indexed[T any](path string, items []T) iter.Seq2[string, T] {
	return func(yield func(string, T) bool) {
		for i, item := range items {
			if !yield(fmt.Sprintf("%s[%d]", path, i), item) {
				return
			}
		}
	}
}

// list returns the entries of the list at n. It reports a value that is not
// a list, and an empty list when empty says why one is refused ("" when an
// empty list is fine).
func (r *yamlReader) list(n *yaml.Node, path, empty string) ([]listItem, bool) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		r.wrongKind(n, path, "a list such as [a, b]", "a list such as [a, b]")
		return nil, false
	}
	if len(n.Content) == 0 && empty != "" {
		r.errorf(n.Line, path, "%s", empty)
		return nil, false
	}
	items := make([]listItem, 0, len(n.Content))
	for ip, item := range indexed(path, n.Content) {
		items = append(items, listItem{node: item, path: ip, line: resolve(item).Line})
	}
	return items, true
}

// texts yields the entries that are strings, and reports the others.
func (r *yamlReader) texts(items []listItem) iter.Seq2[listItem, string] {
	return func(yield func(listItem, string) bool) {
		for _, it := range items {
			if v, ok := r.text(it.node, it.path); ok && !yield(it, v) {
				return
			}
		}
	}
}

// distinct reads a list of strings of which none may be given twice. check
// returns the form of a value that is kept and compared (lower case, say),
// or a message. The lines of the values kept come with them.
func (r *yamlReader) distinct(items []listItem, check func(string) (string, string)) (vals []string, lines []int) {
	vals = make([]string, 0, len(items))
	seen := make(seenAt[string])
	for it, v := range r.texts(items) {
		kept, msg := check(v)
		if msg != "" {
			r.errorf(it.line, it.path, "%s", msg)
			continue
		}
		if first, dup := seen.again(kept, it.line); dup {
			r.errorf(it.line, it.path, "%s is listed twice (first at line %d)", show(v), first)
			continue
		}
		vals = append(vals, kept)
		lines = append(lines, it.line)
	}
	return vals, lines
}

// checked adapts a check that only returns a message to distinct.
func checked(check func(string) string) func(string) (string, string) {
	return func(v string) (string, string) { return v, check(v) }
}

// mappings yields the entries that are mappings, each as an entry with its
// known keys, and reports the others. Once the loop's body has read an
// entry, the entry says whether that found a problem, and where reading
// then was (entry.ok, entry.end).
func (r *yamlReader) mappings(items []listItem, ks keySet) iter.Seq[*entry] {
	return func(yield func(*entry) bool) {
		for _, it := range items {
			f, ok := r.fields(it.node, it.path, ks)
			if !ok {
				continue
			}
			e, before := newEntry(it, f), len(r.probs.list)
			more := yield(e)
			e.ok, e.end = len(r.probs.list) == before, r.probs.mark()
			if !more {
				return
			}
		}
	}
}

// entry is an entry of a list of mappings as read: where it is, its keys,
// and the marks of the values the checks compare.
type entry struct {
	path string
	line int
	keys map[string]pair
	at   map[string]int // key: the mark where reading met its value
	// ok and end are set by mappings once the entry is read: whether
	// reading its keys found no problem, and the mark after it.
	ok  bool
	end int
}

func newEntry(it listItem, keys map[string]pair) *entry {
	return &entry{path: it.path, line: it.line, keys: keys, at: make(map[string]int)}
}

// note marks where reading is as the place of key's value in e.
func (r *yamlReader) note(e *entry, key string) { e.at[key] = r.probs.mark() }

// require returns the pair at key of e, or reports with msg that it is
// missing.
func (r *yamlReader) require(e *entry, key, msg string) (pair, bool) {
	p, ok := e.keys[key]
	if !ok {
		r.errorf(e.line, e.path+"."+key, "%s", msg)
	}
	return p, ok
}

// keyText reads the string at key of e, if it is there, and checks it; a
// value that passes is noted for the checks. The string comes back, with
// ok set, whenever it could be read, even if check refuses it.
func (r *yamlReader) keyText(e *entry, key string, check func(string) string) (string, bool) {
	p, ok := e.keys[key]
	if !ok {
		return "", false
	}
	path := e.path + "." + key
	v, ok := r.text(p.val, path)
	if !ok {
		return "", false
	}
	if msg := check(v); msg != "" {
		r.errorf(p.line, path, "%s", msg)
	} else {
		r.note(e, key)
	}
	return v, true
}

// entryOf is an entry with the value read from it.
type entryOf[T any] struct {
	*entry
	val T
}

// readEntries reads the list of mappings at n, each entry by read.
func readEntries[T any](r *yamlReader, n *yaml.Node, path, empty string, ks keySet, read func(*entry) T) []entryOf[T] {
	items, ok := r.list(n, path, empty)
	if !ok {
		return nil
	}
	var out []entryOf[T]
	for e := range r.mappings(items, ks) {
		out = append(out, entryOf[T]{e, read(e)})
	}
	return out
}

// okValues returns the values of the entries read without a problem.
func okValues[T any](entries []entryOf[T]) []T {
	var out []T
	for _, e := range entries {
		if e.ok {
			out = append(out, e.val)
		}
	}
	return out
}

// seenAt remembers where each key of a list or a mapping was first given
// (a line, or an offset), to report the ones given twice.
type seenAt[K comparable] map[K]int

// again returns where key was first given, or remembers at.
func (s seenAt[K]) again(key K, at int) (first int, dup bool) {
	if first, dup := s[key]; dup {
		return first, true
	}
	s[key] = at
	return 0, false
}

// starAlone reports a list in which "*" stands with other entries; what
// says what "*" does there ("allows", "records"), and noun what the list
// lists ("tool", "resource", "prompt").
func (r *yamlReader) starAlone(n *yaml.Node, path string, list []string, what, noun string) {
	if len(list) > 1 && slices.Contains(list, "*") {
		r.errorf(resolve(n).Line, path, `"*" %s every %s and must be alone: write ["*"] or list the %ss`, what, noun, noun)
	}
}
