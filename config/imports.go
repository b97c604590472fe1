package config

import (
	"io"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

var importKeys = keySet{known: []string{"file", "allowed_tools"}}

// importEntry is one item of import:, before its file is read.
type importEntry struct {
	path  string // import[i]
	line  int
	file  string // as written
	tools []pair // allowed_tools entries, in file order
	lists map[string][]string
}

// imported is an import: entry whose file was read without a problem,
// waiting for checkImports.
type imported struct {
	entry importEntry
	file  *mcpFile
	at    int // the mark after the file was read
}

// imports reads every import: entry and its file. Problems inside an
// imported file keep that file's name and line, and are ordered as if they
// sat on the import entry's line.
func (r *yamlReader) imports(p pair) []imported {
	items, ok := r.list(p.val, "import", "")
	if !ok {
		return nil
	}
	var out []imported
	seen := make(seenAt[string])
	for _, it := range items {
		e, ok := r.importEntry(it)
		if !ok {
			continue
		}
		abs := e.file
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(r.dir, abs)
		}
		abs = filepath.Clean(abs)
		if first, dup := seen.again(abs, e.line); dup {
			r.errorf(e.line, e.path, "%s is already imported at line %d", show(e.file), first)
			continue
		}
		if f, ok := r.importFile(e, abs); ok {
			out = append(out, imported{entry: e, file: f, at: r.probs.mark()})
		}
	}
	return out
}

func (r *yamlReader) importEntry(it listItem) (importEntry, bool) {
	n, path := resolve(it.node), it.path
	e := importEntry{path: path, line: n.Line}
	var ok bool
	switch n.Kind {
	case yaml.ScalarNode:
		if e.file, ok = r.text(n, path); !ok {
			return e, false
		}
	case yaml.MappingNode:
		f, _ := r.fields(n, path, importKeys)
		fp, has := f["file"]
		if !has {
			r.errorf(n.Line, path+".file", "is required: give the path of an mcpServers JSON file")
			return e, false
		}
		if e.file, ok = r.text(fp.val, path+".file"); !ok {
			return e, false
		}
		if tp, has := f["allowed_tools"]; has {
			if e.tools, ok = r.pairs(tp.val, path+".allowed_tools"); !ok {
				return e, false
			}
			e.lists = make(map[string][]string, len(e.tools))
			for _, t := range e.tools {
				e.lists[t.key] = r.toolList(t.val, joinPath(path+".allowed_tools", t.key))
			}
		}
	default:
		r.errorf(n.Line, path, "must be a file name or a mapping with file: and allowed_tools:, not %s", kindName(n))
		return e, false
	}
	if e.file == "" {
		r.errorf(n.Line, path, "the file name must not be empty")
		return e, false
	}
	if msg := checkString(e.file); msg != "" {
		r.errorf(n.Line, path, "%s", msg)
		return e, false
	}
	return e, true
}

// importFile reads the mcpServers file of one entry.
func (r *yamlReader) importFile(e importEntry, abs string) (*mcpFile, bool) {
	data, msg := readRegularFile(abs)
	if msg != "" {
		r.errorf(e.line, e.path, "cannot import %s: it %s", show(e.file), msg)
		return nil, false
	}
	name := e.file
	if !filepath.IsAbs(name) {
		// Name the file the way the user reaches it from where they ran
		// airlock, as they did for this file.
		name = filepath.Join(filepath.Dir(r.file), name)
	}
	f, probs := readMCPServers(data, name, filepath.Dir(abs), r.lookupEnv)
	for _, c := range f.urls {
		c.order = e.line
		r.urls = append(r.urls, c)
	}
	for _, p := range probs.list {
		r.probs.add(e.line, p.err)
	}
	return f, probs.empty()
}

// readRegularFile reads a file of at most maxFileBytes. It refuses
// anything but a regular file, so a device or a pipe cannot stall loading.
func readRegularFile(path string) ([]byte, string) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, describeFSError(err)
	}
	if !info.Mode().IsRegular() {
		return nil, "is not a regular file"
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, describeFSError(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, describeFSError(err)
	}
	if len(data) > maxFileBytes {
		return nil, "is larger than 4 MiB"
	}
	return data, ""
}
