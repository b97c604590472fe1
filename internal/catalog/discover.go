package catalog

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/schema"
	"github.com/airlockhq/airlock/policy"
)

// A Lister lists a server's tools one page at a time. *mcp.ClientSession is
// one.
type Lister interface {
	ListTools(ctx context.Context, params *mcp.ListToolsParams) (*mcp.ListToolsResult, error)
}

var _ Lister = (*mcp.ClientSession)(nil)

// Limits bound what one server may advertise.
type Limits struct {
	MaxPages       int // pages of tools/list; 0 means 100
	MaxTools       int // tools in the whole catalog of the server; 0 means 1000
	MaxDescription int // characters of a description; 0 means 2000
	// Schema bounds every input and output schema. Nil means the schema
	// package's defaults. Without a Cache, [Allowed] keeps one for the
	// list it binds: large catalogs repeat one schema for many tools.
	Schema *schema.CompileOptions
}

// LimitsFrom returns the limits a configuration sets.
func LimitsFrom(l config.Limits) Limits {
	return Limits{MaxPages: l.MaxPages, MaxTools: l.MaxTools, MaxDescription: l.MaxDescription}
}

// A Tool is one allowed tool of one server, as the host binds it: the model
// sees Name, Description and the input schema; the host keeps the rest.
type Tool struct {
	Name        string // local name, unique in a snapshot; set by Build
	Server      string
	Remote      string // the name the server knows it by
	Title       string
	Description string
	Input       *schema.Schema
	Output      *schema.Schema // nil when the tool declares no outputSchema
	// Annotations are the server's own hints. They are shown to people and
	// never lower the tool's Effect.
	Annotations *mcp.ToolAnnotations
	// Effect is what local policy says the tool may do; discovery sets
	// External, the default for every MCP tool.
	Effect policy.Effect
	// Hidden counts the characters of its title, description and schema
	// descriptions that nobody would have seen (see reveal): they are
	// shown as [U+XXXX], or removed for tag characters.
	Hidden int
}

// A ContractError says how a server's catalog broke the rules. The server
// then exposes no tools.
type ContractError struct {
	Server string
	Msg    string
}

func (e *ContractError) Error() string { return "server " + e.Server + ": " + e.Msg }

// Discover lists every tool of srv through l and returns the tools the
// deployment allows, checked and compiled: [List], then [Allowed].
// Transport failures are returned as they come; catalog problems as
// *ContractError.
func Discover(ctx context.Context, srv *config.Server, l Lister, lim Limits) ([]*Tool, error) {
	advertised, err := List(ctx, srv.ID, l, lim)
	if err != nil {
		return nil, err
	}
	return Allowed(srv, advertised, lim)
}

// List pages through a server's tools/list to the end with the checks
// every list must pass (the page limit, no repeated cursor, the catalog
// limit, a name for every tool and no name twice), and returns every tool
// the server advertised, in its order. Nothing else of the tools is
// checked: they are what the server said, for [Allowed] to bind and for
// [Offers] to show. server names the server in errors.
func List(ctx context.Context, server string, l Lister, lim Limits) ([]*mcp.Tool, error) {
	lim = lim.withDefaults()
	return list[*mcp.Tool]{server: server, method: "tools/list", noun: "tool", key: "name",
		twice: "two tools named %q", max: lim.MaxTools,
		fetch: func(ctx context.Context, cursor string) ([]*mcp.Tool, string, error) {
			res, err := l.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return res.Tools, res.NextCursor, nil
		},
		keyOf: func(t *mcp.Tool) string {
			if t == nil {
				return ""
			}
			return t.Name
		}}.all(ctx, lim)
}

// Allowed returns the tools of advertised (a server's whole list, as
// [List] returns it) that srv's allowlist names, checked and compiled, by
// remote name. An allowed tool that fails a check, or a name in the
// allowlist that the server does not advertise, fails the server: a
// *ContractError, and no tools.
func Allowed(srv *config.Server, advertised []*mcp.Tool, lim Limits) ([]*Tool, error) {
	lim = lim.withDefaults()
	if lim.Schema.Cache == nil {
		opts := *lim.Schema
		opts.Cache = schema.NewCache(0, 0)
		lim.Schema = &opts
	}
	bad := func(format string, args ...any) ([]*Tool, error) {
		return nil, &ContractError{Server: srv.ID, Msg: fmt.Sprintf(format, args...)}
	}
	var tools []*Tool
	seen := make(map[string]bool, len(advertised))
	for _, t := range advertised {
		seen[t.Name] = true
		if !srv.Allows(t.Name) {
			continue
		}
		tool, err := bind(srv.ID, t, lim)
		if err != nil {
			return bad("tool %q: %v", t.Name, err)
		}
		tools = append(tools, tool)
	}
	if !srv.AllowsAll() {
		var missing []string
		names := slices.Collect(maps.Keys(seen))
		for _, name := range srv.AllowedTools {
			if seen[name] {
				continue
			}
			if s := config.Suggest(name, names); s != "" {
				name = fmt.Sprintf("%s (did you mean %q?)", name, s)
			}
			missing = append(missing, name)
		}
		if len(missing) > 0 {
			return bad("allowed_tools names tools the server does not have: %s", strings.Join(missing, ", "))
		}
	}
	slices.SortFunc(tools, func(a, b *Tool) int { return strings.Compare(a.Remote, b.Remote) })
	return tools, nil
}

func bind(server string, t *mcp.Tool, lim Limits) (*Tool, error) {
	in := *lim.Schema
	in.RequireObject = true
	input, err := schema.Compile(t.InputSchema, &in)
	if err != nil {
		return nil, fmt.Errorf("inputSchema: %w", err)
	}
	var output *schema.Schema
	if t.OutputSchema != nil {
		if output, err = schema.Compile(t.OutputSchema, &in); err != nil {
			return nil, fmt.Errorf("outputSchema: %w", err)
		}
	}
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	// What the model reads is what a person can read.
	title, hiddenTitle := reveal(title)
	description, hiddenDescription := reveal(t.Description)
	input, hiddenInput, err := revealSchema(input, &in)
	if err != nil {
		return nil, fmt.Errorf("inputSchema: %w", err)
	}
	output, hiddenOutput, err := revealSchema(output, &in)
	if err != nil {
		return nil, fmt.Errorf("outputSchema: %w", err)
	}
	return &Tool{
		Server:      server,
		Remote:      t.Name,
		Title:       cut(title, lim.MaxDescription),
		Description: cut(description, lim.MaxDescription),
		Input:       input,
		Output:      output,
		Annotations: t.Annotations,
		Effect:      policy.External,
		Hidden:      hiddenTitle + hiddenDescription + hiddenInput + hiddenOutput,
	}, nil
}

// cut shortens s to at most n characters, marking the cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func (l Limits) withDefaults() Limits {
	if l.MaxPages <= 0 {
		l.MaxPages = 100
	}
	if l.MaxTools <= 0 {
		l.MaxTools = 1000
	}
	if l.MaxDescription <= 0 {
		l.MaxDescription = 2000
	}
	if l.Schema == nil {
		l.Schema = &schema.CompileOptions{}
	}
	return l
}
