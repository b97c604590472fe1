package airlock_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// importClass orders the groups of an import block: the standard library,
// then third-party modules, then Airlock's own packages.
func importClass(path string) int {
	switch first, _, _ := strings.Cut(path, "/"); {
	case path == module || strings.HasPrefix(path, module+"/"):
		return 2
	case strings.Contains(first, "."):
		return 1
	}
	return 0
}

// TestImportGroups keeps every import block in three groups, separated by
// a blank line and in this order: the standard library, third-party
// modules, github.com/airlockhq/airlock/... A group may be missing; none
// may mix kinds or come twice.
func TestImportGroups(t *testing.T) {
	names := []string{"the standard library", "third-party modules", module}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		last, lastLine, seen := -1, 0, map[int]bool{}
		for _, spec := range f.Imports {
			class := importClass(strings.Trim(spec.Path.Value, `"`))
			line := fset.Position(spec.Pos()).Line
			newGroup := last < 0 || line > lastLine+1
			switch {
			case !newGroup && class != last:
				t.Errorf("%s:%d: %s is grouped with %s: put it in a group of its own (%s, then %s, then %s)",
					path, line, spec.Path.Value, names[last], names[0], names[1], names[2])
			case newGroup && seen[class]:
				t.Errorf("%s:%d: a second group of %s: imports of one kind go in one group", path, line, names[class])
			case newGroup && class < last:
				t.Errorf("%s:%d: %s come after %s: the order is %s, %s, %s", path, line, names[class], names[last], names[0], names[1], names[2])
			}
			seen[class] = true
			last, lastLine = class, fset.Position(spec.End()).Line
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
