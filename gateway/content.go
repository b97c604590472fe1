package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/airlockhq/airlock"
)

// Besides tools, the gateway lists the resources, resource templates and
// prompts of the catalog (what servers[].allowed_resources and
// allowed_prompts expose), and follows the catalog for them as it does
// for tools (publish): only what changed is added or removed, so the SDK
// tells clients of both eras, once for changes close together.
//
// A resource is listed under the URI its server gives it, and a template
// under its own URI template, unless two servers list the same one: then
// neither is guessed, and each is listed qualified by its server, as
//
//	airlock://SERVER/URI
//
// (the server's URI, or URI template, after the server's id), which the
// gateway maps back to (SERVER, URI). A read of the unqualified URI is
// answered with an error naming the qualified ones. A URI that itself
// starts with airlock:// is always listed qualified, so that no server can
// list a URI that reads as another's.

// qualifiedScheme starts a URI the gateway qualified with a server.
const qualifiedScheme = "airlock://"

// qualify is uri (or a URI template) qualified with server.
func qualify(server, uri string) string { return qualifiedScheme + server + "/" + uri }

// A target is where a listed resource or template is read from.
type target struct{ server, uri string }

// A contentIndex is what the gateway lists besides tools, by the form a
// client sees, for the handlers and the middleware to map back.
type contentIndex struct {
	resources map[string]listedResource // by listed URI
	templates map[string]listedTemplate // by listed URI template
	prompts   map[string]*mcp.Prompt
	// clashes are the URIs and URI templates two servers list, each
	// with the qualified forms that are listed instead.
	clashes   map[string][]string
	clashTmpl []clash
}

type listedResource struct {
	res *mcp.Resource
	at  target
}

type listedTemplate struct {
	tmpl *mcp.ResourceTemplate
	re   *uritemplate.Template // tmpl's URI template, compiled
	at   target                // uri: the template as its server lists it
}

// A clash is a URI template two servers list, for a read of one of its
// expansions.
type clash struct {
	tmpl    *uritemplate.Template
	servers []string
}

// indexOf is what the gateway lists of snap besides tools.
func indexOf(snap *airlock.Snapshot) *contentIndex {
	ix := &contentIndex{resources: map[string]listedResource{}, templates: map[string]listedTemplate{},
		prompts: map[string]*mcp.Prompt{}, clashes: map[string][]string{}}
	rs, ts := snap.Resources(), snap.ResourceTemplates()
	uris, tmpls := map[string]int{}, map[string]int{}
	for _, r := range rs {
		uris[r.URI]++
	}
	for _, t := range ts {
		tmpls[t.URITemplate]++
	}
	for _, r := range rs {
		uri := r.URI
		if uris[uri] > 1 || strings.HasPrefix(uri, qualifiedScheme) {
			uri = qualify(r.Server, r.URI)
			if !strings.HasPrefix(r.URI, qualifiedScheme) {
				ix.clashes[r.URI] = append(ix.clashes[r.URI], uri)
			}
		}
		if _, err := url.Parse(uri); err != nil {
			continue // the catalog checked it; the SDK would panic
		}
		ix.resources[uri] = listedResource{at: target{r.Server, r.URI}, res: &mcp.Resource{URI: uri, Name: r.Name, Title: r.Title,
			Description: r.Description, MIMEType: r.MIMEType, Size: r.Size, Meta: mcp.Meta{"airlock/server": r.Server}}}
	}
	clashing := map[string][]string{}
	for _, t := range ts {
		listed := t.URITemplate
		if tmpls[listed] > 1 || strings.HasPrefix(listed, qualifiedScheme) {
			listed = qualify(t.Server, t.URITemplate)
			if !strings.HasPrefix(t.URITemplate, qualifiedScheme) {
				clashing[t.URITemplate] = append(clashing[t.URITemplate], t.Server)
			}
		}
		re, err := uritemplate.New(listed)
		if err != nil {
			continue
		}
		ix.templates[listed] = listedTemplate{at: target{t.Server, t.URITemplate}, re: re, tmpl: &mcp.ResourceTemplate{URITemplate: listed,
			Name: t.Name, Title: t.Title, Description: t.Description, MIMEType: t.MIMEType, Meta: mcp.Meta{"airlock/server": t.Server}}}
	}
	for _, tmpl := range slices.Sorted(maps.Keys(clashing)) {
		if t, err := uritemplate.New(tmpl); err == nil {
			ix.clashTmpl = append(ix.clashTmpl, clash{tmpl: t, servers: clashing[tmpl]})
		}
	}
	for _, p := range snap.Prompts() {
		mp := &mcp.Prompt{Name: p.Name, Title: p.Title, Description: p.Description}
		for _, a := range p.Arguments {
			mp.Arguments = append(mp.Arguments, &mcp.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
		}
		ix.prompts[p.Name] = mp
	}
	return ix
}

// clashOf is the error of a read (or subscription) of an unqualified URI
// that two servers list, or that the same template of two servers expands
// to, naming the qualified URIs to use instead; nil for any other URI,
// and for one a single server lists as it is.
func (ix *contentIndex) clashOf(uri string) error {
	if _, ok := ix.resources[uri]; ok {
		return nil
	}
	forms := slices.Clone(ix.clashes[uri])
	for _, c := range ix.clashTmpl {
		if c.tmpl.Match(uri) != nil {
			for _, s := range c.servers {
				forms = append(forms, qualify(s, uri))
			}
		}
	}
	if len(forms) == 0 {
		return nil
	}
	slices.Sort(forms)
	forms = slices.Compact(forms)
	data, _ := json.Marshal(map[string]any{"uri": uri, "qualified": forms})
	return invalidParams(fmt.Sprintf("%s is listed by more than one server, so the gateway does not guess: read it as one of %s",
		clip(uri), strings.Join(forms, ", ")), data)
}

// resolve maps a URI a client gave back to where it is read from: a
// qualified URI to its server and the server's URI; a listed resource or
// an expansion of a listed template to its server. ok is false for any
// other URI.
func (ix *contentIndex) resolve(uri string) (target, bool) {
	if r, ok := ix.resources[uri]; ok {
		return r.at, true
	}
	for _, listed := range slices.Sorted(maps.Keys(ix.templates)) { // as the SDK tries them
		if t := ix.templates[listed]; t.re.Match(uri) != nil {
			return target{t.at.server, t.unqualified(uri)}, true
		}
	}
	return target{}, false
}

// unlisted is where a URI the gateway does not list is read from: a
// qualified one from its server, any other from the server the host
// finds for it.
func unlisted(uri string) target {
	if rest, ok := strings.CutPrefix(uri, qualifiedScheme); ok {
		if server, u, ok := strings.Cut(rest, "/"); ok && server != "" {
			return target{server, u}
		}
	}
	return target{uri: uri}
}

// unqualified is an expansion of t as its server knows it.
func (t listedTemplate) unqualified(uri string) string {
	if strings.HasPrefix(t.tmpl.URITemplate, qualifiedScheme) {
		return strings.TrimPrefix(uri, qualify(t.at.server, ""))
	}
	return uri
}

// completable reports whether some prompt or resource template is listed,
// for which a client may ask for completions.
func (ix *contentIndex) completable() bool { return len(ix.prompts) > 0 || len(ix.templates) > 0 }

// publishContent lists what ix lists besides tools, touching only what
// changed since the gateway listed old (nil at first). g.listMu is held.
func (g *Gateway) publishContent(old, ix *contentIndex) {
	if old == nil {
		old = &contentIndex{}
	}
	if gone := missing(old.resources, ix.resources); len(gone) > 0 {
		g.server.RemoveResources(gone...)
	}
	for uri, r := range ix.resources {
		if o, ok := old.resources[uri]; !ok || o.at != r.at || !same(o.res, r.res) {
			g.server.AddResource(r.res, g.read(func(string) target { return r.at }))
		}
	}
	if gone := missing(old.templates, ix.templates); len(gone) > 0 {
		g.server.RemoveResourceTemplates(gone...)
	}
	for listed, t := range ix.templates {
		if o, ok := old.templates[listed]; !ok || o.at != t.at || !same(o.tmpl, t.tmpl) {
			g.server.AddResourceTemplate(t.tmpl, g.read(func(uri string) target { return target{t.at.server, t.unqualified(uri)} }))
		}
	}
	if gone := missing(old.prompts, ix.prompts); len(gone) > 0 {
		g.server.RemovePrompts(gone...)
	}
	for name, p := range ix.prompts {
		if o := old.prompts[name]; o == nil || !same(o, p) {
			g.server.AddPrompt(p, g.get)
		}
	}
}

// missing lists the keys of old that next lacks, sorted.
func missing[V any](old, next map[string]V) []string {
	var out []string
	for k := range old {
		if _, ok := next[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// same reports whether a and b list the same.
func same(a, b any) bool {
	ja, erra := json.Marshal(a)
	jb, errb := json.Marshal(b)
	return erra == nil && errb == nil && string(ja) == string(jb)
}

// screen is a receiving middleware for what the SDK cannot know of the
// catalog: a read of a URI two servers list gets the error that names the
// qualified ones (the SDK would find no such resource); completions are
// declared only while something can be completed; a subscription in a
// subscriptions/listen stream is made for the stream's caller; and a
// tools/call for a name the gateway does not list goes to the host, which
// refuses it as unknown_tool, writing it to the audit trail and counting
// it, instead of being dropped by the SDK unseen.
func (g *Gateway) screen(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "resources/read":
			if rr, ok := req.(*mcp.ReadResourceRequest); ok && rr.Params != nil {
				ix := g.content.Load()
				if err := ix.clashOf(rr.Params.URI); err != nil {
					return nil, err
				}
				if _, listed := ix.resolve(rr.Params.URI); !listed {
					// A URI no server lists, such as a resource link a
					// tool returned: the host reads it from the server
					// whose allowed_resources match it, or refuses.
					res, err := g.read(unlisted)(ctx, rr)
					if res != nil {
						// The SDK sets these on the reads it routes.
						g.cacheable(ctx, rr, &res.Cacheable)
					}
					return res, err
				}
			}
		case "subscriptions/listen":
			ctx = context.WithValue(ctx, extraKey{}, req.GetExtra())
		case "tools/call":
			if cr, ok := req.(*mcp.CallToolRequest); ok && cr.Params != nil && !g.isListed(cr.Params.Name) {
				// The SDK would refuse it on its own; the host refuses it
				// too (unknown_tool), and records and counts the attempt.
				return g.call(ctx, cr)
			}
		}
		res, err := next(ctx, method, req)
		if err != nil {
			return res, plainer(method, req, err)
		}
		if r, ok := res.(*mcp.InitializeResult); ok && r.Capabilities != nil && r.Capabilities.Extensions[taskExtension] != nil {
			// Tasks are served to 2026-07-28 clients only (taskwire.go):
			// a session is not offered what it could not use.
			c := *r.Capabilities
			c.Extensions = maps.Clone(c.Extensions)
			delete(c.Extensions, taskExtension)
			r.Capabilities = &c
		}
		if g.content.Load().completable() {
			return res, err
		}
		switch r := res.(type) {
		case *mcp.InitializeResult:
			if r.Capabilities != nil {
				r.Capabilities.Completions = nil
			}
		case *mcp.DiscoverResult:
			if r.Capabilities != nil {
				r.Capabilities.Completions = nil
			}
		}
		return res, err
	}
}

// plainer says what the SDK's terse refusals of a request mean, and what
// to do: a list's cursor that no page gave, a second initialize (which
// the SDK answers with code 0, no JSON-RPC code).
func plainer(method string, req mcp.Request, err error) error {
	var werr *jsonrpc.Error
	switch {
	case method == "initialize" && !errors.As(err, &werr):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "Invalid Request: " + err.Error() + ": a session is initialized once"}
	case errors.As(err, &werr) && werr.Code == jsonrpc.CodeInvalidParams && werr.Message == "invalid params" && cursorOf(req) != "":
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "invalid params: the cursor is not one this gateway gave; pass back the nextCursor of the page before, or list again without one"}
	}
	return err
}

// cursorOf is the cursor of a list request, or "".
func cursorOf(req mcp.Request) string {
	switch p := req.GetParams().(type) {
	case *mcp.ListToolsParams:
		return p.Cursor
	case *mcp.ListPromptsParams:
		return p.Cursor
	case *mcp.ListResourcesParams:
		return p.Cursor
	case *mcp.ListResourceTemplatesParams:
		return p.Cursor
	}
	return ""
}

// isListed reports whether the gateway lists a tool of that name.
func (g *Gateway) isListed(name string) bool {
	names := g.names.Load()
	if names == nil {
		return false
	}
	_, ok := (*names)[name]
	return ok
}
