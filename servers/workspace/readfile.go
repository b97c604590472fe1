package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of read_file's line_limit argument.
const (
	defaultLineLimit = 200
	maxLineLimit     = 1000
)

type readFileInput struct {
	Path      string `json:"path" jsonschema:"file path relative to the workspace root, with / as separator"`
	LineLimit int    `json:"line_limit,omitempty" jsonschema:"how many lines to return from the start of the file"`
}

type readFileOutput struct {
	Path      string `json:"path" jsonschema:"the path read, cleaned, relative to the workspace root"`
	Content   string `json:"content" jsonschema:"the first line_limit lines, line endings removed, joined by newlines"`
	Truncated bool   `json:"truncated" jsonschema:"true when the file has more lines than were returned"`
}

// readFileInputSchema is the schema inferred from readFileInput, with the
// bounds and default of line_limit that inference cannot express. The SDK
// validates arguments against it and fills in the default.
func readFileInputSchema() *jsonschema.Schema {
	s, err := jsonschema.For[readFileInput](nil)
	if err != nil {
		panic(fmt.Sprintf("read_file input schema: %v", err))
	}
	limit := s.Properties["line_limit"]
	limit.Minimum = jsonschema.Ptr(1.0)
	limit.Maximum = jsonschema.Ptr(float64(maxLineLimit))
	limit.Default = json.RawMessage(fmt.Sprint(defaultLineLimit))
	return s
}

func (s *Server) addReadFile() {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "read_file",
		Title: "Read file",
		Description: fmt.Sprintf("Read the first line_limit lines (default %d, at most %d) of a UTF-8 text file "+
			"in the workspace. path is relative to the workspace root. Refused: absolute paths, \"..\" elements, "+
			"absolute symbolic links, symbolic links that lead outside the workspace, anything but a regular file, "+
			"files with more than one hard link, files larger than %d bytes, and files that are not valid UTF-8.",
			defaultLineLimit, maxLineLimit, s.maxFile),
		InputSchema: readFileInputSchema(),
		Annotations: &mcp.ToolAnnotations{
			Title:           "Read file",
			ReadOnlyHint:    true,
			DestructiveHint: new(false),
			IdempotentHint:  true,
			OpenWorldHint:   new(false),
		},
	}, s.readFile)
}

// readFile is the read_file handler. An error it returns becomes a tool
// error result, so every error is written for the model.
func (s *Server) readFile(_ context.Context, _ *mcp.CallToolRequest, in readFileInput) (*mcp.CallToolResult, readFileOutput, error) {
	name, err := localPath(in.Path)
	if err != nil {
		return nil, readFileOutput{}, err
	}
	data, err := s.readText(in.Path, name)
	if err != nil {
		return nil, readFileOutput{}, err
	}
	content, truncated := firstLines(data, in.LineLimit)
	return nil, readFileOutput{Path: filepath.ToSlash(name), Content: content, Truncated: truncated}, nil
}

// readText reads the regular file name (already checked by localPath) and
// returns its text. shown is the path as the client gave it.
func (s *Server) readText(shown, name string) (string, error) {
	// Looking before opening keeps the common case from ever opening a
	// device or FIFO, where open itself can have effects. It is only a
	// shortcut: openRegular checks the opened file again.
	fi, err := s.root.Stat(name)
	if err != nil {
		return "", s.resolveError(shown, err)
	}
	if err := s.checkFile(shown, fi); err != nil {
		return "", err
	}

	f, err := s.openRegular(shown, name)
	if err != nil {
		return "", err
	}
	defer f.Close()

	// The file may grow after the size check; never read past the limit.
	data, err := io.ReadAll(io.LimitReader(f, s.maxFile+1))
	if err != nil {
		s.logger.Warn("read_file: read failed", "path", shown, "error", err)
		return "", refuse(shown, "cannot be read")
	}
	if int64(len(data)) > s.maxFile {
		return "", refuse(shown, fmt.Sprintf("larger than %d bytes", s.maxFile))
	}
	if !utf8.Valid(data) {
		return "", refuse(shown, "not valid UTF-8 text")
	}
	return string(data), nil
}

// openRegular opens name without blocking and checks what was opened, so
// that a file replaced between a check and the open is still judged by
// what is actually read.
func (s *Server) openRegular(shown, name string) (*os.File, error) {
	f, err := s.root.OpenFile(name, openFlags, 0)
	if err != nil {
		return nil, s.resolveError(shown, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		s.logger.Warn("read_file: stat failed", "path", shown, "error", err)
		return nil, refuse(shown, "cannot be read")
	}
	if err := s.checkFile(shown, fi); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkFile refuses anything but a regular file with one link and an
// acceptable size.
func (s *Server) checkFile(shown string, fi os.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return refuse(shown, "not a regular file")
	}
	if linkCount(fi) > 1 {
		return refuse(shown, "has more than one hard link, so it may be shared with files outside the workspace")
	}
	if fi.Size() > s.maxFile {
		return refuse(shown, fmt.Sprintf("larger than %d bytes", s.maxFile))
	}
	return nil
}

// firstLines returns the first limit lines of text with their line endings
// ("\n" or "\r\n") removed, joined by "\n", and whether lines were left out.
func firstLines(text string, limit int) (string, bool) {
	var b strings.Builder
	n := 0
	for line := range strings.Lines(text) {
		if n == limit {
			return b.String(), true
		}
		if n > 0 {
			b.WriteByte('\n')
		}
		line = strings.TrimSuffix(line, "\n")
		line = strings.TrimSuffix(line, "\r")
		b.WriteString(line)
		n++
	}
	return b.String(), false
}
