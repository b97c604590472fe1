package config

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Checks of policy values. Package policy compiles the same values; these
// checks exist so that a mistake is reported with its line when the
// configuration is read, not when the first call is made.

// localNamePattern is the form of every local tool name.
var localNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// matchName reports whether name matches glob, in which * stands for any
// run of characters and every other character for itself.
func matchName(glob, name string) bool {
	return regexp.MustCompile(`^(?s:` + strings.ReplaceAll(regexp.QuoteMeta(glob), `\*`, `.*`) + `)$`).MatchString(name)
}

// checkPointer checks a JSON Pointer (RFC 6901) into a call's arguments.
func checkPointer(p string) string {
	switch {
	case p == "":
		return `must not be empty: point into the arguments, such as /path (the arguments as a whole are an object, never a path)`
	case !strings.HasPrefix(p, "/"):
		return fmt.Sprintf("%s is not a JSON Pointer: it starts with /, such as /%s", show(p), p)
	case checkString(p) != "":
		return checkString(p)
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || p[i+1] != '0' && p[i+1] != '1') {
			return fmt.Sprintf("%s is not a JSON Pointer: ~ must be followed by 0 (for ~) or 1 (for /)", show(p))
		}
	}
	return ""
}

// checkPattern checks an RE2 pattern that a whole value must match.
func checkPattern(p string) string {
	// A valid expression stays valid once anchored as ^(?:p)$.
	_, err := regexp.Compile(p)
	if err == nil {
		return ""
	}
	return fmt.Sprintf("is not a valid RE2 regular expression: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
}

// checkPathGlob checks an allow or deny glob. Values are cleaned before
// they are matched, so a glob that is not clean could never match.
func checkPathGlob(g string) string {
	switch {
	case g == "":
		return "must not be empty"
	case checkString(g) != "":
		return checkString(g)
	case !doublestar.ValidatePattern(g):
		return fmt.Sprintf("%s is not a valid glob: check its [ ] and { } and escapes", show(g))
	case g != "/" && strings.HasSuffix(g, "/"):
		c := strings.TrimSuffix(g, "/")
		return fmt.Sprintf("%s ends with /: paths are matched without a trailing slash; write %s, or %s for what is inside", show(g), show(c), show(c+"/**"))
	}
	for _, seg := range strings.Split(strings.TrimPrefix(g, "/"), "/") {
		if seg == "" || seg == "." || seg == ".." {
			c := path.Clean(g)
			if c == ".." || strings.HasPrefix(c, "../") {
				return fmt.Sprintf("%s climbs above the server's root with ..: no glob can name such a path; a path that starts with .. once cleaned never matches an allow glob, so an allow glob (such as \"**\") refuses every one of them", show(g))
			}
			return fmt.Sprintf("%s is not clean: paths are cleaned (no empty, . or .. segments) before they are matched, so it would never match; write %s", show(g), show(c))
		}
	}
	return ""
}

// checkAllowGlob checks an allow glob, which must not start where a server
// might read a home directory or a drive: such a path never matches an
// allow glob.
func checkAllowGlob(g string) string {
	if msg := checkPathGlob(g); msg != "" {
		return msg
	}
	if strings.HasPrefix(g, "~") || hasDrive(g) {
		return fmt.Sprintf("%s starts with ~ or a drive letter, which servers may expand; such paths never match an allow glob: use a path relative to the server's root, or an absolute one", show(g))
	}
	return ""
}

// hasDrive reports whether p starts with a Windows drive letter, as in C:.
func hasDrive(p string) bool {
	return len(p) >= 2 && p[1] == ':' && ('a' <= p[0] && p[0] <= 'z' || 'A' <= p[0] && p[0] <= 'Z')
}

// checkCedarFile checks that the Cedar policy file exists. The message
// names the file as written, never the resolved host path.
func checkCedarFile(dir, file string) string {
	switch {
	case file == "":
		return "must not be empty: give the file of Cedar policies, or remove the key"
	case checkString(file) != "":
		return checkString(file)
	}
	_, _, msg := regularFile(dir, file)
	return msg
}

// regularFile checks that the file name, relative to the configuration's
// directory dir, is a regular file. It returns its path and information,
// or a message that names the file as written, never the resolved host
// path.
func regularFile(dir, name string) (string, fs.FileInfo, string) {
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	info, err := os.Stat(p)
	switch {
	case err != nil:
		return "", nil, fmt.Sprintf("file %s %s", show(name), describeFSError(err))
	case !info.Mode().IsRegular():
		return "", nil, fmt.Sprintf("%s is not a regular file", show(name))
	}
	return p, info, ""
}
