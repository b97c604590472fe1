package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxDirEntries bounds the entries one list_dir call returns.
const maxDirEntries = 1000

// readDirBatch is how many entries are read from a directory at a time, so
// that a huge directory never sits in memory whole.
const readDirBatch = 512

type listDirInput struct {
	Path    string `json:"path,omitempty" jsonschema:"directory path relative to the workspace root, with / as separator"`
	Pattern string `json:"pattern,omitempty" jsonschema:"a glob in Go path.Match syntax (* any run of characters, ? one character, [a-z] a class, \\ escapes) that entry names must match; matched against the name only, never a path"`
}

type dirEntry struct {
	Name string `json:"name" jsonschema:"the entry's name"`
	Type string `json:"type" jsonschema:"file, dir, symlink (reported as such, never followed) or other (FIFO, socket, device)"`
	Size int64  `json:"size" jsonschema:"size in bytes for a file, 0 for anything else"`
}

type listDirOutput struct {
	Path      string     `json:"path" jsonschema:"the directory listed, cleaned, relative to the workspace root"`
	Entries   []dirEntry `json:"entries" jsonschema:"the matching entries sorted by name (byte order)"`
	Total     int        `json:"total" jsonschema:"how many entries matched, including any left out"`
	Truncated bool       `json:"truncated" jsonschema:"true when matching entries were left out; narrow them with pattern"`
}

// Entry types in list_dir's output.
const (
	typeFile    = "file"
	typeDir     = "dir"
	typeSymlink = "symlink"
	typeOther   = "other"
)

func listDirInputSchema() *jsonschema.Schema {
	s := inferSchema[listDirInput]("list_dir input schema")
	s.Properties["path"].Default = json.RawMessage(`"."`)
	return s
}

func listDirOutputSchema() *jsonschema.Schema {
	s := inferSchema[listDirOutput]("list_dir output schema")
	entries := s.Properties["entries"]
	boundArray(entries, maxDirEntries)
	entries.Items.Properties["type"].Enum = []any{typeFile, typeDir, typeSymlink, typeOther}
	return s
}

func (s *Server) addListDir() {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "list_dir",
		Title: "List directory",
		Description: fmt.Sprintf("List a directory in the workspace: each entry's name, type (file, dir, symlink, other) "+
			"and size, sorted by name, at most %d entries (total and truncated say when more matched). "+
			"path is relative to the workspace root (default \".\"). pattern, if given, is a glob in Go path.Match "+
			"syntax matched against entry names only (for example \"*.go\" or \"test_?.py\"). Symbolic links in the "+
			"listing are reported as symlink and never followed. Refused: paths that are not a directory inside the "+
			"workspace, with the same path rules as read_file. Left out of the listing: %s.", maxDirEntries, protectedRule),
		InputSchema:  listDirInputSchema(),
		OutputSchema: listDirOutputSchema(),
		Annotations:  readOnly("List directory"),
	}, s.listDir)
}

var errGlobSlash = errors.New(`pattern contains "/"; it is matched against entry names, which never do`)

// listDir is the list_dir handler. An error it returns becomes a tool
// error result, so every error is written for the model.
func (s *Server) listDir(ctx context.Context, _ *mcp.CallToolRequest, in listDirInput) (*mcp.CallToolResult, listDirOutput, error) {
	shown, name, err := startPath(in.Path)
	if err != nil {
		return nil, listDirOutput{}, err
	}
	if in.Pattern != "" {
		if _, err := path.Match(in.Pattern, ""); err != nil {
			return nil, listDirOutput{}, fmt.Errorf(`pattern %q is not a valid glob (Go path.Match syntax: * ? [a-z] and \ to escape)`, in.Pattern)
		}
		if strings.Contains(in.Pattern, "/") {
			return nil, listDirOutput{}, errGlobSlash
		}
	}

	// A look first gives a clear message for a file; the open checks again.
	g := s.newGuard()
	real, fi, err := g.resolve(shown, name)
	if err != nil {
		return nil, listDirOutput{}, err
	}
	if !fi.IsDir() {
		return nil, listDirOutput{}, refuse(shown, "not a directory")
	}
	f, err := s.openDir(shown, real)
	if err != nil {
		return nil, listDirOutput{}, err
	}
	defer f.Close()
	if opened, err := f.Stat(); err != nil || !os.SameFile(opened, fi) {
		return nil, listDirOutput{}, changed(shown)
	}

	// Keep the smallest names seen so far, trimming now and then, so the
	// memory used stays bounded however large the directory is.
	byName := func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) }
	var kept []fs.DirEntry
	total := 0
	err = readDirBatches(ctx, f, func(batch []fs.DirEntry) bool {
		for _, de := range batch {
			if in.Pattern != "" {
				if ok, _ := path.Match(in.Pattern, de.Name()); !ok {
					continue
				}
			}
			// Airlock's own files are not there as far as the model is
			// concerned: naming them is refused anyway.
			if g.hides(real, de) {
				continue
			}
			total++
			kept = append(kept, de)
			if len(kept) >= 2*maxDirEntries {
				slices.SortFunc(kept, byName)
				kept = kept[:maxDirEntries]
			}
		}
		return true
	})
	if canceled(err) {
		return nil, listDirOutput{}, err
	}
	if err != nil {
		s.logger.Warn("list_dir: read failed", "path", shown, "error", err)
		return nil, listDirOutput{}, refuse(shown, "cannot be read")
	}
	slices.SortFunc(kept, byName)
	out := listDirOutput{Path: filepath.ToSlash(name), Entries: []dirEntry{}, Total: total}
	if len(kept) > maxDirEntries {
		kept = kept[:maxDirEntries]
		out.Truncated = true
	}
	for _, de := range kept {
		out.Entries = append(out.Entries, entryOf(de))
	}
	return nil, out, nil
}

// entryOf describes de as list_dir reports it. The type is the entry's own
// (as lstat sees it), so a symbolic link is never followed.
func entryOf(de fs.DirEntry) dirEntry {
	e := dirEntry{Name: de.Name()}
	switch t := de.Type(); {
	case t.IsRegular():
		e.Type = typeFile
		// Entries read from a directory opened in an os.Root carry the
		// information lstat gave, so this reads no path again.
		if fi, err := de.Info(); err == nil {
			e.Size = fi.Size()
		}
	case t.IsDir():
		e.Type = typeDir
	case t&fs.ModeSymlink != 0:
		e.Type = typeSymlink
	default:
		e.Type = typeOther
	}
	return e
}
