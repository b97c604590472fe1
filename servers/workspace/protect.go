package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// protectedNames are Airlock's state directory and configuration files. A
// path with an element that is one of them, as a file system may spell it
// (see foldName), is refused by every tool, wherever it is in the tree: a
// model that reads the state directory reads every server's stderr and the
// audit trail, and one that writes a configuration chooses the commands
// Airlock runs next.
var protectedNames = []string{".airlock", "airlock.yaml", "airlock.yml"}

// protectedReason is what a refusal of a protected path says. It names no
// host path: the model learns only that the path is off limits.
const protectedReason = "is Airlock's own state or configuration, which the workspace tools do not read, list, search or write"

// protectedRule names the protected entries in tool descriptions.
const protectedRule = "Airlock's own state and configuration (.airlock, airlock.yaml and airlock.yml anywhere, and the paths the host protects)"

// maxProtectedScan bounds the entries of protected directories looked at to
// tell whether a file with several hard links is one of theirs. Past it,
// every such file is refused.
const maxProtectedScan = 100_000

// maxLinks is how many symbolic links one lookup follows, as os.Root does.
const maxLinks = 8

// foldName returns the form in which a path element is compared with a
// protected name: the one a case-insensitive, normalising file system
// treats alike. It drops the code points HFS+ ignores, applies Unicode NFC
// and case folding (so the Kelvin sign is a k), and cuts what NTFS ignores
// or reads as a stream name: trailing dots and spaces, and anything from a
// colon on. Folding more than one file system does only refuses more.
func foldName(elem string) string {
	if plainASCII(elem) {
		return strings.ToLower(elem)
	}
	elem = strings.Map(func(r rune) rune {
		if hfsIgnored(r) {
			return -1
		}
		return r
	}, elem)
	elem = cases.Fold().String(norm.NFC.String(elem))
	if i := strings.IndexByte(elem, ':'); i >= 0 {
		elem = elem[:i]
	}
	return strings.TrimRight(elem, ". ")
}

// plainASCII reports whether foldName only has to lower the case of elem:
// it is ASCII, with no colon and no trailing dot or space.
func plainASCII(elem string) bool {
	for i := range len(elem) {
		if c := elem[i]; c >= utf8.RuneSelf || c == ':' {
			return false
		}
	}
	return elem == "" || (elem[len(elem)-1] != '.' && elem[len(elem)-1] != ' ')
}

// hfsIgnored reports whether HFS+ ignores r in names, so that ".air\u200clock"
// opens ".airlock" there (git guards .git against the same list).
func hfsIgnored(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return true
	}
	return false
}

// hasElement reports whether an element of name (a cleaned path with the
// host's separator) folds to one of names, which must be folded already.
func hasElement(name string, names ...string) bool {
	for elem := range strings.SplitSeq(filepath.ToSlash(name), "/") {
		if slices.Contains(names, foldName(elem)) {
			return true
		}
	}
	return false
}

// foldPath splits the relative path rel into folded elements.
func foldPath(rel string) []string {
	var out []string
	for elem := range strings.SplitSeq(filepath.ToSlash(rel), "/") {
		out = append(out, foldName(elem))
	}
	return out
}

// protection is what the server protects besides protectedNames: the
// paths of Options.Protect.
type protection struct {
	root  string     // the root's absolute host path
	paths []string   // every protected host path, absolute
	rel   [][]string // those inside the root, relative and folded
}

// newProtection checks the paths of Options.Protect against root.
func newProtection(root string, paths []string) (*protection, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	p := &protection{root: abs}
	realRoot := resolveHost(abs)
	for _, path := range paths {
		if path == "" {
			return nil, errors.New("protected path is empty")
		}
		host, err := filepath.Abs(path)
		if err != nil {
			return nil, err
		}
		p.paths = append(p.paths, host)
		rel, err := filepath.Rel(realRoot, resolveHost(host))
		switch {
		case err != nil:
		case rel == ".":
			return nil, fmt.Errorf("protected path %s is the workspace root itself: keep Airlock's state and configuration outside the directory served", path)
		case filepath.IsLocal(rel):
			p.rel = append(p.rel, foldPath(rel))
		}
		// A path outside the root, or one that contains it (a task's
		// worktree lives in the state directory), is reached through no
		// name inside: only a hard link can lead there, and the scan of
		// linkedToProtected looks for those.
	}
	return p, nil
}

// resolveHost returns path with the symbolic links of its existing part
// resolved, so that it compares with the root's resolved path.
func resolveHost(path string) string {
	var rest []string
	for {
		if real, err := filepath.EvalSymlinks(path); err == nil {
			return filepath.Join(append([]string{real}, rest...)...)
		}
		parent := filepath.Dir(path)
		if parent == path {
			return filepath.Join(append([]string{path}, rest...)...)
		}
		rest = append([]string{filepath.Base(path)}, rest...)
		path = parent
	}
}

// isProtected reports whether name, a cleaned path relative to the root
// with no symbolic links in it, is or lies inside a protected entry.
func (s *Server) isProtected(name string) bool {
	return hasElement(name, protectedNames...) || s.inProtectedPath(name)
}

// inProtectedPath reports whether name is or lies inside a path of
// Options.Protect.
func (s *Server) inProtectedPath(name string) bool {
	if len(s.protect.rel) == 0 {
		return false
	}
	folded := foldPath(name)
	for _, p := range s.protect.rel {
		if len(p) <= len(folded) && slices.Equal(p, folded[:len(p)]) {
			return true
		}
	}
	return false
}

// A guard is what one call checks paths against: the protected entries as
// they are now, found again for every call so that one created, removed or
// replaced since the server started is judged as it is. Not safe for
// concurrent use; each call makes its own.
type guard struct {
	s   *Server
	ids []os.FileInfo // protected entries that exist, to recognise other names for them

	// Files with several hard links in protected directories, found the
	// first time a call meets such a file (with Options.AllowHardLinks).
	scanned  bool
	linked   []os.FileInfo
	overflow bool // the scan did not finish: every such file is refused
}

func (s *Server) newGuard() *guard {
	g := &guard{s: s}
	for _, name := range protectedNames {
		if fi, err := s.root.Stat(name); err == nil {
			g.ids = append(g.ids, fi)
		}
	}
	for _, p := range s.protect.paths {
		if fi, err := os.Stat(p); err == nil {
			g.ids = append(g.ids, fi)
		}
	}
	return g
}

// is reports whether fi is one of the protected entries under another name.
func (g *guard) is(fi os.FileInfo) bool {
	return slices.ContainsFunc(g.ids, func(id os.FileInfo) bool { return os.SameFile(id, fi) })
}

// hides reports whether the entry de of the directory whose path (without
// links) is dir is protected, and so is left out of listings and searches.
func (g *guard) hides(dir string, de fs.DirEntry) bool {
	// dir itself was checked when it was reached.
	if slices.Contains(protectedNames, foldName(de.Name())) || g.s.inProtectedPath(filepath.Join(dir, de.Name())) {
		return true
	}
	if len(g.ids) == 0 {
		return false
	}
	fi, err := de.Info()
	return err == nil && g.is(fi)
}

// resolve follows name, a path from localPath, through the root the way
// os.Root does (relative symbolic links only, never out of the root, at most
// maxLinks of them), and refuses it when it names or passes through a
// protected entry: by its spelling before any lookup, by each directory and
// file met on the way, and by the path it resolves to. It returns that path,
// which has no links, and what it names, for the caller to check that what
// it opens is the same file.
func (g *guard) resolve(shown, name string) (string, os.FileInfo, error) {
	s := g.s
	if s.isProtected(name) {
		return "", nil, refuse(shown, protectedReason)
	}
	parts := splitPath(name)
	var last os.FileInfo
	links := 0
	for i := 0; i < len(parts); {
		if parts[i] == ".." {
			if i == 0 {
				return "", nil, refuse(shown, escapedReason)
			}
			parts = slices.Delete(parts, i-1, i+1)
			i--
			continue
		}
		cur := filepath.Join(parts[:i+1]...)
		fi, err := s.root.Lstat(cur)
		if err != nil {
			return "", nil, s.resolveError(shown, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if links++; links > maxLinks {
				return "", nil, s.resolveError(shown, syscall.ELOOP)
			}
			target, err := s.root.Readlink(cur)
			if err != nil {
				return "", nil, s.resolveError(shown, err)
			}
			if filepath.IsAbs(target) || filepath.VolumeName(target) != "" || target == "" {
				return "", nil, refuse(shown, escapedReason)
			}
			parts = slices.Concat(parts[:i], splitPath(target), parts[i+1:])
			continue
		}
		if g.is(fi) {
			return "", nil, refuse(shown, protectedReason)
		}
		last = fi
		i++
	}
	if len(parts) == 0 {
		fi, err := s.root.Lstat(".")
		if err != nil {
			return "", nil, s.resolveError(shown, err)
		}
		return ".", fi, nil
	}
	real := filepath.Join(parts...)
	if s.isProtected(real) {
		return "", nil, refuse(shown, protectedReason)
	}
	return real, last, nil
}

// splitPath returns the elements of a relative path, without empty and "."
// elements.
func splitPath(p string) []string {
	var parts []string
	for elem := range strings.SplitSeq(filepath.ToSlash(p), "/") {
		if elem != "" && elem != "." {
			parts = append(parts, elem)
		}
	}
	return parts
}

// changed refuses shown when what was opened for it is not what resolve
// found: a path changed between the two lookups (a directory swapped for a
// link) could otherwise lead into a protected directory.
func changed(shown string) error {
	return refuse(shown, "changed during the call; try again")
}

// checkLinked refuses fi, a file the server is about to read, when it has
// several hard links and one of them is in a protected directory. Only a
// server that allows hard links needs this: by default every such file is
// refused anyway.
func (g *guard) checkLinked(shown string, fi os.FileInfo) error {
	if !g.s.allowHardLinks || linkCount(fi) < 2 {
		return nil
	}
	if g.is(fi) {
		return refuse(shown, protectedReason)
	}
	if !g.scanned {
		g.scan()
	}
	if g.overflow || slices.ContainsFunc(g.linked, func(l os.FileInfo) bool { return os.SameFile(l, fi) }) {
		return refuse(shown, protectedReason)
	}
	return nil
}

// scan records the files with several hard links in the root's .airlock
// and the protected directories, skipping the root itself where a
// protected directory contains it. A scan that cannot finish (too many
// entries, an unreadable directory) sets overflow, failing closed.
func (g *guard) scan() {
	g.scanned = true
	s := g.s
	rootInfo, err := s.root.Stat(".")
	if err != nil {
		g.overflow = true
		return
	}
	budget := maxProtectedScan
	dirs := append([]string{filepath.Join(s.protect.root, protectedNames[0])}, s.protect.paths...)
	for _, dir := range dirs {
		// WalkDir does not follow a link it starts from.
		dir = resolveHost(dir)
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == dir && errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if budget--; budget < 0 {
				return errors.New("too many entries")
			}
			if !d.IsDir() && !d.Type().IsRegular() {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			switch {
			case d.IsDir() && os.SameFile(fi, rootInfo):
				return filepath.SkipDir
			case !d.IsDir() && linkCount(fi) > 1:
				g.linked = append(g.linked, fi)
			}
			return nil
		})
		if err != nil {
			s.logger.Warn("workspace: cannot scan a protected directory for hard links; refusing every file with several links", "error", err)
			g.overflow = true
			return
		}
	}
}
