package airlock

import (
	"context"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/catalog"
	"github.com/airlockhq/airlock/policy"
	"github.com/airlockhq/airlock/store"
)

// A CompleteRequest asks for the values an argument of a prompt, or a
// variable of a resource template, may take, given what was typed so far.
type CompleteRequest struct {
	// Prompt is a prompt's local name; or Template a resource template
	// as listed (its URI template), with Server when two servers list it.
	Prompt   string
	Template string
	Server   string
	// Argument is the argument (or variable) to complete and Value what
	// was typed of it; Context the arguments already given.
	Argument string
	Value    string
	Context  map[string]string
}

// A Completion is what a server suggests, bounded: at most
// MaxCompletionValues values, each one line of at most 1000 characters.
type Completion struct {
	Values  []string `json:"values"`
	Total   int      `json:"total,omitempty"`
	HasMore bool     `json:"has_more,omitempty"`
}

// MaxCompletionValues bounds the values of a Completion (the MCP
// specification's own bound).
const MaxCompletionValues = 100

// Complete asks the server of a prompt or resource template for
// completions (completion/complete). The prompt or template must be in
// snap and the argument one of its own; policy must not deny getting the
// prompt or reading from the template's server. A server without
// completions gives none.
func (h *Host) Complete(ctx context.Context, snap *Snapshot, c CompleteRequest) (*Completion, *Error) {
	server, out, err := h.complete(ctx, snap, c)
	class := OK
	if err != nil {
		class = err.Kind
	}
	h.opts.Metrics.Content(server, "completion", string(class))
	return out, err
}

func (h *Host) complete(ctx context.Context, snap *Snapshot, c CompleteRequest) (server string, _ *Completion, _ *Error) {
	ref, srv, kind, err := h.completionRef(snap, c)
	if err != nil {
		return "", nil, err
	}
	if len(c.Value) > 4096 {
		return srv.cfg.ID, nil, newError(InvalidArguments, srv.cfg.ID, c.Argument, nil, "the value to complete is longer than 4096 bytes")
	}
	d := h.gov.policy.Decide(policy.Request{Kind: kind, Server: srv.cfg.ID, Tool: c.Prompt, RemoteTool: ref.Name,
		Resource: c.Template, Principal: snap.who})
	if d.Verdict == Deny {
		return srv.cfg.ID, nil, newError(Denied, srv.cfg.ID, c.Argument, nil, "completion refused: %s", d.Reason)
	}
	// The connection of the principal it is asked for (a lane, for a
	// server with per-user credentials), as a call's.
	q := &request{snap: snap, srv: srv, tool: &catalog.Tool{Name: "completion/complete", Server: srv.cfg.ID}, r: &Result{}}
	if e := h.routeCall(ctx, q); e != nil {
		return srv.cfg.ID, nil, e
	}
	conn := q.link.conn
	if caps := conn.Session().InitializeResult().Capabilities; caps == nil || caps.Completions == nil {
		return srv.cfg.ID, &Completion{Values: []string{}}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, srv.cfg.RequestTimeout)
	defer cancel()
	params := &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: c.Argument, Value: c.Value}}
	if len(c.Context) > 0 {
		params.Context = &mcp.CompleteContext{Arguments: c.Context}
	}
	res, cerr := conn.Session().Complete(ctx, params)
	h.audit(ctx, store.Event{Event: store.EventCompletion, Server: srv.cfg.ID, Tool: c.Prompt, Snapshot: snap.ID(),
		Fields: map[string]any{"argument": c.Argument, "template": h.gov.scrub(c.Template), "ok": cerr == nil}})
	if cerr != nil {
		return srv.cfg.ID, nil, h.accessError(ctx, q, cerr)
	}
	return srv.cfg.ID, h.boundCompletion(res), nil
}

// completionRef finds what a completion is for.
func (h *Host) completionRef(snap *Snapshot, c CompleteRequest) (*mcp.CompleteReference, *server, policy.Kind, *Error) {
	bad := func(kind Kind, format string, args ...any) (*mcp.CompleteReference, *server, policy.Kind, *Error) {
		return nil, nil, "", newError(kind, c.Server, c.Argument, nil, format, args...)
	}
	switch {
	case (c.Prompt == "") == (c.Template == ""):
		return bad(InvalidArguments, "name either a prompt or a resource template to complete for")
	case c.Prompt != "":
		p, ok := snap.snap.Prompt(c.Prompt)
		if !ok {
			if srv := snap.promptNotRunning(c.Prompt); srv != nil {
				return nil, nil, "", downError(srv, c.Prompt, "prompts")
			}
			return bad(UnknownTool, "unknown prompt %q: it is not in the catalog", printable(c.Prompt))
		}
		if !slices.ContainsFunc(p.Arguments, func(a catalog.PromptArgument) bool { return a.Name == c.Argument }) {
			return bad(InvalidArguments, "prompt %s takes no argument %q (it takes: %s)", p.Name, printable(c.Argument), argumentNames(p))
		}
		return &mcp.CompleteReference{Type: "ref/prompt", Name: p.Remote}, snap.servers[p.Server], policy.KindPrompt, nil
	}
	var found []*catalog.Template
	for _, t := range snap.snap.Templates() {
		if t.URITemplate == c.Template && (c.Server == "" || t.Server == c.Server) {
			found = append(found, t)
		}
	}
	switch {
	case len(found) == 0:
		return bad(UnknownTool, "unknown resource template %q: it is not in the catalog", printable(c.Template))
	case len(found) > 1:
		return bad(InvalidArguments, "two servers list the resource template %q: name the server", printable(c.Template))
	case !slices.Contains(found[0].Varnames(), c.Argument):
		return bad(InvalidArguments, "resource template %s has no variable %q (it has: %s)", printable(c.Template), printable(c.Argument),
			strings.Join(found[0].Varnames(), ", "))
	}
	return &mcp.CompleteReference{Type: "ref/resource", URI: found[0].URITemplate}, snap.servers[found[0].Server], policy.KindResource, nil
}

// boundCompletion keeps what a model or a person may be shown of a
// server's completions: at most MaxCompletionValues values, each one line
// of valid UTF-8 without control characters, at most 1000 characters,
// secrets scrubbed.
func (h *Host) boundCompletion(res *mcp.CompleteResult) *Completion {
	out := &Completion{Values: []string{}, Total: res.Completion.Total, HasMore: res.Completion.HasMore}
	for _, v := range res.Completion.Values {
		if len(out.Values) == MaxCompletionValues {
			out.HasMore = true
			break
		}
		if !utf8.ValidString(v) || strings.IndexFunc(v, unicode.IsControl) >= 0 || utf8.RuneCountInString(v) > 1000 {
			continue
		}
		out.Values = append(out.Values, h.gov.scrub(v))
	}
	return out
}
