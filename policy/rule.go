package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/canonical"
)

// rule is one compiled entry of policy.rules.
type rule struct {
	at     entry
	name   string // "policy.rules[2] (airlock.yaml:14)"
	server nameGlob
	// kind is the kind of request the rule matches; anyKind is set instead
	// for a rule that names only a server, which matches every kind.
	kind    Kind
	anyKind bool
	// tool is the glob over tool names of a tool rule, over prompt names
	// of a prompt rule, and "*" for a rule that names only a server.
	tool nameGlob
	// resource is the URI glob of a resource rule.
	resource uriGlob
	verdict  Verdict
	args     []*constraint
}

// nameGlob matches a server id or a tool name: * stands for any run of
// characters (slashes and dots included) and every other character for
// itself, case-sensitively.
type nameGlob struct {
	pattern string
	re      *regexp.Regexp
	spec    globSpec
}

// uriGlob matches the URI of a resource (see config.MatchResource): *
// stands for any run of characters but /, ** for any run, and "*" alone
// for every URI.
type uriGlob struct {
	pattern string
	spec    globSpec
}

// globSpec is how specific a name or URI glob is: an exact name beats every
// pattern; between two exact names or two patterns, more literal (non-*)
// characters win.
type globSpec struct {
	exact    bool
	literals int
}

func (a globSpec) compare(b globSpec) int {
	switch {
	case a.exact != b.exact:
		if a.exact {
			return 1
		}
		return -1
	case a.literals != b.literals:
		if a.literals > b.literals {
			return 1
		}
		return -1
	}
	return 0
}

// specificity orders matching rules: the target glob (the tool, resource
// or prompt; "*" for a rule that names only a server) first, then the
// server glob. The target is compared first because it is the finer thing:
// a rule about delete_* on every server says more about a call of
// fs__delete_file than a rule about everything on fs.
type specificity struct {
	target, server globSpec
}

func (a specificity) compare(b specificity) int {
	if c := a.target.compare(b.target); c != 0 {
		return c
	}
	return a.server.compare(b.server)
}

func compileName(pattern string) nameGlob {
	quoted := strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, `.*`)
	return nameGlob{
		pattern: pattern,
		re:      regexp.MustCompile(`^(?s:` + quoted + `)$`), // quoted text always compiles
		spec:    specOf(pattern),
	}
}

// specOf returns how specific a glob is; * is its only special character.
func specOf(pattern string) globSpec {
	return globSpec{
		exact:    !strings.Contains(pattern, "*"),
		literals: utf8.RuneCountInString(strings.ReplaceAll(pattern, "*", "")),
	}
}

func compileRule(at entry, r config.Rule) (*rule, error) {
	name := at.String()
	v := Verdict(r.Decision)
	switch v {
	case Allow, Ask, Deny:
	default:
		return nil, fmt.Errorf("%s: decision %q is not allow, ask or deny", name, r.Decision)
	}
	server, tool := r.Server, r.Tool
	if server == "" {
		server = "*"
	}
	if tool == "" {
		tool = "*"
	}
	cr := &rule{at: at, name: name, server: compileName(server), verdict: v}
	// A Rule built in Go may leave ToolGiven unset and still name a tool.
	toolNamed := r.ToolGiven || r.Tool != "" && r.Tool != "*"
	switch named := r.Resource != "" || r.Prompt != ""; {
	case named && (toolNamed || r.Resource != "" && r.Prompt != ""):
		return nil, fmt.Errorf("%s: names more than one of a tool, a resource and a prompt: write one rule for each", name)
	case named && len(r.Args) > 0:
		return nil, fmt.Errorf("%s: args constrain tool calls only: remove them from a rule about a resource or a prompt", name)
	case r.Resource != "":
		cr.kind, cr.resource = KindResource, uriGlob{pattern: r.Resource, spec: specOf(r.Resource)}
	case r.Prompt != "":
		cr.kind, cr.tool = KindPrompt, compileName(r.Prompt)
	default:
		cr.kind, cr.anyKind, cr.tool = KindTool, !toolNamed, compileName(tool)
	}
	for i, a := range r.Args {
		c, err := compileConstraint(fmt.Sprintf("args[%d]", i), a)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		cr.args = append(cr.args, c)
	}
	return cr, nil
}

// match reports whether the rule applies to a request, and how
// specifically. A rule that names only a server matches every request to
// it; any other matches requests of its kind only. A tool or prompt glob
// matches the local or the remote name, a resource glob the URI.
func (r *rule) match(req Request) (specificity, bool) {
	if !r.server.re.MatchString(req.Server) || !r.anyKind && r.kind != req.Kind {
		return specificity{}, false
	}
	target := r.tool.spec
	switch {
	case r.anyKind:
	case r.kind == KindResource:
		if !config.MatchResource(r.resource.pattern, req.Resource) {
			return specificity{}, false
		}
		target = r.resource.spec
	case !r.tool.re.MatchString(req.Tool) && !r.tool.re.MatchString(req.RemoteTool):
		return specificity{}, false
	}
	return specificity{target: target, server: r.server.spec}, true
}

// decide applies the rule to a request that it matches: its decision, or
// deny when a constraint fails. Constraints check tool calls only: a rule
// that names only a server decides a resource read or a prompt get by its
// decision alone.
func (r *rule) decide(req Request) opinion {
	if req.Kind != KindTool {
		return r.verdictOpinion()
	}
	for _, c := range r.args {
		if why := c.check(req.Arguments); why != "" {
			return opinion{verdict: Deny, rule: r.name,
				reason: fmt.Sprintf("denied by %s, %s: %s", r.name, c.name, why)}
		}
	}
	return r.verdictOpinion()
}

// verdictOpinion is the rule's decision, with its reason.
func (r *rule) verdictOpinion() opinion {
	var reason string
	switch r.verdict {
	case Allow:
		reason = "allowed by " + r.name
	case Ask:
		reason = r.name + " asks for a person's approval"
	default:
		reason = "denied by " + r.name
	}
	return opinion{verdict: r.verdict, rule: r.name, reason: reason}
}

// constraint is one compiled entry of a rule's args.
type constraint struct {
	name    string // "args[0] (airlock.yaml:16)"
	pointer string
	tokens  []string
	paths   *pathSet // nil without allow or deny
	enum    []string
	pattern *regexp.Regexp
	// patternText is the pattern as configured, for messages.
	patternText string
}

func compileConstraint(name string, a config.ArgConstraint) (*constraint, error) {
	if a.Source != "" {
		name += " (" + a.Source + ")"
	}
	tokens, err := parsePointer(a.Pointer)
	if err != nil {
		return nil, fmt.Errorf("%s: pointer %q: %w", name, a.Pointer, err)
	}
	c := &constraint{name: name, pointer: a.Pointer, tokens: tokens, enum: slices.Clone(a.Enum)}
	if len(a.Allow) > 0 || len(a.Deny) > 0 {
		if c.paths, err = compilePaths(a.Allow, a.Deny); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	if a.Pattern != "" {
		// The whole value must match: an unanchored pattern would let
		// "ok; rm -rf /" through a check for "ok".
		if c.pattern, err = regexp.Compile(`^(?:` + a.Pattern + `)$`); err != nil {
			return nil, fmt.Errorf("%s: pattern: %w", name, err)
		}
		c.patternText = a.Pattern
	}
	if c.paths == nil && len(c.enum) == 0 && c.pattern == nil {
		return nil, fmt.Errorf("%s: constrains nothing: give allow, deny, enum or pattern", name)
	}
	return c, nil
}

// check returns why the arguments fail the constraint, or "". A value that
// is missing or not a string fails: a constraint that cannot be evaluated
// denies. An array is checked element by element; every element must be a
// string that passes.
func (c *constraint) check(args map[string]any) string {
	v, ok := lookup(args, c.tokens)
	if !ok {
		return c.pointer + " is missing from the arguments"
	}
	if list, ok := v.([]any); ok {
		for i, e := range list {
			if why := c.checkValue(fmt.Sprintf("%s/%d", c.pointer, i), e); why != "" {
				return why
			}
		}
		return ""
	}
	return c.checkValue(c.pointer, v)
}

func (c *constraint) checkValue(ptr string, v any) string {
	s, ok := v.(string)
	if !ok {
		return fmt.Sprintf("%s is %s, not a string", ptr, typeName(v))
	}
	if c.paths != nil {
		if why := c.paths.check(s); why != "" {
			return ptr + " " + why
		}
	}
	if len(c.enum) > 0 && !slices.Contains(c.enum, s) {
		return fmt.Sprintf("%s is not one of %s", ptr, strings.Join(quoteAll(c.enum), ", "))
	}
	if c.pattern != nil && !c.pattern.MatchString(s) {
		return fmt.Sprintf("%s does not match the pattern %q", ptr, c.patternText)
	}
	return ""
}

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// typeName names the JSON type of a decoded value for messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	if _, ok, _ := canonical.NumberOf(v); ok {
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}

// parsePointer splits a JSON Pointer (RFC 6901) into its reference tokens.
func parsePointer(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("a JSON Pointer into the arguments starts with /")
	}
	parts := strings.Split(p[1:], "/")
	for i, t := range parts {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 == len(t) || t[j+1] != '0' && t[j+1] != '1') {
				return nil, fmt.Errorf("~ must be followed by 0 or 1")
			}
		}
		// ~1 first, so that ~01 is "~1", not "/".
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

// lookup follows tokens into a decoded JSON value. Array indexes are
// decimal without leading zeros; "-" (past the end) finds nothing.
func lookup(args map[string]any, tokens []string) (any, bool) {
	var v any = args
	if args == nil {
		return nil, false
	}
	for _, t := range tokens {
		switch x := v.(type) {
		case map[string]any:
			e, ok := x[t]
			if !ok {
				return nil, false
			}
			v = e
		case []any:
			i, ok := arrayIndex(t)
			if !ok || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func arrayIndex(t string) (int, bool) {
	if t == "" || len(t) > 9 || len(t) > 1 && t[0] == '0' {
		return 0, false
	}
	n := 0
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return 0, false
		}
		n = n*10 + int(t[i]-'0')
	}
	return n, true
}
