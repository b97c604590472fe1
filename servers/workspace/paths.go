package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"
)

// maxShownPath bounds how much of a client's path is echoed in a message.
const maxShownPath = 200

// A refusal is a tool error written for the model: the path as the client
// gave it and what is wrong with it, never host paths or system error text.
type refusal struct {
	path   string
	reason string
}

func refuse(path, reason string) error { return &refusal{path: path, reason: reason} }

func (r *refusal) Error() string {
	return fmt.Sprintf("path %q: %s", truncate(r.path, maxShownPath), r.reason)
}

// truncate cuts s to at most n bytes, on a character boundary, and marks
// the cut with "...".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) && s != "" {
		s = s[:len(s)-1]
	}
	return s + "..."
}

// errAbsolute is refused without echoing the path: an absolute path may name
// host directories, and the model gains nothing from seeing it again.
var errAbsolute = errors.New("path is absolute; give a path relative to the workspace root")

var errEmpty = errors.New("path is empty; give a file path relative to the workspace root")

// localPath checks p lexically and returns it cleaned, in the host's
// separator, for use with os.Root. os.Root would refuse most of these as
// well; checking first gives the model a precise reason.
func localPath(p string) (string, error) {
	switch {
	case p == "":
		return "", errEmpty
	case strings.ContainsRune(p, 0):
		return "", refuse(p, "contains a NUL byte")
	case filepath.IsAbs(p), path.IsAbs(filepath.ToSlash(p)), filepath.VolumeName(p) != "":
		return "", errAbsolute
	}
	name := filepath.Clean(filepath.FromSlash(p))
	if !filepath.IsLocal(name) {
		return "", refuse(p, "outside the workspace")
	}
	// "a/../b" stays inside, but what it names depends on whether a is a
	// link; refusing it keeps the rule simple to state and to check.
	for elem := range strings.SplitSeq(filepath.ToSlash(filepath.FromSlash(p)), "/") {
		if elem == ".." {
			return "", refuse(p, `".." elements are not allowed; give a path without them`)
		}
	}
	return name, nil
}

// startPath checks p, the path a tool starts from, where empty means the
// workspace root. It returns the path as the model sees it and the name
// localPath makes of it.
func startPath(p string) (shown, name string, err error) {
	shown = p
	if shown == "" {
		shown = "."
	}
	name, err = localPath(shown)
	return shown, name, err
}

// escapeError returns the error r reports when a path or one of its links
// leads outside it. os does not export that error, so it is taken from a
// lookup that escapes lexically and never touches the file system.
func escapeError(r *os.Root) error {
	_, err := r.Lstat("..")
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return nil
	}
	return pe.Err
}

// escapedReason is what a refusal of a path that leads out of the root says.
const escapedReason = "resolves outside the workspace (symbolic links are followed only when relative and inside the workspace)"

// resolveError turns an error from looking up shown in the root into a
// refusal. The os error itself embeds paths, so it goes to the log only.
func (s *Server) resolveError(shown string, err error) error {
	s.logger.Debug("workspace: lookup refused", "path", shown, "error", err)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return refuse(shown, "no such file")
	case s.escapeErr != nil && errors.Is(err, s.escapeErr):
		return refuse(shown, escapedReason)
	case errors.Is(err, syscall.ELOOP):
		return refuse(shown, "too many levels of symbolic links")
	case errors.Is(err, fs.ErrPermission):
		return refuse(shown, "permission denied")
	case errors.Is(err, syscall.ENXIO):
		// Opening a socket fails this way.
		return refuse(shown, "not a regular file")
	}
	s.logger.Warn("workspace: lookup failed", "path", shown, "error", err)
	return refuse(shown, "cannot be read")
}
