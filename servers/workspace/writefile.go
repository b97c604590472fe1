package workspace

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// newFileMode is the mode of a file write_file creates.
const newFileMode = 0o644

type writeFileInput struct {
	Path    string `json:"path" jsonschema:"file path relative to the workspace root, with / as separator; its directory must exist"`
	Content string `json:"content" jsonschema:"the whole new content of the file, as UTF-8 text"`
}

type writeFileOutput struct {
	Path    string `json:"path" jsonschema:"the path written, cleaned, relative to the workspace root"`
	Bytes   int    `json:"bytes" jsonschema:"how many bytes the file now has"`
	Created bool   `json:"created" jsonschema:"true when the file did not exist before"`
}

func (s *Server) addWriteFile() {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "write_file",
		Title: "Write file",
		Description: fmt.Sprintf("Create a file in the workspace, or replace the whole content of one, with content "+
			"(UTF-8 text, at most %d bytes). path is relative to the workspace root; its directory must already "+
			"exist. The file is replaced atomically: readers see the old content or the new, never a mix. "+
			"A replaced file keeps its permissions; a new file gets mode 0644. Refused: absolute paths, \"..\" "+
			"elements, any symbolic link on the way (write to the real path instead), paths inside .git, "+
			"%s, directories and other files that are not regular files.%s",
			s.maxFile, protectedRule, s.hardLinkRule()),
		Annotations: &mcp.ToolAnnotations{
			Title:        "Write file",
			ReadOnlyHint: false,
			// It replaces existing content.
			DestructiveHint: new(true),
			// Writing the same content again leaves the same file.
			IdempotentHint: true,
			OpenWorldHint:  new(false),
		},
	}, s.writeFile)
}

// writeFile is the write_file handler. An error it returns becomes a tool
// error result, so every error is written for the model.
func (s *Server) writeFile(_ context.Context, _ *mcp.CallToolRequest, in writeFileInput) (*mcp.CallToolResult, writeFileOutput, error) {
	name, err := localPath(in.Path)
	if err != nil {
		return nil, writeFileOutput{}, err
	}
	switch {
	case s.isProtected(name):
		return nil, writeFileOutput{}, refuse(in.Path, protectedReason)
	case name == "." || strings.HasSuffix(filepath.ToSlash(in.Path), "/"):
		return nil, writeFileOutput{}, refuse(in.Path, "names a directory; give the path of a file")
	case inGit(name):
		// Files under .git (hooks, config) run or steer commands on the
		// host the next time git runs there.
		return nil, writeFileOutput{}, refuse(in.Path, "is inside .git; write_file does not change repository metadata")
	case int64(len(in.Content)) > s.maxFile:
		return nil, writeFileOutput{}, refuse(in.Path, fmt.Sprintf("content is larger than %d bytes", s.maxFile))
	case !utf8.ValidString(in.Content):
		return nil, writeFileOutput{}, refuse(in.Path, "content is not valid UTF-8")
	}

	// write_file follows no link, so name is the path written, and the
	// guard only has to recognise other names for protected entries.
	g := s.newGuard()
	dir, base := filepath.Split(name)
	parent, err := s.openParent(g, in.Path, filepath.Clean(dir))
	if err != nil {
		return nil, writeFileOutput{}, err
	}
	defer parent.Close()
	perm, created, err := s.checkTarget(g, in.Path, parent, base)
	if err != nil {
		return nil, writeFileOutput{}, err
	}
	if err := s.replace(in.Path, parent, base, in.Content, perm, created); err != nil {
		return nil, writeFileOutput{}, err
	}
	return nil, writeFileOutput{Path: filepath.ToSlash(name), Bytes: len(in.Content), Created: created}, nil
}

// inGit reports whether an element of name is .git as a file system may
// spell it (see foldName): a case-insensitive one treats .GIT as the same
// directory.
func inGit(name string) bool { return hasElement(name, ".git") }

// openParent opens dir, the directory a written file goes in, one element
// at a time. Unlike lookups for reading, it refuses symbolic links to
// directories even inside the workspace, so the file written is always
// the one its path names lexically and the .git rule cannot be bypassed.
// Each directory opened is checked to be the one just looked at, so
// replacing an element by a link meanwhile is caught too.
func (s *Server) openParent(g *guard, shown, dir string) (*os.Root, error) {
	cur, err := s.root.OpenRoot(".")
	if err != nil {
		return nil, s.resolveError(shown, err)
	}
	if dir == "." {
		return cur, nil
	}
	walked := ""
	for elem := range strings.SplitSeq(dir, string(filepath.Separator)) {
		walked = path.Join(walked, elem)
		fi, err := cur.Lstat(elem)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			cur.Close()
			return nil, refuse(shown, "parent directory does not exist; write_file does not create directories")
		case err != nil:
			cur.Close()
			return nil, s.resolveError(shown, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			cur.Close()
			return nil, refuse(shown, fmt.Sprintf("%q is a symbolic link; write_file does not follow links, so give the real path", walked))
		case !fi.IsDir():
			cur.Close()
			return nil, refuse(shown, fmt.Sprintf("%q is not a directory", walked))
		case g.is(fi):
			cur.Close()
			return nil, refuse(shown, protectedReason)
		}
		next, err := cur.OpenRoot(dirName(elem))
		cur.Close()
		if err != nil {
			return nil, s.resolveError(shown, err)
		}
		if now, err := next.Stat("."); err != nil || !os.SameFile(fi, now) {
			next.Close()
			return nil, refuse(shown, fmt.Sprintf("%q changed during the write; try again", walked))
		}
		cur = next
	}
	return cur, nil
}

// checkTarget looks at what base names in parent and returns the mode the
// written file gets and whether it is new.
func (s *Server) checkTarget(g *guard, shown string, parent *os.Root, base string) (fs.FileMode, bool, error) {
	fi, err := parent.Lstat(base)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return newFileMode, true, nil
	case err != nil:
		return 0, false, s.resolveError(shown, err)
	case g.is(fi):
		return 0, false, refuse(shown, protectedReason)
	case fi.Mode()&fs.ModeSymlink != 0:
		return 0, false, refuse(shown, "is a symbolic link; write_file does not write through links, so give the real path")
	case fi.IsDir():
		return 0, false, refuse(shown, "is a directory")
	case !fi.Mode().IsRegular():
		return 0, false, refuse(shown, "not a regular file")
	}
	if err := s.checkLinks(shown, fi); err != nil {
		return 0, false, err
	}
	return fi.Mode().Perm(), false, nil
}

// replace writes content to a new file beside base and renames it over
// base, so that base always holds either its old content or all of the
// new. The rename replaces the name only: another hard link to the old
// file keeps the old content.
func (s *Server) replace(shown string, parent *os.Root, base, content string, perm fs.FileMode, created bool) error {
	failed := refuse(shown, "cannot be written; the file is unchanged")
	if created {
		failed = refuse(shown, "cannot be written")
	}
	tmp := ".airlock-" + rand.Text() + ".tmp"
	f, err := parent.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return refuse(shown, "permission denied")
		}
		s.logger.Warn("write_file: create failed", "path", shown, "error", err)
		return failed
	}
	_, err = io.WriteString(f, content)
	if err == nil {
		// Chmod, not the create mode, so the umask cannot change it.
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = parent.Rename(tmp, base)
	}
	if err != nil {
		s.logger.Warn("write_file: write failed", "path", shown, "error", err)
		if rerr := parent.Remove(tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			s.logger.Warn("write_file: removing the temporary file failed", "path", shown, "error", rerr)
		}
		if errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return refuse(shown, "is a directory")
		}
		return failed
	}

	// The rename is durable only once the directory is synced.
	d, err := parent.Open(".")
	if err == nil {
		err = d.Sync()
		d.Close()
	}
	if err != nil {
		s.logger.Debug("write_file: directory sync failed", "path", shown, "error", err)
	}
	return nil
}
