package config

import (
	"slices"
	"strings"
)

// Resources and prompts a server may expose (allowed_resources,
// allowed_prompts), and the resource globs that list them and that policy
// rules match.

// AllowsAllResources reports whether every resource of the server is
// allowed: AllowedResources is exactly ["*"].
func (s *Server) AllowsAllResources() bool {
	return len(s.AllowedResources) == 1 && s.AllowedResources[0] == "*"
}

// AllowsResource reports whether the resource at uri is allowed: one of
// AllowedResources matches it (see [MatchResource]).
func (s *Server) AllowsResource(uri string) bool {
	return slices.ContainsFunc(s.AllowedResources, func(glob string) bool { return MatchResource(glob, uri) })
}

// AllowsAllPrompts reports whether every prompt of the server is allowed:
// AllowedPrompts is exactly ["*"].
func (s *Server) AllowsAllPrompts() bool {
	return len(s.AllowedPrompts) == 1 && s.AllowedPrompts[0] == "*"
}

// AllowsPrompt reports whether the prompt named name (the server's own name
// for it) is allowed.
func (s *Server) AllowsPrompt(name string) bool {
	return s.AllowsAllPrompts() || slices.Contains(s.AllowedPrompts, name)
}

// MatchResource reports whether uri matches the resource glob: "*" alone
// matches every URI; otherwise * matches any run of characters except /,
// ** (or a longer run of *) any run including /, and every other character
// only itself, case-sensitively. So file:///etc/** matches
// file:///etc/a/b, and test://static/* matches test://static/x but not
// test://static/x/y.
//
// A glob needs no compiling: matching takes time proportional to the
// lengths of the glob and the URI multiplied, whatever either holds, so
// Server stays a plain value that may be copied and compared.
func MatchResource(glob, uri string) bool {
	switch {
	case glob == "*":
		return true
	case !strings.Contains(glob, "*"):
		return glob == uri
	}
	// matched[j] reports whether the glob read so far matches uri[:j]. The
	// bytes of a multi-byte character are never /, so comparing bytes
	// matches characters.
	matched := make([]bool, len(uri)+1)
	next := make([]bool, len(uri)+1)
	matched[0] = true
	for i := 0; i < len(glob); {
		if glob[i] != '*' {
			c := glob[i]
			next[0] = false
			for j := 1; j <= len(uri); j++ {
				next[j] = matched[j-1] && uri[j-1] == c
			}
			i++
		} else {
			n := 1
			for i+n < len(glob) && glob[i+n] == '*' {
				n++
			}
			crosses := n > 1
			next[0] = matched[0]
			for j := 1; j <= len(uri); j++ {
				next[j] = matched[j] || next[j-1] && (crosses || uri[j-1] != '/')
			}
			i += n
		}
		matched, next = next, matched
	}
	return matched[len(uri)]
}

// checkResourceGlob checks one entry of allowed_resources.
func checkResourceGlob(glob string) string {
	if glob == "" {
		return "must not be empty"
	}
	return checkNameChars(glob)
}

// checkPrompt checks one entry of allowed_prompts.
func checkPrompt(name string) string { return checkListed(name, "prompt") }
