package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Checks shared by the YAML and the mcpServers JSON readers. Each returns a
// message for the user, or "" when the value is fine.

var (
	idPattern      = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
	prefixPattern  = regexp.MustCompile(`^[A-Za-z0-9_-]{0,32}$`)
	envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	plainKey       = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
)

const idRule = "use 1 to 32 letters, digits, _ or -"

// maxFileBytes bounds a configuration file; real ones are a few kilobytes.
const maxFileBytes = 4 << 20

const workspaceVar = "${workspace}"

func checkID(id string) string {
	if idPattern.MatchString(id) {
		return ""
	}
	return fmt.Sprintf("%s is not a valid server id: %s", show(id), idRule)
}

// suggestID turns name into a valid server id, for "rename it to" hints.
func suggestID(name string) string {
	var b strings.Builder
	for _, r := range name {
		if b.Len() == 32 {
			break
		}
		switch {
		case r < utf8.RuneSelf && (r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'):
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		return "server"
	}
	return s
}

func checkEnvName(name string) string {
	if envNamePattern.MatchString(name) {
		return ""
	}
	return fmt.Sprintf("%s is not a valid environment variable name: use letters, digits and _, not starting with a digit", show(name))
}

// checkSecretEnvName checks the name of a host variable that holds a
// secret (secret_env's values, oauth.client_secret_env,
// store.password_env, serve.metrics_token_env). A refused value is never
// quoted: it may be the secret itself, pasted where its variable's name
// belongs.
func checkSecretEnvName(name string) string {
	switch {
	case envNamePattern.MatchString(name) && !looksLikeAPIKey(name):
		return ""
	case looksLikeAPIKey(name):
		return "looks like a secret, not the name of a variable: the secret never goes in this file; set it in the environment and name its variable here"
	}
	return "is not the name of an environment variable (letters, digits and _, not starting with a digit): name the variable that holds the secret; the secret itself never goes in this file"
}

// checkString rejects strings that cannot be passed to a process.
func checkString(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		return "must not contain a NUL character"
	}
	return ""
}

// checkTool checks one entry of an allowed tools list.
func checkTool(tool string) string { return checkListed(tool, "tool") }

// checkTaskTool checks a pattern of tools/names under tasks: a tool name
// in which * may stand for any run of characters.
func checkTaskTool(glob string) string {
	if glob == "" {
		return `must not be empty: give a tool name, or a pattern such as "build_*"`
	}
	return checkNameChars(glob)
}

// checkListed checks one entry of a list of names of what (allowed_tools,
// allowed_prompts), or "*". Patterns are refused rather than matched
// literally, which would silently allow nothing.
func checkListed(name, what string) string {
	switch {
	case name == "":
		return "must not be empty"
	case name == "*":
		return ""
	case strings.Contains(name, "*"):
		return fmt.Sprintf(`%s: patterns are not supported: list each %s, or use ["*"] alone for every %s`, show(name), what, what)
	}
	return checkNameChars(name)
}

// checkToolPrefix checks a tool_prefix: what local names start with must
// keep them valid names (^[A-Za-z0-9_-]{1,64}$) and leave room for the
// tool's own name.
func checkToolPrefix(p string) string {
	if prefixPattern.MatchString(p) {
		return ""
	}
	return fmt.Sprintf(`%s is not a valid tool name prefix: use at most 32 letters, digits, _ or - ("" keeps the server's own tool names; without the key they start with the server id and __)`, show(p))
}

// checkNameChars refuses a name with surrounding spaces or control
// characters, which no tool name has on purpose.
func checkNameChars(name string) string {
	switch {
	case strings.TrimSpace(name) != name:
		return fmt.Sprintf("%s has leading or trailing spaces", show(name))
	case strings.IndexFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0:
		return fmt.Sprintf("%s contains a control character", show(name))
	}
	return ""
}

func checkProtocolVersion(v string) string {
	if slices.Contains(SupportedProtocolVersions, v) {
		return ""
	}
	return fmt.Sprintf("%s is not a supported protocol version: use %s", show(v), strings.Join(SupportedProtocolVersions, ", "))
}

// parseTimeout parses a duration for a *_timeout key.
func parseTimeout(s string) (time.Duration, string) {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			return 0, fmt.Sprintf("%s has no unit: write a duration such as 30s or 2m", show(s))
		}
		return 0, fmt.Sprintf("%s is not a duration: write one such as 30s, 1m30s or 2h", show(s))
	case d <= 0:
		return 0, fmt.Sprintf("%s must be longer than zero", show(s))
	case d > maxTimeout:
		return 0, fmt.Sprintf("%s is longer than the limit of 24h", show(s))
	}
	return d, ""
}

// fmtDuration prints d the way people write it: 1h, not 1h0m0s.
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// resolveCwd resolves cwd against dir and checks that it is a directory.
// Messages name the directory as written, never the resolved host path.
func resolveCwd(dir, cwd, written string) (string, string) {
	if cwd == "" {
		return "", "must not be empty: leave the key out to use the configuration file's directory"
	}
	if msg := checkString(cwd); msg != "" {
		return "", msg
	}
	p := cwd
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	p = filepath.Clean(p)
	info, err := os.Stat(p)
	switch {
	case err != nil:
		return "", fmt.Sprintf("directory %s %s", show(written), describeFSError(err))
	case !info.IsDir():
		return "", fmt.Sprintf("%s is not a directory", show(written))
	}
	return p, ""
}

// describeFSError says what went wrong with a file without repeating its
// path, which may be an absolute host path.
func describeFSError(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	case errors.Is(err, fs.ErrPermission):
		return "cannot be read: permission denied"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return "cannot be read: " + pe.Err.Error()
	}
	return "cannot be read"
}

// show quotes a value from the file for a message, shortened so that a
// runaway value cannot flood the terminal.
func show(s string) string {
	const max = 64
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		return strconv.Quote(string(r[:max])) + "…"
	}
	return strconv.Quote(s)
}

// joinPath appends key to a key path, quoting keys that are not plain words.
func joinPath(path, key string) string {
	if !plainKey.MatchString(key) || len(key) > 64 {
		key = show(key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// keySet describes the keys of one mapping.
type keySet struct {
	known []string
	// elsewhere says where a key that belongs to another mapping goes.
	elsewhere map[string]string
	// refused holds the messages of keys that belong nowhere, for what a
	// person is likely to write there instead (a secret's value).
	refused map[string]string
}

// unknownKey returns the message for a key that is not in ks.
func (ks keySet) unknownKey(key string) string {
	if msg, ok := ks.refused[key]; ok {
		return msg
	}
	if where, ok := ks.elsewhere[key]; ok {
		return "unknown key here: it belongs " + where
	}
	if s := closest(key, ks.known); s != "" {
		return fmt.Sprintf("unknown key; did you mean %q?", s)
	}
	return "unknown key: expected one of " + strings.Join(ks.known, ", ")
}

// Suggest returns the candidate closest to name within an edit distance of
// 2, ignoring case, or "": the "did you mean" of configuration messages,
// for a key or a name the configuration refers to.
func Suggest(name string, candidates []string) string { return closest(name, candidates) }

// closest returns the candidate within edit distance 2 of key, or "".
func closest(key string, candidates []string) string {
	if len(key) > 64 {
		return ""
	}
	best, bestDist := "", 3
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(key), strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// problems collects errors with the line they sort by. Problems on one
// line keep the order in which reading met them. A check that runs once
// reading is done reports at a mark taken when reading met what it checks,
// so that its problem sorts as if reading had found it there.
type problems struct {
	list []problem
}

type problem struct {
	order int // the line
	seq   int // 2i+1 for the i-th problem added; a mark is even
	err   error
}

func (ps *problems) add(order int, err error) {
	ps.list = append(ps.list, problem{order, 2*len(ps.list) + 1, err})
}

// mark returns where reading is: a problem added at it sorts after every
// problem added so far and before the next one, on the same line.
func (ps *problems) mark() int { return 2 * len(ps.list) }

// addAt adds a problem at a mark.
func (ps *problems) addAt(mark, order int, err error) {
	ps.list = append(ps.list, problem{order, mark, err})
}

func (ps *problems) empty() bool { return len(ps.list) == 0 }

// join returns every problem in line order, or nil.
func (ps *problems) join() error {
	if len(ps.list) == 0 {
		return nil
	}
	sort.SliceStable(ps.list, func(i, j int) bool {
		a, b := ps.list[i], ps.list[j]
		return a.order < b.order || a.order == b.order && a.seq < b.seq
	})
	errs := make([]error, len(ps.list))
	for i, p := range ps.list {
		errs[i] = p.err
	}
	return errors.Join(errs...)
}

// registry keeps server ids unique. Ids that differ only in letter case are
// refused too: they read as the same server in tool names and policies.
type registry struct {
	byKey map[string]registered
	order []string // ids in the order they were added
}

type registered struct {
	id    string
	where string
}

// add records id defined at where, or returns a message naming the first
// definition.
func (r *registry) add(id, where string) string {
	if r.byKey == nil {
		r.byKey = make(map[string]registered)
	}
	key := strings.ToLower(id)
	if first, ok := r.byKey[key]; ok {
		if first.id != id {
			return fmt.Sprintf("server id %q differs only in letter case from %q of %s: ids must differ in more than case", id, first.id, first.where)
		}
		return fmt.Sprintf("server id %q is already used by %s", id, first.where)
	}
	r.byKey[key] = registered{id, where}
	r.order = append(r.order, id)
	return ""
}

// has reports whether id, exactly, was added.
func (r *registry) has(id string) bool {
	return slices.Contains(r.order, id)
}

// matches reports whether the server glob matches an id that was added.
func (r *registry) matches(glob string) bool {
	return slices.ContainsFunc(r.order, func(id string) bool { return matchName(glob, id) })
}

// list names the ids for "there is no server" messages.
func (r *registry) list() string {
	if len(r.order) == 0 {
		return "none"
	}
	return strings.Join(r.order, ", ")
}

// noToolsNotice is the notice for a server whose tools are all hidden.
func noToolsNotice(id, how string) string {
	return fmt.Sprintf("server %q exposes no tools: %s", id, how)
}
