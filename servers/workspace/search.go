package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of one search_text call, besides Options.MaxSearchBytes.
const (
	maxMatches        = 200     // matches returned
	maxMatchText      = 300     // bytes of a matching line shown
	maxPatternLength  = 1000    // characters in a pattern
	defaultMaxEntries = 100_000 // directory entries visited
)

type searchTextInput struct {
	Pattern string `json:"pattern" jsonschema:"the text to find within one line; a regular expression in RE2 syntax when regex is true"`
	Path    string `json:"path,omitempty" jsonschema:"file or directory to search, relative to the workspace root, with / as separator"`
	Regex   bool   `json:"regex,omitempty" jsonschema:"true: pattern is a regular expression in RE2 syntax (Go regexp); false: pattern is literal text"`
}

type searchMatch struct {
	Path string `json:"path" jsonschema:"the file, relative to the workspace root"`
	Line int    `json:"line" jsonschema:"the 1-based line number"`
	Text string `json:"text" jsonschema:"the line without its line ending; a long line is cut to a window around the match, marked with …"`
}

type searchTextOutput struct {
	Matches       []searchMatch `json:"matches" jsonschema:"the matching lines, at most one per line, in path order"`
	Truncated     bool          `json:"truncated" jsonschema:"true when the search stopped early, so more matches may exist; note says why"`
	Note          string        `json:"note,omitempty" jsonschema:"why the search stopped early and how to see the rest"`
	FilesSearched int           `json:"files_searched" jsonschema:"how many files were searched"`
	FilesSkipped  int           `json:"files_skipped" jsonschema:"how many regular files were not searched: binary, too large, with several hard links, or unreadable"`
}

func searchTextInputSchema() *jsonschema.Schema {
	s := inferSchema[searchTextInput]("search_text input schema")
	pattern := s.Properties["pattern"]
	pattern.MinLength = jsonschema.Ptr(1)
	pattern.MaxLength = jsonschema.Ptr(maxPatternLength)
	s.Properties["path"].Default = json.RawMessage(`"."`)
	s.Properties["regex"].Default = json.RawMessage("false")
	return s
}

func searchTextOutputSchema() *jsonschema.Schema {
	s := inferSchema[searchTextOutput]("search_text output schema")
	boundArray(s.Properties["matches"], maxMatches)
	return s
}

func (s *Server) addSearchText() {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "search_text",
		Title: "Search text",
		Description: fmt.Sprintf("Search the files under path (relative to the workspace root, default \".\"; a single "+
			"file works too) for lines containing pattern: literal text, or an RE2 regular expression (Go regexp "+
			"syntax, for example \"(?i)todo\") when regex is true. Returns {path, line, text} for at most %d matching "+
			"lines, one per line, in path order; truncated and note say when the search stopped early. Lines are "+
			"matched one at a time without their line endings, so ^ and $ match at line boundaries. Not searched: "+
			".git directories, %s, symbolic links (never followed), anything but a regular file, binary files (a NUL "+
			"byte in the first 8 KB),%s and files larger than %d bytes. One call reads at most %d bytes of files.",
			maxMatches, protectedRule, s.hardLinkSkip(), s.maxFile, s.maxSearch),
		InputSchema:  searchTextInputSchema(),
		OutputSchema: searchTextOutputSchema(),
		Annotations:  readOnly("Search text"),
	}, s.searchText)
}

// hardLinkSkip lists hard-linked files among those search_text skips,
// unless the server allows them.
func (s *Server) hardLinkSkip() string {
	if s.allowHardLinks {
		return ""
	}
	return " files with more than one hard link,"
}

var errPatternNewline = errors.New("pattern contains a line break; search_text matches within one line at a time")

// matcher returns a function that returns the byte offset of the first
// match of pattern in a line, or -1.
func matcher(pattern string, regex bool) (func(line []byte) int, error) {
	if !regex {
		if strings.ContainsAny(pattern, "\r\n") {
			return nil, errPatternNewline
		}
		lit := []byte(pattern)
		return func(line []byte) int { return bytes.Index(line, lit) }, nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		var se *syntax.Error
		if errors.As(err, &se) {
			return nil, fmt.Errorf("pattern is not a valid RE2 regular expression: %s in %q", se.Code, truncate(se.Expr, maxShownPath))
		}
		return nil, errors.New("pattern is not a valid RE2 regular expression")
	}
	return func(line []byte) int {
		loc := re.FindIndex(line)
		if loc == nil {
			return -1
		}
		return loc[0]
	}, nil
}

// searchText is the search_text handler. An error it returns becomes a
// tool error result, so every error is written for the model.
func (s *Server) searchText(ctx context.Context, _ *mcp.CallToolRequest, in searchTextInput) (*mcp.CallToolResult, searchTextOutput, error) {
	shown, name, err := startPath(in.Path)
	if err != nil {
		return nil, searchTextOutput{}, err
	}
	match, err := matcher(in.Pattern, in.Regex)
	if err != nil {
		return nil, searchTextOutput{}, err
	}
	// The starting path follows the rules of every other lookup; links met
	// during the walk are never followed.
	g := s.newGuard()
	real, fi, err := g.resolve(shown, name)
	if err != nil {
		return nil, searchTextOutput{}, err
	}

	sr := &search{s: s, g: g, from: name, fromReal: real, fromInfo: fi, out: searchTextOutput{Matches: []searchMatch{}}, match: match}
	switch {
	case fi.IsDir():
		err = sr.dir(ctx, shown, name, nil)
	case fi.Mode().IsRegular():
		// A file named on its own is refused for the reason a walk would
		// skip it, so the model learns why nothing matched.
		err = sr.file(ctx, shown, name, fi)
	default:
		err = refuse(shown, "not a regular file or directory")
	}
	if err != nil {
		return nil, searchTextOutput{}, err
	}
	return nil, sr.out, nil
}

// A search is the state of one search_text call.
type search struct {
	s       *Server
	g       *guard
	match   func([]byte) int
	out     searchTextOutput
	bytes   int64 // file content read so far
	entries int   // directory entries visited so far

	// The starting path as the model named it (matches are reported
	// under it), as resolve found it, without links (protected entries
	// are recognised by it), and what it names.
	from, fromReal string
	fromInfo       fs.FileInfo
}

// real returns the path without links of name, a path under sr.from.
func (sr *search) real(name string) string {
	rel, err := filepath.Rel(sr.from, name)
	if err != nil {
		return name
	}
	return filepath.Join(sr.fromReal, rel)
}

// stop ends the search early with note as the reason.
func (sr *search) stop(note string) {
	sr.out.Truncated = true
	sr.out.Note = note
}

// dir searches the directory name. listed is what the parent directory's
// listing said name was (nil for the starting directory): if the directory
// opened is not that one, name was replaced, perhaps by a link, and is
// skipped. An error is returned only for the starting directory or when ctx
// is done.
func (sr *search) dir(ctx context.Context, shown, name string, listed fs.FileInfo) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := sr.s.openDir(shown, name)
	if err != nil {
		if listed == nil {
			return err
		}
		return nil
	}
	if listed == nil {
		// The starting directory must be the one resolve found.
		if opened, err := f.Stat(); err != nil || !os.SameFile(opened, sr.fromInfo) {
			f.Close()
			return changed(shown)
		}
	}
	entries, err := sr.readDir(ctx, shown, f, listed)
	f.Close()
	if err != nil || entries == nil {
		return err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	real := sr.real(name)
	for _, de := range entries {
		if sr.out.Truncated {
			return nil
		}
		if de.Name() == ".git" || sr.g.hides(real, de) {
			continue
		}
		child := filepath.Join(name, de.Name())
		info, err := de.Info()
		if err != nil {
			continue
		}
		switch t := de.Type(); {
		case t.IsDir():
			if err := sr.dir(ctx, filepath.ToSlash(child), child, info); err != nil {
				return err
			}
		case t.IsRegular():
			if err := sr.file(ctx, filepath.ToSlash(child), child, info); err != nil {
				if canceled(err) {
					return err
				}
				sr.s.logger.Debug("search_text: file skipped", "path", filepath.ToSlash(child), "reason", err)
				sr.out.FilesSkipped++
			}
		default:
			// Symbolic links, FIFOs, sockets and devices are never opened.
		}
	}
	return nil
}

// readDir reads the entries of f, the directory shown, within the entry
// budget. It returns nil entries when f is not the directory listed or
// cannot be read.
func (sr *search) readDir(ctx context.Context, shown string, f *os.File, listed fs.FileInfo) ([]fs.DirEntry, error) {
	if listed != nil {
		fi, err := f.Stat()
		if err != nil || !os.SameFile(fi, listed) {
			sr.s.logger.Debug("search_text: directory replaced during the search; skipped", "path", shown)
			return nil, nil
		}
	}
	var entries []fs.DirEntry
	err := readDirBatches(ctx, f, func(batch []fs.DirEntry) bool {
		sr.entries += len(batch)
		if sr.entries > sr.s.maxEntries {
			sr.stop(fmt.Sprintf("stopped after visiting %d directory entries, the limit for one search; search a narrower path to see the rest", sr.s.maxEntries))
			entries = nil
			return false
		}
		entries = append(entries, batch...)
		return true
	})
	switch {
	case canceled(err):
		return nil, err
	case err != nil:
		sr.s.logger.Warn("search_text: read directory failed", "path", shown, "error", err)
	}
	return entries, nil
}

// file searches the regular file name, which listed describes. An error is
// the reason the file was not searched, written for the model.
func (sr *search) file(ctx context.Context, shown, name string, listed fs.FileInfo) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := sr.s.checkFile(shown, listed); err != nil {
		return err
	}
	if err := sr.g.checkLinked(shown, listed); err != nil {
		return err
	}
	if sr.bytes+listed.Size() > sr.s.maxSearch {
		sr.stop(fmt.Sprintf("stopped after reading %d bytes of files, near the limit of %d bytes for one search; search a narrower path to see the rest", sr.bytes, sr.s.maxSearch))
		return nil
	}
	f, fi, err := sr.s.openRegular(shown, name)
	if err != nil {
		return err
	}
	defer f.Close()
	if !os.SameFile(fi, listed) {
		// Replaced since it was listed, perhaps by a link.
		return refuse(shown, "changed during the search")
	}
	data, err := sr.s.readAll(shown, f)
	if err != nil {
		return err
	}
	sr.bytes += int64(len(data))
	if isBinary(data) {
		return refuse(shown, "is a binary file (it has a NUL byte in its first 8 KB)")
	}
	sr.out.FilesSearched++
	sr.scan(filepath.ToSlash(name), data)
	return nil
}

// scan adds the lines of data that match, stopping at maxMatches.
func (sr *search) scan(path string, data []byte) {
	for n := 1; len(data) > 0; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		start := sr.match(line)
		if start < 0 {
			continue
		}
		if len(sr.out.Matches) == maxMatches {
			sr.stop(fmt.Sprintf("stopped at %d matches, the limit for one search; narrow the pattern or the path to see the rest", maxMatches))
			return
		}
		sr.out.Matches = append(sr.out.Matches, searchMatch{Path: path, Line: n, Text: excerpt(line, start)})
	}
}

// excerpt returns line as valid UTF-8, cut to a window of maxMatchText
// bytes around the match at start when it is longer.
func excerpt(line []byte, start int) string {
	if len(line) <= maxMatchText {
		return strings.ToValidUTF8(string(line), "\uFFFD")
	}
	// Show some text before the match and as much after it as fits.
	from := max(0, start-maxMatchText/4)
	to := min(len(line), from+maxMatchText)
	from = max(0, to-maxMatchText)
	for from < to && !utf8.RuneStart(line[from]) {
		from++
	}
	for to < len(line) && to > from && !utf8.RuneStart(line[to]) {
		to--
	}
	text := strings.ToValidUTF8(string(line[from:to]), "\uFFFD")
	if from > 0 {
		text = "…" + text
	}
	if to < len(line) {
		text += "…"
	}
	return text
}
