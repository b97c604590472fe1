package policy

import (
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/text/unicode/norm"
)

// pathSet holds the allow and deny globs of one constraint. Matching is
// lexical and errs toward denying in both directions; the package
// documentation states the rules.
type pathSet struct {
	allow    []string // as configured, for messages
	allowRel []string // allow globs for relative paths
	allowAbs []string // allow globs for absolute paths (starting with /)
	deny     []string // as configured
	denyKey  []string // deny globs folded (see foldPath)
}

func compilePaths(allow, deny []string) (*pathSet, error) {
	ps := &pathSet{allow: allow, deny: deny}
	for _, g := range allow {
		if err := checkGlob(g); err != nil {
			return nil, fmt.Errorf("allow glob %q: %w", g, err)
		}
		if strings.HasPrefix(g, "~") || hasDrive(g) {
			return nil, fmt.Errorf("allow glob %q: starts with ~ or a drive letter, which no path is allowed to", g)
		}
		if strings.HasPrefix(g, "/") {
			ps.allowAbs = append(ps.allowAbs, g)
		} else {
			ps.allowRel = append(ps.allowRel, g)
		}
	}
	for _, g := range deny {
		if err := checkGlob(g); err != nil {
			return nil, fmt.Errorf("deny glob %q: %w", g, err)
		}
		ps.denyKey = append(ps.denyKey, foldPath(g))
	}
	return ps, nil
}

// checkGlob refuses a glob that could never match a cleaned path.
func checkGlob(g string) error {
	if g == "" || !doublestar.ValidatePattern(g) {
		return fmt.Errorf("not a valid glob")
	}
	if g != "/" && strings.HasSuffix(g, "/") {
		return fmt.Errorf("ends with /; paths are matched without one")
	}
	for _, seg := range strings.Split(strings.TrimPrefix(g, "/"), "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("not clean: paths are cleaned before they are matched")
		}
	}
	return nil
}

// foldPath is the form deny globs and paths are compared in: Unicode NFC,
// then lower case. Case-insensitive and normalising file systems (macOS,
// Windows) open .ENV for .env, and a deny glob must catch that.
func foldPath(s string) string {
	return strings.ToLower(norm.NFC.String(s))
}

// hasDrive reports whether p starts with a Windows drive letter, as in C:.
func hasDrive(p string) bool {
	return len(p) >= 2 && p[1] == ':' && ('a' <= p[0] && p[0] <= 'z' || 'A' <= p[0] && p[0] <= 'Z')
}

// check returns why the path s fails, or "". The message never quotes s.
func (ps *pathSet) check(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		return "contains a NUL character"
	}
	clean := path.Clean(s)
	forms := []string{clean}
	backslash := strings.Contains(s, `\`)
	if backslash {
		// A server on Windows reads a\..\..\x as a/../../x.
		forms = append(forms, path.Clean(strings.ReplaceAll(s, `\`, "/")))
	}
	for _, f := range forms {
		k := foldPath(f)
		for i, g := range ps.deny {
			// Folding can narrow a range ([A-z] holds _, [a-z] does not),
			// so the glob as written is tried too.
			if doublestar.MatchUnvalidated(g, f) || doublestar.MatchUnvalidated(ps.denyKey[i], k) {
				return fmt.Sprintf("is a denied path (%q)", g)
			}
		}
	}
	if len(ps.allow) == 0 {
		return ""
	}
	switch {
	case backslash:
		return "contains a backslash, which a server may read as a separator; such a path is never allowed"
	case clean == ".." || strings.HasPrefix(clean, "../"):
		return "leaves the directory it is relative to (..)"
	case strings.HasPrefix(clean, "~") || hasDrive(clean):
		return "starts with ~ or a drive letter, which a server may expand; such a path is never allowed"
	}
	globs := ps.allowRel
	if path.IsAbs(clean) {
		globs = ps.allowAbs
	}
	for _, g := range globs {
		if doublestar.MatchUnvalidated(g, clean) {
			return ""
		}
	}
	return fmt.Sprintf("is outside the allowed paths (%s)", strings.Join(quoteAll(ps.allow), ", "))
}
