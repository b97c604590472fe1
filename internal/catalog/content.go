package catalog

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/schema"
)

// A ContentLister lists a server's resources, resource templates and
// prompts one page at a time. *mcp.ClientSession is one.
type ContentLister interface {
	ListResources(ctx context.Context, params *mcp.ListResourcesParams) (*mcp.ListResourcesResult, error)
	ListResourceTemplates(ctx context.Context, params *mcp.ListResourceTemplatesParams) (*mcp.ListResourceTemplatesResult, error)
	ListPrompts(ctx context.Context, params *mcp.ListPromptsParams) (*mcp.ListPromptsResult, error)
}

var _ ContentLister = (*mcp.ClientSession)(nil)

// MaxURILen bounds a resource URI or URI template a server advertises.
const MaxURILen = 2048

// A Resource is one allowed resource of one server.
type Resource struct {
	Server      string
	URI         string // exactly as the server gave it
	Name        string
	Title       string
	Description string
	MIMEType    string
	Size        int64 // as the server said; 0 when it did not
	Hidden      int   // characters of its text nobody would have seen (see reveal)
}

// A Template is one allowed resource template of one server.
type Template struct {
	Server      string
	URITemplate string // RFC 6570, as the server gave it
	Name        string
	Title       string
	Description string
	MIMEType    string
	Hidden      int
	tmpl        *uritemplate.Template
}

// Match reports whether uri is an expansion of the template, and the
// values of its variables.
func (t *Template) Match(uri string) (map[string]string, bool) {
	values := t.tmpl.Match(uri)
	if values == nil {
		return nil, false
	}
	out := map[string]string{}
	for _, name := range t.tmpl.Varnames() {
		if v := values.Get(name); v.Valid() {
			out[name] = v.String()
		}
	}
	return out, true
}

// Varnames lists the template's variables.
func (t *Template) Varnames() []string { return t.tmpl.Varnames() }

// A Prompt is one allowed prompt of one server.
type Prompt struct {
	Name        string // local name, unique among a snapshot's prompts; set by Build
	Server      string
	Remote      string // the server's own name
	Title       string
	Description string
	Arguments   []PromptArgument
	Hidden      int
	// Input is the schema of its arguments (an object of strings, the
	// required ones required, no other): what a get is checked and an
	// approval bound by. It follows from Arguments.
	Input *schema.Schema `json:"-"`
}

// A PromptArgument is one argument a prompt takes.
type PromptArgument struct {
	Name        string
	Title       string
	Description string
	Required    bool
}

// Content is what a server offers besides tools: the allowed resources,
// templates and prompts of its last discovery.
type Content struct {
	Resources []*Resource
	Templates []*Template
	Prompts   []*Prompt
}

// list pages through one list method with the checks every list must
// pass: the page limit, no repeated cursor, the count limit (max), a key
// for every item and no key twice. what names the list in errors
// ("tools/list"), noun an item ("tool"), key its key ("name"), and twice
// how two items with one key are named ("two tools named %q").
type list[T any] struct {
	server, method, noun, key, twice string
	max                              int
	fetch                            func(ctx context.Context, cursor string) ([]T, string, error)
	keyOf                            func(T) string
}

func (l list[T]) all(ctx context.Context, lim Limits) ([]T, error) {
	lim = lim.withDefaults()
	bad := func(format string, args ...any) ([]T, error) {
		return nil, &ContractError{Server: l.server, Msg: fmt.Sprintf(format, args...)}
	}
	var (
		items   []T
		seen    = map[string]bool{}
		cursors = map[string]bool{}
		cursor  string
	)
	for page := 0; ; page++ {
		if page == lim.MaxPages {
			return bad("%s has more than %d pages (limits.max_pages)", l.method, lim.MaxPages)
		}
		page, next, err := l.fetch(ctx, cursor)
		if err != nil {
			return nil, err
		}
		for _, it := range page {
			k := l.keyOf(it)
			if k == "" {
				return bad("%s returned a %s without a %s", l.method, l.noun, l.key)
			}
			if seen[k] {
				return bad("%s returned "+l.twice, l.method, k)
			}
			seen[k] = true
			if len(seen) > l.max {
				return bad("advertises more than %d %ss (limits.max_tools)", l.max, l.noun)
			}
			items = append(items, it)
		}
		if next == "" {
			return items, nil
		}
		if cursors[next] {
			return bad("%s repeated a cursor (a pagination loop)", l.method)
		}
		cursors[next] = true
		cursor = next
	}
}

// ListResources pages through a server's resources/list, with the checks
// of every list; duplicate URIs break the rules.
func ListResources(ctx context.Context, server string, l ContentLister, lim Limits) ([]*mcp.Resource, error) {
	lim = lim.withDefaults()
	return list[*mcp.Resource]{server: server, method: "resources/list", noun: "resource", key: "uri",
		twice: "two resources with the URI %q", max: lim.MaxTools,
		fetch: func(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
			res, err := l.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return res.Resources, res.NextCursor, nil
		},
		keyOf: func(r *mcp.Resource) string {
			if r == nil {
				return ""
			}
			return r.URI
		}}.all(ctx, lim)
}

// ListTemplates pages through a server's resources/templates/list.
func ListTemplates(ctx context.Context, server string, l ContentLister, lim Limits) ([]*mcp.ResourceTemplate, error) {
	lim = lim.withDefaults()
	return list[*mcp.ResourceTemplate]{server: server, method: "resources/templates/list", noun: "resource template",
		key: "uriTemplate", twice: "two resource templates %q", max: lim.MaxTools,
		fetch: func(ctx context.Context, cursor string) ([]*mcp.ResourceTemplate, string, error) {
			res, err := l.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return res.ResourceTemplates, res.NextCursor, nil
		},
		keyOf: func(t *mcp.ResourceTemplate) string {
			if t == nil {
				return ""
			}
			return t.URITemplate
		}}.all(ctx, lim)
}

// ListPrompts pages through a server's prompts/list.
func ListPrompts(ctx context.Context, server string, l ContentLister, lim Limits) ([]*mcp.Prompt, error) {
	lim = lim.withDefaults()
	return list[*mcp.Prompt]{server: server, method: "prompts/list", noun: "prompt", key: "name",
		twice: "two prompts named %q", max: lim.MaxTools,
		fetch: func(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error) {
			res, err := l.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return res.Prompts, res.NextCursor, nil
		},
		keyOf: func(p *mcp.Prompt) string {
			if p == nil {
				return ""
			}
			return p.Name
		}}.all(ctx, lim)
}

// CheckURI checks a resource URI: at most MaxURILen bytes, no control
// characters or spaces, and a scheme. It returns what is wrong, or "".
func CheckURI(uri string) string {
	switch {
	case uri == "":
		return "it is empty"
	case len(uri) > MaxURILen:
		return fmt.Sprintf("it is longer than %d bytes", MaxURILen)
	case strings.IndexFunc(uri, func(r rune) bool {
		return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.IsSpace(r) || r == unicode.ReplacementChar
	}) >= 0:
		return "it has control characters, invisible formatting characters, spaces or invalid UTF-8"
	}
	u, err := url.Parse(uri)
	if err != nil || u.Scheme == "" {
		return "it is not an absolute URI (scheme:…)"
	}
	return ""
}

// DotSegments reports whether uri's path has "." or ".." segments, plain
// or percent-encoded: a URI a glob would match by its text while the
// server resolves it elsewhere.
func DotSegments(uri string) bool {
	_, rest, ok := strings.Cut(uri, ":")
	if !ok {
		return false
	}
	rest, _, _ = strings.Cut(rest, "?")
	rest, _, _ = strings.Cut(rest, "#")
	for _, seg := range strings.Split(rest, "/") {
		if dec, err := url.PathUnescape(seg); err == nil {
			seg = dec
		}
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// AllowedResources binds the resources of advertised that srv's
// allowed_resources matches. A resource with an unusable URI breaks the
// rules: a *ContractError, and no resources.
func AllowedResources(srv *config.Server, advertised []*mcp.Resource, lim Limits) ([]*Resource, error) {
	lim = lim.withDefaults()
	var out []*Resource
	for _, r := range advertised {
		if why := CheckURI(r.URI); why != "" {
			return nil, &ContractError{Server: srv.ID, Msg: fmt.Sprintf("resources/list: resource %q: %s", printable(r.URI), why)}
		}
		if !srv.AllowsResource(r.URI) {
			continue
		}
		name, h1 := reveal(r.Name)
		title, h2 := reveal(r.Title)
		desc, h3 := reveal(r.Description)
		out = append(out, &Resource{Server: srv.ID, URI: r.URI, Name: cut(name, lim.MaxDescription), Title: cut(title, lim.MaxDescription),
			Description: cut(desc, lim.MaxDescription), MIMEType: cut(r.MIMEType, 200), Size: r.Size, Hidden: h1 + h2 + h3})
	}
	slices.SortFunc(out, func(a, b *Resource) int { return strings.Compare(a.URI, b.URI) })
	return out, nil
}

// AllowedTemplates binds the templates of advertised that srv's
// allowed_resources may match: every template when it allows every
// resource, else a template whose every variable, expanded as "x", gives
// an allowed URI. What a read expands a template to is checked again.
func AllowedTemplates(srv *config.Server, advertised []*mcp.ResourceTemplate, lim Limits) ([]*Template, error) {
	lim = lim.withDefaults()
	var out []*Template
	for _, t := range advertised {
		bad := func(why string) error {
			return &ContractError{Server: srv.ID, Msg: fmt.Sprintf("resources/templates/list: template %q: %s", printable(t.URITemplate), why)}
		}
		if len(t.URITemplate) > MaxURILen {
			return nil, bad(fmt.Sprintf("it is longer than %d bytes", MaxURILen))
		}
		tmpl, err := uritemplate.New(t.URITemplate)
		if err != nil {
			return nil, bad("it is not an RFC 6570 URI template: " + err.Error())
		}
		if !srv.AllowsAllResources() && !srv.AllowsResource(sample(tmpl)) {
			continue
		}
		name, h1 := reveal(t.Name)
		title, h2 := reveal(t.Title)
		desc, h3 := reveal(t.Description)
		out = append(out, &Template{Server: srv.ID, URITemplate: t.URITemplate, Name: cut(name, lim.MaxDescription),
			Title: cut(title, lim.MaxDescription), Description: cut(desc, lim.MaxDescription), MIMEType: cut(t.MIMEType, 200),
			Hidden: h1 + h2 + h3, tmpl: tmpl})
	}
	slices.SortFunc(out, func(a, b *Template) int { return strings.Compare(a.URITemplate, b.URITemplate) })
	return out, nil
}

// sample expands every variable of t as "x".
func sample(t *uritemplate.Template) string {
	values := uritemplate.Values{}
	for _, n := range t.Varnames() {
		values.Set(n, uritemplate.String("x"))
	}
	s, _ := t.Expand(values) // a parsed template expands plain strings
	return s
}

var argName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// AllowedPrompts binds the prompts of advertised that srv's
// allowed_prompts names. An allowed prompt with an argument named twice or
// unusably breaks the rules.
func AllowedPrompts(srv *config.Server, advertised []*mcp.Prompt, lim Limits) ([]*Prompt, error) {
	lim = lim.withDefaults()
	var out []*Prompt
	for _, p := range advertised {
		if !srv.AllowsPrompt(p.Name) {
			continue
		}
		bad := func(format string, args ...any) error {
			return &ContractError{Server: srv.ID, Msg: fmt.Sprintf("prompts/list: prompt %q: ", printable(p.Name)) + fmt.Sprintf(format, args...)}
		}
		title, h1 := reveal(p.Title)
		desc, h2 := reveal(p.Description)
		bound := &Prompt{Server: srv.ID, Remote: p.Name, Title: cut(title, lim.MaxDescription),
			Description: cut(desc, lim.MaxDescription), Hidden: h1 + h2}
		seen := map[string]bool{}
		for _, a := range p.Arguments {
			if a == nil || !argName.MatchString(a.Name) {
				return nil, bad("an argument name must match %s", argName)
			}
			if seen[a.Name] {
				return nil, bad("argument %q is listed twice", a.Name)
			}
			seen[a.Name] = true
			at, h3 := reveal(a.Title)
			ad, h4 := reveal(a.Description)
			bound.Hidden += h3 + h4
			bound.Arguments = append(bound.Arguments, PromptArgument{Name: a.Name, Title: cut(at, lim.MaxDescription),
				Description: cut(ad, lim.MaxDescription), Required: a.Required})
		}
		var err error
		if bound.Input, err = argumentSchema(bound.Arguments, lim); err != nil {
			return nil, bad("its arguments cannot be checked: %v", err)
		}
		out = append(out, bound)
	}
	return out, nil
}

// argumentSchema is the schema of a prompt's arguments.
func argumentSchema(args []PromptArgument, lim Limits) (*schema.Schema, error) {
	props := map[string]any{}
	required := []any{}
	for _, a := range args {
		props[a.Name] = map[string]any{"type": "string"}
		if a.Required {
			required = append(required, a.Name)
		}
	}
	doc := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		doc["required"] = required
	}
	opts := *lim.Schema
	opts.RequireObject = true
	return schema.Compile(doc, &opts)
}

// namePrompts gives every prompt its local name, by the rules of tool
// names (assignNames).
func namePrompts(prompts []*Prompt, prefixes map[string]string) error {
	stand := make([]*Tool, len(prompts))
	for i, p := range prompts {
		stand[i] = &Tool{Server: p.Server, Remote: p.Remote}
	}
	if err := assignNames(stand, prefixes); err != nil {
		return fmt.Errorf("prompts: %w", err)
	}
	for i, p := range prompts {
		p.Name = stand[i].Name
	}
	slices.SortFunc(prompts, func(a, b *Prompt) int { return strings.Compare(a.Name, b.Name) })
	return nil
}

// printable quotes at most 200 characters of what a server sent, for an
// error message.
func printable(s string) string {
	s, _ = reveal(s)
	return cut(strings.ToValidUTF8(s, "\uFFFD"), 200)
}
