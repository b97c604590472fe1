package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Policy is the policy: section: how tools are classified, which calls run,
// which ask a person first and which are refused, and the command hooks.
// Package policy compiles it; this package only checks that it is well
// formed, so that every mistake is reported with its line.
type Policy struct {
	// Tools classifies tools by effect, in file order.
	Tools []ToolClass
	// Rules decide calls, in file order. Package policy names a rule by its
	// index here and its Source, as in "policy.rules[2] (airlock.yaml:14)".
	Rules []Rule
	// Cedar is the file of Cedar policies as written, relative to
	// Config.Dir unless absolute, or "" for none. It was verified to be a
	// regular file when the configuration was read.
	Cedar string
	// CedarSource is "file:line" of the cedar key, or "".
	CedarSource string
	// Hooks are command hooks, run in file order before a call.
	Hooks []Hook
}

// ToolClass classifies one tool. A server's own annotations never lower the
// effect a tool gets; only an entry here can.
type ToolClass struct {
	// Server is the id of a configured server.
	Server string
	// Tool is the server's own name for the tool, exactly (no patterns: a
	// tool a server adds later must not be classified without review).
	Tool string
	// Effect is "read", "write" or "external".
	Effect string
	// Idempotent marks a tool that may be retried once when the outcome of
	// a call is unknown.
	Idempotent bool
	// Source is "file:line" of the entry.
	Source string
}

// Rule decides the calls it matches. Server and Tool are globs in which *
// matches any run of characters; Tool matches a tool's local name or the
// server's own name for it.
type Rule struct {
	// Server is a glob over server ids; "*" when the entry leaves it out.
	Server string
	// Tool is a glob over tool names; "*" when the entry leaves it out.
	Tool string
	// Decision is "allow", "ask" or "deny".
	Decision string
	// Args constrain the arguments of a matching call; a call that fails
	// one is denied.
	Args []ArgConstraint
	// Source is "file:line" of the entry.
	Source string
}

// ArgConstraint constrains the value at one JSON Pointer of a call's
// arguments. At least one of Allow, Deny, Enum and Pattern is set.
type ArgConstraint struct {
	// Pointer is a JSON Pointer (RFC 6901) into the arguments, such as
	// /path; it starts with /.
	Pointer string
	// Allow and Deny are path globs (** crosses directories). They are
	// clean: no empty, . or .. segments and no trailing slash.
	Allow, Deny []string
	// Enum lists the values a string may take.
	Enum []string
	// Pattern is an RE2 regular expression the whole string must match.
	Pattern string
	// Source is "file:line" of the entry.
	Source string
}

// Hook is a command hook: a program that gets the call as JSON on stdin and
// answers allow, deny or ask on stdout.
type Hook struct {
	// Command is the program and its arguments, passed as written: no
	// shell, no variable expansion.
	Command []string
	// Timeout bounds one run; a hook that times out denies. Default 5s.
	Timeout time.Duration
	// Source is "file:line" of the entry.
	Source string
}

// Approvals configures requests for a person's approval.
type Approvals struct {
	// TTL is how long a request, and the grant it becomes, stays valid.
	// Default 1h.
	TTL time.Duration
}

// Audit configures what the audit trail keeps.
type Audit struct {
	// RecordValues lists the local names of tools whose argument and result
	// values are kept (redacted of anything that looks like a credential);
	// other tools are recorded as shape and hash. ["*"] means every tool.
	RecordValues []string
	// RecordValueSources holds, for each entry of RecordValues, the
	// "file:line" where it was written, for messages.
	RecordValueSources []string
}

var (
	policyKeys = keySet{
		known: []string{"tools", "rules", "cedar", "hooks"},
		elsewhere: map[string]string{
			"server": "in an entry under policy.tools or policy.rules", "tool": "in an entry under policy.tools or policy.rules",
			"effect": "in an entry under policy.tools", "decision": "in an entry under policy.rules",
			"args": "in an entry under policy.rules", "command": "in an entry under policy.hooks",
		},
	}
	toolClassKeys = keySet{
		known: []string{"server", "tool", "effect", "idempotent"},
		elsewhere: map[string]string{
			"decision": "in an entry under policy.rules", "args": "in an entry under policy.rules",
		},
	}
	ruleKeys = keySet{
		known: []string{"server", "tool", "decision", "args"},
		elsewhere: map[string]string{
			"effect": "in an entry under policy.tools", "idempotent": "in an entry under policy.tools",
			"pointer": "in an entry under args:", "allow": "in an entry under args:",
			"deny": "in an entry under args:", "enum": "in an entry under args:", "pattern": "in an entry under args:",
		},
	}
	argKeys  = keySet{known: []string{"pointer", "allow", "deny", "enum", "pattern"}}
	hookKeys = keySet{known: []string{"command", "timeout"}}
	// approvalKeys and auditKeys each hold one key today; unknown keys are
	// still refused rather than ignored.
	approvalKeys = keySet{known: []string{"ttl"}}
	auditKeys    = keySet{known: []string{"record_values"}}
)

// maxListItems bounds the entries of one constraint list.
const maxListItems = 1000

// policy reads the policy: mapping. ids holds every configured server, so
// that an entry naming none is refused: it would silently never apply.
func (r *yamlReader) policy(n *yaml.Node, pol *Policy, ids *registry) {
	f, ok := r.fields(n, "policy", policyKeys)
	if !ok {
		return
	}
	if p, ok := f["tools"]; ok {
		pol.Tools = r.toolClasses(p, ids)
	}
	if p, ok := f["rules"]; ok {
		pol.Rules = r.rules(p, ids)
	}
	if p, ok := f["cedar"]; ok {
		if file, ok := r.text(p.val, "policy.cedar"); ok {
			if msg := checkCedarFile(r.dir, file); msg != "" {
				r.errorf(p.line, "policy.cedar", "%s", msg)
			} else {
				pol.Cedar, pol.CedarSource = file, source(r.file, p.line)
			}
		}
	}
	if p, ok := f["hooks"]; ok {
		pol.Hooks = r.hooks(p)
	}
}

func (r *yamlReader) toolClasses(p pair, ids *registry) []ToolClass {
	items, ok := r.list(p.val, "policy.tools")
	if !ok {
		return nil
	}
	var out []ToolClass
	seen := make(map[[2]string]int)
	for i, item := range items {
		path := fmt.Sprintf("policy.tools[%d]", i)
		line := resolve(item).Line
		f, ok := r.fields(item, path, toolClassKeys)
		if !ok {
			continue
		}
		before := len(r.probs.list)
		c := ToolClass{Source: source(r.file, line)}
		if p, ok := f["server"]; ok {
			if s, ok := r.text(p.val, path+".server"); ok {
				if msg := checkID(s); msg != "" {
					r.errorf(p.line, path+".server", "%s", msg)
				} else if !ids.has(s) {
					r.errorf(p.line, path+".server", "there is no server %q (servers: %s)", s, ids.list())
				}
				c.Server = s
			}
		} else {
			r.errorf(line, path+".server", "is required: give the id of the server")
		}
		if p, ok := f["tool"]; ok {
			if t, ok := r.text(p.val, path+".tool"); ok {
				if msg := checkExactTool(t); msg != "" {
					r.errorf(p.line, path+".tool", "%s", msg)
				}
				c.Tool = t
			}
		} else {
			r.errorf(line, path+".tool", "is required: give the server's own name for the tool")
		}
		if p, ok := f["effect"]; ok {
			if e, ok := r.text(p.val, path+".effect"); ok {
				if !slices.Contains([]string{"read", "write", "external"}, e) {
					r.errorf(p.line, path+".effect", "must be read, write or external, not %s", show(e))
				}
				c.Effect = e
			}
		} else {
			r.errorf(line, path+".effect", "is required: read, write or external")
		}
		if p, ok := f["idempotent"]; ok {
			c.Idempotent, _ = r.boolean(p.val, path+".idempotent")
		}
		if len(r.probs.list) > before {
			continue
		}
		key := [2]string{c.Server, c.Tool}
		if first, dup := seen[key]; dup {
			r.errorf(line, path, "tool %q of server %q is already classified at line %d", c.Tool, c.Server, first)
			continue
		}
		seen[key] = line
		out = append(out, c)
	}
	return out
}

// checkExactTool checks a tool name that must be given exactly.
func checkExactTool(tool string) string {
	if strings.Contains(tool, "*") {
		return fmt.Sprintf("%s: patterns are not supported here: classify each tool by its exact name, so that a tool a server adds later is not classified without review", show(tool))
	}
	return checkTool(tool)
}

func (r *yamlReader) rules(p pair, ids *registry) []Rule {
	items, ok := r.list(p.val, "policy.rules")
	if !ok {
		return nil
	}
	var out []Rule
	for i, item := range items {
		path := fmt.Sprintf("policy.rules[%d]", i)
		line := resolve(item).Line
		f, ok := r.fields(item, path, ruleKeys)
		if !ok {
			continue
		}
		before := len(r.probs.list)
		rule := Rule{Server: "*", Tool: "*", Source: source(r.file, line)}
		if p, ok := f["server"]; ok {
			if s, ok := r.text(p.val, path+".server"); ok {
				if msg := checkServerGlob(s); msg != "" {
					r.errorf(p.line, path+".server", "%s", msg)
				} else if !ids.matches(s) {
					r.errorf(p.line, path+".server", "%s matches no server (servers: %s)", show(s), ids.list())
				}
				rule.Server = s
			}
		}
		if p, ok := f["tool"]; ok {
			if t, ok := r.text(p.val, path+".tool"); ok {
				if msg := checkToolGlob(t); msg != "" {
					r.errorf(p.line, path+".tool", "%s", msg)
				}
				rule.Tool = t
			}
		}
		if p, ok := f["decision"]; ok {
			if d, ok := r.text(p.val, path+".decision"); ok {
				if !slices.Contains([]string{"allow", "ask", "deny"}, d) {
					r.errorf(p.line, path+".decision", "must be allow, ask or deny, not %s", show(d))
				}
				rule.Decision = d
			}
		} else {
			r.errorf(line, path+".decision", "is required: allow, ask or deny")
		}
		if p, ok := f["args"]; ok {
			if rule.Decision == "deny" {
				r.errorf(p.line, path+".args", "a deny rule denies whatever the arguments: remove args, or make the rule allow or ask")
			} else {
				rule.Args = r.argConstraints(p.val, path+".args")
			}
		}
		if len(r.probs.list) > before {
			continue
		}
		out = append(out, rule)
	}
	return out
}

// checkToolGlob checks a rule's tool glob.
func checkToolGlob(tool string) string {
	if tool == "" {
		return "must not be empty: leave the key out to match every tool"
	}
	return checkNameChars(tool)
}

// checkServerGlob checks a server glob: an id in which * may stand for any
// run of characters.
func checkServerGlob(s string) string {
	if s == "" {
		return "must not be empty: leave the key out to match every server"
	}
	if strings.Contains(s, "*") {
		if lit := strings.ReplaceAll(s, "*", ""); lit != "" && !idPattern.MatchString(lit) {
			return fmt.Sprintf("%s is not a server id or a pattern of one: use letters, digits, _, - and *", show(s))
		}
		return ""
	}
	return checkID(s)
}

func (r *yamlReader) argConstraints(n *yaml.Node, path string) []ArgConstraint {
	items, ok := r.list(n, path)
	if !ok {
		return nil
	}
	if len(items) == 0 {
		r.errorf(resolve(n).Line, path, "must list at least one constraint; leave the key out for none")
		return nil
	}
	var out []ArgConstraint
	for i, item := range items {
		ip := fmt.Sprintf("%s[%d]", path, i)
		line := resolve(item).Line
		f, ok := r.fields(item, ip, argKeys)
		if !ok {
			continue
		}
		c := ArgConstraint{Source: source(r.file, line)}
		if p, ok := f["pointer"]; ok {
			if ptr, ok := r.text(p.val, ip+".pointer"); ok {
				if msg := checkPointer(ptr); msg != "" {
					r.errorf(p.line, ip+".pointer", "%s", msg)
				}
				c.Pointer = ptr
			}
		} else {
			r.errorf(line, ip+".pointer", "is required: give a JSON Pointer into the arguments, such as /path")
		}
		if p, ok := f["allow"]; ok {
			c.Allow = r.stringList(p.val, ip+".allow", "glob", checkAllowGlob)
		}
		if p, ok := f["deny"]; ok {
			c.Deny = r.stringList(p.val, ip+".deny", "glob", checkPathGlob)
		}
		if p, ok := f["enum"]; ok {
			c.Enum = r.enum(p.val, ip+".enum")
		}
		if p, ok := f["pattern"]; ok {
			if pat, ok := r.text(p.val, ip+".pattern"); ok {
				if msg := checkPattern(pat); msg != "" {
					r.errorf(p.line, ip+".pattern", "%s", msg)
				}
				c.Pattern = pat
			}
		}
		_, a := f["allow"]
		_, d := f["deny"]
		_, e := f["enum"]
		_, pt := f["pattern"]
		if !a && !d && !e && !pt {
			r.errorf(line, ip, "constrains nothing: give allow or deny (path globs), enum or pattern")
		}
		out = append(out, c)
	}
	return out
}

func (r *yamlReader) enum(n *yaml.Node, path string) []string {
	return r.stringList(n, path, "value", checkString)
}

// stringList reads a non-empty list of distinct strings, each checked by
// check.
func (r *yamlReader) stringList(n *yaml.Node, path, what string, check func(string) string) []string {
	items, ok := r.list(n, path)
	if !ok {
		return nil
	}
	switch {
	case len(items) == 0:
		r.errorf(resolve(n).Line, path, "must list at least one %s; leave the key out for none", what)
		return nil
	case len(items) > maxListItems:
		r.errorf(resolve(n).Line, path, "lists more than %d entries", maxListItems)
		return nil
	}
	out := make([]string, 0, len(items))
	seen := make(map[string]int)
	for i, item := range items {
		ip := fmt.Sprintf("%s[%d]", path, i)
		v, ok := r.text(item, ip)
		if !ok {
			continue
		}
		line := resolve(item).Line
		if msg := check(v); msg != "" {
			r.errorf(line, ip, "%s", msg)
			continue
		}
		if first, dup := seen[v]; dup {
			r.errorf(line, ip, "%s is listed twice (first at line %d)", show(v), first)
			continue
		}
		seen[v] = line
		out = append(out, v)
	}
	return out
}

func (r *yamlReader) hooks(p pair) []Hook {
	items, ok := r.list(p.val, "policy.hooks")
	if !ok {
		return nil
	}
	var out []Hook
	for i, item := range items {
		path := fmt.Sprintf("policy.hooks[%d]", i)
		line := resolve(item).Line
		f, ok := r.fields(item, path, hookKeys)
		if !ok {
			continue
		}
		before := len(r.probs.list)
		h := Hook{Timeout: defaultHookTimeout, Source: source(r.file, line)}
		if p, ok := f["command"]; ok {
			h.Command = r.hookCommand(p.val, path+".command")
		} else {
			r.errorf(line, path+".command", "is required: give the program and its arguments, such as [./check.sh]")
		}
		if p, ok := f["timeout"]; ok {
			h.Timeout, _ = r.timeout(p.val, path+".timeout")
		}
		if len(r.probs.list) > before {
			continue
		}
		out = append(out, h)
	}
	return out
}

func (r *yamlReader) hookCommand(n *yaml.Node, path string) []string {
	if rn := resolve(n); rn.Kind == yaml.ScalarNode && !isNull(rn) {
		r.errorf(rn.Line, path, "must be a list of the program and its arguments, such as [%s]: no shell splits it", rn.Value)
		return nil
	}
	items, ok := r.list(n, path)
	if !ok {
		return nil
	}
	if len(items) == 0 {
		r.errorf(resolve(n).Line, path, "must not be empty: give the program and its arguments, such as [./check.sh]")
		return nil
	}
	out := make([]string, 0, len(items))
	for i, item := range items {
		ip := fmt.Sprintf("%s[%d]", path, i)
		a, ok := r.text(item, ip)
		if !ok {
			continue
		}
		if msg := checkString(a); msg != "" {
			r.errorf(resolve(item).Line, ip, "%s", msg)
			continue
		}
		if i == 0 && strings.TrimSpace(a) == "" {
			r.errorf(resolve(item).Line, ip, "must not be empty: give the program to run")
			continue
		}
		out = append(out, a)
	}
	return out
}

func (r *yamlReader) approvals(p pair, a *Approvals) {
	f, ok := r.fields(p.val, "approvals", approvalKeys)
	if !ok {
		return
	}
	if p, ok := f["ttl"]; ok {
		if d, ok := r.timeout(p.val, "approvals.ttl"); ok {
			a.TTL = d
		}
	}
}

func (r *yamlReader) audit(p pair, a *Audit) {
	f, ok := r.fields(p.val, "audit", auditKeys)
	if !ok {
		return
	}
	if p, ok := f["record_values"]; ok {
		a.RecordValues, a.RecordValueSources = r.localToolList(p.val, "audit.record_values")
	}
}

// localToolList reads a list of local tool names, or ["*"], and where each
// was written.
func (r *yamlReader) localToolList(n *yaml.Node, path string) (names, sources []string) {
	items, ok := r.list(n, path)
	if !ok {
		return nil, nil
	}
	out := make([]string, 0, len(items))
	seen := make(map[string]int)
	star := false
	for i, item := range items {
		ip := fmt.Sprintf("%s[%d]", path, i)
		t, ok := r.text(item, ip)
		if !ok {
			continue
		}
		line := resolve(item).Line
		switch {
		case t == "*":
			star = true
		case strings.Contains(t, "*"):
			r.errorf(line, ip, `%s: patterns are not supported: list each tool, or use ["*"] alone for every tool`, show(t))
			continue
		case !localNamePattern.MatchString(t):
			r.errorf(line, ip, "%s is not a local tool name: use the name a model sees, such as fs__read_file (see airlock tools)", show(t))
			continue
		}
		if first, dup := seen[t]; dup {
			r.errorf(line, ip, "%s is listed twice (first at line %d)", show(t), first)
			continue
		}
		seen[t] = line
		out = append(out, t)
		sources = append(sources, source(r.file, line))
	}
	if star && len(out) > 1 {
		r.errorf(resolve(n).Line, path, `"*" records every tool and must be alone: write ["*"] or list the tools`)
	}
	return out, sources
}
