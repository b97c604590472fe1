package policy

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/config"
)

// Effect is what a tool may do to the world, as local policy sees it.
type Effect string

// The effects. Every MCP tool is External until policy.tools says
// otherwise.
const (
	Read     Effect = "read"
	Write    Effect = "write"
	External Effect = "external"
)

// Verdict is what happens to a call.
type Verdict string

// The verdicts, from the least strict to the strictest.
const (
	Allow Verdict = "allow" // the call runs
	Ask   Verdict = "ask"   // a person approves the call first
	Deny  Verdict = "deny"  // the call is refused; nothing is sent
)

// rank orders verdicts by strictness. An unknown verdict ranks as Deny, so
// that a mistake can only make a decision stricter.
func (v Verdict) rank() int {
	switch v {
	case Allow:
		return 0
	case Ask:
		return 1
	}
	return 2
}

// Stricter returns the stricter of a and b (deny over ask over allow), for
// combining decisions such as a hook's with the policy's.
func Stricter(a, b Verdict) Verdict {
	if b.rank() > a.rank() {
		return b
	}
	return a
}

// Principal is who a call is made for.
type Principal struct {
	Tenant string
	User   string
}

// Kind is what a request asks of a server.
type Kind string

// The kinds of request.
const (
	KindTool     Kind = ""         // a tool call (tools/call)
	KindResource Kind = "resource" // a resource read (resources/read)
	KindPrompt   Kind = "prompt"   // a prompt get (prompts/get)
)

// Request is one call, resource read or prompt get to decide.
type Request struct {
	// Kind is what the request asks: a tool call (the zero value), a
	// resource read or a prompt get.
	Kind Kind
	// Server is the server id.
	Server string
	// Tool is the tool's local name (fs__write_file), RemoteTool the
	// server's own name for it (write_file). For a prompt get they are the
	// prompt's local name and the server's own name for it; for a resource
	// read they are empty.
	Tool, RemoteTool string
	// Resource is the URI of the resource a read names (KindResource
	// only).
	Resource string
	// Arguments are the call's arguments as the host decoded them strictly:
	// JSON objects as map[string]any, arrays as []any, numbers as
	// json.Number. For a prompt get they are the prompt's arguments, each
	// a string; a resource read has none.
	Arguments map[string]any
	// Principal is who the call is made for.
	Principal Principal
	// Annotations are the server's hints about the tool. They never change
	// a decision or an effect; [Summary] shows them to a person, marked as
	// hints.
	Annotations *mcp.ToolAnnotations
}

// Decision is what policy decided about a call, and why.
type Decision struct {
	// Verdict is allow, ask or deny.
	Verdict Verdict
	// Effect is the tool's effect and Idempotent whether it may be retried
	// once when an outcome is unknown; both come from policy.tools alone.
	// A resource read and a prompt get are Read and idempotent.
	Effect     Effect
	Idempotent bool
	// Rule names what decided: "policy.rules[2] (airlock.yaml:14)", a Cedar
	// policy such as `cedar policy "no-env" (policies.cedar:6)`, or
	// "default" when nothing matched.
	Rule string
	// Reason says why, in a sentence for the person or model reading it.
	// It never quotes argument values, which may be secrets.
	Reason string
}

// Policy is a compiled policy. It is immutable and safe for concurrent use.
// A nil *Policy is the default policy: no classification, no rules.
type Policy struct {
	classes    map[classKey]class
	classOrder []classKey // policy.tools in configuration order
	rules      []*rule
	cedar      *cedarPolicies // nil when there is no Cedar file
}

type classKey struct{ server, tool string }

type class struct {
	effect     Effect
	idempotent bool
	at         entry // the policy.tools entry, for warnings
}

// entry names a configuration entry: "policy.rules[2]" and where it was
// written, "airlock.yaml:14".
type entry struct {
	name, source string
}

// New compiles p. dir is the directory that the Cedar file's path is
// relative to (config.Config.Dir). A nil p is the default policy. Errors
// name the entry, as in "policy.rules[2] (airlock.yaml:14): …".
func New(p *config.Policy, dir string) (*Policy, error) {
	pol := &Policy{classes: make(map[classKey]class)}
	if p == nil {
		return pol, nil
	}
	for i, c := range p.Tools {
		name := entry{fmt.Sprintf("policy.tools[%d]", i), c.Source}
		e := Effect(c.Effect)
		switch e {
		case Read, Write, External:
		default:
			return nil, fmt.Errorf("%s: effect %q is not read, write or external", name, c.Effect)
		}
		k := classKey{c.Server, c.Tool}
		if _, dup := pol.classes[k]; dup {
			return nil, fmt.Errorf("%s: tool %q of server %q is classified twice", name, c.Tool, c.Server)
		}
		pol.classOrder = append(pol.classOrder, k)
		pol.classes[k] = class{effect: e, idempotent: c.Idempotent, at: entry{fmt.Sprintf("policy.tools[%d]", i), c.Source}}
	}
	for i, r := range p.Rules {
		cr, err := compileRule(entry{fmt.Sprintf("policy.rules[%d]", i), r.Source}, r)
		if err != nil {
			return nil, err
		}
		pol.rules = append(pol.rules, cr)
	}
	if p.Cedar != "" {
		c, err := loadCedar(dir, p.Cedar)
		if err != nil {
			where := "policy.cedar"
			if p.CedarSource != "" {
				where += " (" + p.CedarSource + ")"
			}
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		pol.cedar = c
	}
	return pol, nil
}

// String names the entry for messages and Decision.Rule:
// "policy.rules[2] (airlock.yaml:14)".
func (e entry) String() string {
	if e.source == "" {
		return e.name
	}
	return e.name + " (" + e.source + ")"
}

// Classify returns the effect of a tool and whether it is idempotent, as
// policy.tools says: External and false for a tool it does not list. The
// server's annotations are no input: a server cannot lower its own tool's
// effect.
func (p *Policy) Classify(server, remoteTool string) (effect Effect, idempotent bool) {
	if p != nil {
		if c, ok := p.classes[classKey{server, remoteTool}]; ok {
			return c.effect, c.idempotent
		}
	}
	return External, false
}

// opinion is what one source (the rules, or Cedar) says about a call.
type opinion struct {
	verdict Verdict
	rule    string
	reason  string
}

// Decide decides a tool call, a resource read or a prompt get; see the
// package documentation for the rules.
func (p *Policy) Decide(req Request) Decision {
	effect, idem := Read, true
	if req.Kind == KindTool {
		effect, idem = p.Classify(req.Server, req.RemoteTool)
	}
	d := Decision{Effect: effect, Idempotent: idem}

	var opinions []opinion
	if op, ok := p.decideRules(req); ok {
		opinions = append(opinions, op)
	}
	if p != nil && p.cedar != nil {
		if op, ok := p.cedar.decide(req, effect); ok {
			opinions = append(opinions, op)
		}
	}
	if len(opinions) == 0 {
		d.Verdict, d.Rule, d.Reason = defaultVerdict(effect), "default", defaultReason(req.Kind, effect)
		return d
	}
	// Deny overrides: the strictest opinion wins, the rules' on a tie.
	best := opinions[0]
	for _, op := range opinions[1:] {
		if op.verdict.rank() > best.verdict.rank() {
			best = op
		}
	}
	d.Verdict, d.Rule, d.Reason = best.verdict, best.rule, best.reason
	return d
}

// decideRules applies the most specific matching rules.
func (p *Policy) decideRules(req Request) (opinion, bool) {
	if p == nil {
		return opinion{}, false
	}
	var best []*rule
	var bestSpec specificity
	for _, r := range p.rules {
		spec, ok := r.match(req)
		if !ok {
			continue
		}
		switch c := spec.compare(bestSpec); {
		case len(best) == 0 || c > 0:
			best, bestSpec = []*rule{r}, spec
		case c == 0:
			best = append(best, r)
		}
	}
	if len(best) == 0 {
		return opinion{}, false
	}
	// Equally specific rules: each decides (its constraints may turn it to
	// deny), and the strictest result wins; the first in file order on a
	// tie.
	var out opinion
	for i, r := range best {
		op := r.decide(req)
		if i == 0 || op.verdict.rank() > out.verdict.rank() {
			out = op
		}
	}
	return out, true
}

func defaultVerdict(e Effect) Verdict {
	if e == Read {
		return Allow
	}
	return Ask
}

func defaultReason(k Kind, e Effect) string {
	switch k {
	case KindResource:
		return "no rule matches; reading a resource is allowed by default"
	case KindPrompt:
		return "no rule matches; getting a prompt is allowed by default"
	}
	switch e {
	case Read:
		return "no rule matches; a read tool is allowed by default"
	case Write:
		return "no rule matches; a write tool needs a person's approval by default"
	}
	return "no rule matches; an external tool (every tool policy.tools does not classify) needs a person's approval by default"
}
