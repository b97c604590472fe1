package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

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
	LineLimit int    `json:"line_limit,omitempty" jsonschema:"how many lines to return"`
	Offset    int    `json:"offset,omitempty" jsonschema:"how many lines to skip before the first line returned (0-based line offset); pass next_offset from the previous page to read on"`
}

type readFileOutput struct {
	Path       string `json:"path" jsonschema:"the path read, cleaned, relative to the workspace root"`
	Content    string `json:"content" jsonschema:"up to line_limit lines from offset on, line endings removed, joined by newlines"`
	Truncated  bool   `json:"truncated" jsonschema:"true when the file has more lines after the ones returned"`
	StartLine  int    `json:"start_line" jsonschema:"the 1-based number of the first line in content (offset + 1)"`
	TotalLines int    `json:"total_lines" jsonschema:"how many lines the file has"`
	NextOffset int    `json:"next_offset,omitempty" jsonschema:"when truncated, the offset that reads the next page"`
}

// readFileInputSchema is the schema inferred from readFileInput, with the
// bounds and defaults that inference cannot express. The SDK validates
// arguments against it and fills in the defaults.
func readFileInputSchema() *jsonschema.Schema {
	s := inferSchema[readFileInput]("read_file input schema")
	limit := s.Properties["line_limit"]
	limit.Minimum = jsonschema.Ptr(1.0)
	limit.Maximum = jsonschema.Ptr(float64(maxLineLimit))
	limit.Default = json.RawMessage(fmt.Sprint(defaultLineLimit))
	offset := s.Properties["offset"]
	offset.Minimum = jsonschema.Ptr(0.0)
	offset.Default = json.RawMessage("0")
	return s
}

func (s *Server) addReadFile() {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "read_file",
		Title: "Read file",
		Description: fmt.Sprintf("Read up to line_limit lines (default %d, at most %d) of a UTF-8 text file "+
			"in the workspace, after skipping offset lines (default 0). path is relative to the workspace root. "+
			"The result has start_line and total_lines and, when more lines follow, next_offset: pass it as offset "+
			"to read the next page. Refused: absolute paths, \"..\" elements, "+
			"absolute symbolic links, symbolic links that lead outside the workspace, anything but a regular file, "+
			"files larger than %d bytes, binary files (a NUL byte in the first 8 KB), "+
			"files that are not valid UTF-8, and %s.%s",
			defaultLineLimit, maxLineLimit, s.maxFile, protectedRule, s.hardLinkRule()),
		InputSchema: readFileInputSchema(),
		Annotations: readOnly("Read file"),
	}, s.readFile)
}

// readOnly returns the annotations of a tool that only reads the workspace.
func readOnly(title string) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{
		Title:           title,
		ReadOnlyHint:    true,
		DestructiveHint: new(false),
		IdempotentHint:  true,
		OpenWorldHint:   new(false),
	}
}

// hardLinkRule states the hard-link rule for tool descriptions, so that
// they tell the truth whichever way the server is configured.
func (s *Server) hardLinkRule() string {
	if s.allowHardLinks {
		return " Files with more than one hard link are allowed on this server."
	}
	return " Files with more than one hard link are refused."
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
	content, total := pageLines(data, in.Offset, in.LineLimit)
	if in.Offset > total {
		return nil, readFileOutput{}, refuse(in.Path, fmt.Sprintf("offset %d is past the end of the file, which has %d lines", in.Offset, total))
	}
	out := readFileOutput{
		Path:       filepath.ToSlash(name),
		Content:    content,
		StartLine:  in.Offset + 1,
		TotalLines: total,
	}
	if next := in.Offset + in.LineLimit; next < total {
		out.Truncated = true
		out.NextOffset = next
	}
	return nil, out, nil
}

// pageLines returns the lines of text from offset (0-based) up to limit of
// them, with their line endings ("\n" or "\r\n") removed, joined by "\n",
// and the number of lines in text. A final line without a newline counts.
func pageLines(text string, offset, limit int) (string, int) {
	var b strings.Builder
	n := 0
	for line := range strings.Lines(text) {
		if n >= offset && n < offset+limit {
			if n > offset {
				b.WriteByte('\n')
			}
			line = strings.TrimSuffix(line, "\n")
			line = strings.TrimSuffix(line, "\r")
			b.WriteString(line)
		}
		n++
	}
	return b.String(), n
}
