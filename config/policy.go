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

// Rule decides the requests it matches: tool calls, resource reads or
// prompt gets. Server, Tool and Prompt are globs in which * matches any run
// of characters; Tool matches a tool's local name or the server's own name
// for it, Prompt likewise for a prompt. Resource is a URI glob (see
// [MatchResource]).
//
// A rule names at most one of a tool, a resource and a prompt, and matches
// only requests of that kind: a rule with Resource set matches resource
// reads, one with Prompt set prompt gets, and one that names a tool
// (ToolGiven, or a Tool other than "" and "*") tool calls. A rule that names
// none of them, only a server, matches every kind of request to the
// servers its glob matches.
type Rule struct {
	// Server is a glob over server ids; "*" when the entry leaves it out.
	Server string
	// Tool is a glob over tool names; "*" when the entry leaves it out.
	Tool string
	// ToolGiven records that the entry named a tool (tool: "*" included),
	// which makes it a rule about tool calls only.
	ToolGiven bool
	// Resource is a URI glob over the resources a read names, or "" when
	// the entry names no resource.
	Resource string
	// Prompt is a glob over prompt names, or "" when the entry names no
	// prompt.
	Prompt string
	// Decision is "allow", "ask" or "deny".
	Decision string
	// Args constrain the arguments of a matching tool call; a call that
	// fails one is denied. A rule with Resource or Prompt has none, and
	// a rule that names only a server checks them on tool calls alone.
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
			"resource": "in an entry under policy.rules", "prompt": "in an entry under policy.rules",
			"effect": "in an entry under policy.tools", "decision": "in an entry under policy.rules",
			"args": "in an entry under policy.rules", "command": "in an entry under policy.hooks",
		},
	}
	toolClassKeys = keySet{
		known: []string{"server", "tool", "effect", "idempotent"},
		elsewhere: map[string]string{
			"decision": "in an entry under policy.rules", "args": "in an entry under policy.rules",
			"resource": "in an entry under policy.rules", "prompt": "in an entry under policy.rules",
		},
	}
	ruleKeys = keySet{
		known: []string{"server", "tool", "resource", "prompt", "decision", "args"},
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

// policyEntries are the policy entries that name servers, as read, for
// checkPolicy.
type policyEntries struct {
	classes []entryOf[ToolClass]
	rules   []entryOf[Rule]
}

// policy reads the policy: mapping.
func (r *yamlReader) policy(n *yaml.Node, pol *Policy) policyEntries {
	var read policyEntries
	f, ok := r.fields(n, "policy", policyKeys)
	if !ok {
		return read
	}
	if p, ok := f["tools"]; ok {
		read.classes = readEntries(r, p.val, "policy.tools", "", toolClassKeys, r.toolClass)
		pol.Tools = okValues(read.classes)
	}
	if p, ok := f["rules"]; ok {
		read.rules = readEntries(r, p.val, "policy.rules", "", ruleKeys, r.rule)
		pol.Rules = okValues(read.rules)
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
		pol.Hooks = okValues(readEntries(r, p.val, "policy.hooks", "", hookKeys, r.hook))
	}
	return read
}

func (r *yamlReader) toolClass(e *entry) ToolClass {
	c := ToolClass{Source: source(r.file, e.line)}
	r.require(e, "server", "is required: give the id of the server")
	c.Server, _ = r.keyText(e, "server", checkID)
	r.require(e, "tool", "is required: give the server's own name for the tool")
	c.Tool, _ = r.keyText(e, "tool", checkExactTool)
	r.require(e, "effect", "is required: read, write or external")
	c.Effect, _ = r.keyText(e, "effect", oneOf("read", "write", "external"))
	if p, ok := e.keys["idempotent"]; ok {
		c.Idempotent, _ = r.boolean(p.val, e.path+".idempotent")
	}
	return c
}

// oneOf returns a check that a value is one of values.
func oneOf(values ...string) func(string) string {
	return func(v string) string {
		if slices.Contains(values, v) {
			return ""
		}
		return fmt.Sprintf("must be %s or %s, not %s", strings.Join(values[:len(values)-1], ", "), values[len(values)-1], show(v))
	}
}

// checkExactTool checks a tool name that must be given exactly.
func checkExactTool(tool string) string {
	if strings.Contains(tool, "*") {
		return fmt.Sprintf("%s: patterns are not supported here: classify each tool by its exact name, so that a tool a server adds later is not classified without review", show(tool))
	}
	return checkTool(tool)
}

func (r *yamlReader) rule(e *entry) Rule {
	rule := Rule{Server: "*", Tool: "*", Source: source(r.file, e.line)}
	if s, ok := r.keyText(e, "server", checkServerGlob); ok {
		rule.Server = s
	}
	if t, ok := r.keyText(e, "tool", checkToolGlob); ok {
		rule.Tool, rule.ToolGiven = t, true
	}
	rule.Resource, _ = r.keyText(e, "resource", checkRuleResource)
	rule.Prompt, _ = r.keyText(e, "prompt", checkPromptGlob)
	r.ruleKind(e)
	r.require(e, "decision", "is required: allow, ask or deny")
	rule.Decision, _ = r.keyText(e, "decision", oneOf("allow", "ask", "deny"))
	if _, ok := e.keys["resource"]; ok {
		r.noArgs(e, "resource reads")
	} else if _, ok := e.keys["prompt"]; ok {
		r.noArgs(e, "prompt gets")
	}
	if p, ok := e.keys["args"]; ok {
		// A deny rule's args are refused by checkPolicy, unread.
		r.note(e, "args")
		if rule.Decision != "deny" {
			rule.Args = r.argConstraints(p.val, e.path+".args")
		}
	}
	return rule
}

// ruleKind reports a rule that names more than one of tool, resource and
// prompt: each kind of request needs a rule of its own.
func (r *yamlReader) ruleKind(e *entry) {
	p, hasResource := e.keys["resource"]
	q, hasPrompt := e.keys["prompt"]
	_, hasTool := e.keys["tool"]
	switch {
	case hasTool && hasResource:
		r.errorf(p.line, e.path+".resource", "a rule names a tool or a resource, not both: write one rule for the tool calls and one for the resource reads")
	case hasTool && hasPrompt:
		r.errorf(q.line, e.path+".prompt", "a rule names a tool or a prompt, not both: write one rule for the tool calls and one for the prompt gets")
	case hasResource && hasPrompt:
		r.errorf(q.line, e.path+".prompt", "a rule names a resource or a prompt, not both: write one rule for the resource reads and one for the prompt gets")
	}
}

// noArgs reports args on a rule about resource reads or prompt gets (what),
// and leaves them unread: only tool calls have arguments a rule checks.
func (r *yamlReader) noArgs(e *entry, what string) {
	if p, ok := e.keys["args"]; ok {
		r.errorf(p.line, e.path+".args", "constrains a tool call's arguments, and this rule is about %s: remove args", what)
		delete(e.keys, "args")
	}
}

// checkRuleResource checks a rule's resource glob.
func checkRuleResource(glob string) string {
	if glob == "" {
		return `must not be empty: give a URI glob such as "file:///docs/**", or "*" for every resource`
	}
	return checkNameChars(glob)
}

// checkPromptGlob checks a rule's prompt glob.
func checkPromptGlob(prompt string) string {
	if prompt == "" {
		return `must not be empty: give a prompt name, or a glob such as "*" for every prompt`
	}
	return checkNameChars(prompt)
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
	items, ok := r.list(n, path, "must list at least one constraint; leave the key out for none")
	if !ok {
		return nil
	}
	var out []ArgConstraint
	for e := range r.mappings(items, argKeys) {
		c := ArgConstraint{Source: source(r.file, e.line)}
		r.require(e, "pointer", "is required: give a JSON Pointer into the arguments, such as /path")
		c.Pointer, _ = r.keyText(e, "pointer", checkPointer)
		if p, ok := e.keys["allow"]; ok {
			c.Allow = r.stringList(p.val, e.path+".allow", "glob", checkAllowGlob)
		}
		if p, ok := e.keys["deny"]; ok {
			c.Deny = r.stringList(p.val, e.path+".deny", "glob", checkPathGlob)
		}
		if p, ok := e.keys["enum"]; ok {
			c.Enum = r.stringList(p.val, e.path+".enum", "value", checkString)
		}
		c.Pattern, _ = r.keyText(e, "pattern", checkPattern)
		if !slices.ContainsFunc([]string{"allow", "deny", "enum", "pattern"}, func(k string) bool { _, ok := e.keys[k]; return ok }) {
			r.errorf(e.line, e.path, "constrains nothing: give allow or deny (path globs), enum or pattern")
		}
		out = append(out, c)
	}
	return out
}

// stringList reads a non-empty list of distinct strings, each checked by
// check.
func (r *yamlReader) stringList(n *yaml.Node, path, what string, check func(string) string) []string {
	items, ok := r.list(n, path, fmt.Sprintf("must list at least one %s; leave the key out for none", what))
	if !ok {
		return nil
	}
	if len(items) > maxListItems {
		r.errorf(resolve(n).Line, path, "lists more than %d entries", maxListItems)
		return nil
	}
	out, _ := r.distinct(items, checked(check))
	return out
}

func (r *yamlReader) hook(e *entry) Hook {
	h := Hook{Timeout: DefaultHookTimeout, Source: source(r.file, e.line)}
	if p, ok := r.require(e, "command", "is required: give the program and its arguments, such as [./check.sh]"); ok {
		h.Command = r.hookCommand(p.val, e.path+".command")
	}
	if p, ok := e.keys["timeout"]; ok {
		h.Timeout, _ = r.timeout(p.val, e.path+".timeout")
	}
	return h
}

func (r *yamlReader) hookCommand(n *yaml.Node, path string) []string {
	if rn := resolve(n); rn.Kind == yaml.ScalarNode && !isNull(rn) {
		r.errorf(rn.Line, path, "must be a list of the program and its arguments, such as [%s]: no shell splits it", rn.Value)
		return nil
	}
	items, ok := r.list(n, path, "must not be empty: give the program and its arguments, such as [./check.sh]")
	if !ok {
		return nil
	}
	out := make([]string, 0, len(items))
	for it, a := range r.texts(items) {
		if msg := checkString(a); msg != "" {
			r.errorf(it.line, it.path, "%s", msg)
			continue
		}
		if it == items[0] && strings.TrimSpace(a) == "" {
			r.errorf(it.line, it.path, "must not be empty: give the program to run")
			continue
		}
		out = append(out, a)
	}
	return out
}

func (r *yamlReader) approvals(p pair, a *Approvals) {
	if f, ok := r.fields(p.val, "approvals", approvalKeys); ok {
		r.timeoutKey(f, "approvals", "ttl", &a.TTL)
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
	items, ok := r.list(n, path, "")
	if !ok {
		return nil, nil
	}
	names, lines := r.distinct(items, func(t string) (string, string) {
		switch {
		case t == "*":
		case strings.Contains(t, "*"):
			return "", fmt.Sprintf(`%s: patterns are not supported: list each tool, or use ["*"] alone for every tool`, show(t))
		case !localNamePattern.MatchString(t):
			return "", fmt.Sprintf("%s is not a local tool name: use the name a model sees, such as fs__read_file (see airlock tools)", show(t))
		}
		return t, ""
	})
	for _, line := range lines {
		sources = append(sources, source(r.file, line))
	}
	r.starAlone(n, path, names, "records", "tool")
	return names, sources
}
