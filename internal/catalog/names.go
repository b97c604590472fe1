package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// MaxNameLen is the longest local name model providers accept.
const MaxNameLen = 64

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// hashLen is the number of hex digits of the suffix that keeps a shortened
// or sanitised name unique.
const hashLen = 8

// assignNames gives every tool its local name. A name is the server's
// prefix and the tool's own name ("server__tool" by default; see
// prefixOf) when that fits the providers' rule ^[A-Za-z0-9_-]{1,64}$ as
// is. Otherwise, or when two tools would get the same name, the name is
// sanitised, shortened and suffixed with a hash of the server and remote
// name. The result depends only on the set of tools, never on their order;
// if hashed names still collide, that is an error, never an overwrite.
func assignNames(tools []*Tool, prefixes map[string]string) error {
	return assignNamesHash(tools, prefixes, hashLen)
}

func assignNamesHash(tools []*Tool, prefixes map[string]string, hashLen int) error {
	names := make([]string, len(tools))
	hashed := make([]string, len(tools))
	for i, t := range tools {
		prefix := prefixOf(prefixes, t.Server)
		hashed[i] = hashedName(prefix, t.Server, t.Remote, hashLen)
		if names[i] = plainName(prefix, t.Remote); names[i] == "" {
			names[i] = hashed[i]
		}
	}
	// Every name shared by several tools falls back to its hashed form, until
	// nothing changes: each name changes at most once, so this ends.
	for changed := true; changed; {
		changed = false
		count := map[string]int{}
		for _, n := range names {
			count[n]++
		}
		for i := range names {
			if count[names[i]] > 1 && names[i] != hashed[i] {
				names[i] = hashed[i]
				changed = true
			}
		}
	}
	owner := map[string]*Tool{}
	for i, t := range tools {
		if prev, ok := owner[names[i]]; ok {
			a, b := prev, t
			if b.Server < a.Server || (b.Server == a.Server && b.Remote < a.Remote) {
				a, b = b, a
			}
			return fmt.Errorf("tools %s/%s and %s/%s both map to the local name %q; rename one server id", a.Server, a.Remote, b.Server, b.Remote, names[i])
		}
		owner[names[i]] = t
	}
	for i, t := range tools {
		t.Name = names[i]
	}
	return nil
}

// prefixOf is what the local names of server's tools start with: its entry
// in prefixes (config.Server.LocalPrefix), else "server__".
func prefixOf(prefixes map[string]string, server string) string {
	if p, ok := prefixes[server]; ok {
		return p
	}
	return server + "__"
}

// plainName is prefix+remote if that is a valid local name, else "".
func plainName(prefix, remote string) string {
	n := prefix + remote
	if !validName.MatchString(n) {
		return ""
	}
	return n
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// hashedName is a sanitised, shortened prefix+remote with a hash suffix of
// the exact server and remote name.
func hashedName(prefix, server, remote string, hashLen int) string {
	sum := sha256.Sum256([]byte(server + "\x00" + remote))
	suffix := hex.EncodeToString(sum[:])[:hashLen]
	slug := strings.Trim(unsafeChars.ReplaceAllString(prefix+remote, "_"), "_")
	if room := MaxNameLen - hashLen - 1; len(slug) > room {
		slug = slug[:room]
	}
	if slug == "" {
		return suffix
	}
	return slug + "_" + suffix
}

// sortTools orders tools by local name.
func sortTools(tools []*Tool) {
	slices.SortFunc(tools, func(a, b *Tool) int { return strings.Compare(a.Name, b.Name) })
}
