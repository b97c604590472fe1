package airlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/airlockhq/airlock/internal/catalog"
	"github.com/airlockhq/airlock/internal/upstream"
	storepkg "github.com/airlockhq/airlock/store"
)

// A Resource is one resource of the catalog: a server's resource that
// servers[].allowed_resources matches, as the server listed it.
type Resource struct {
	Server      string `json:"server"`
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mime_type,omitempty"`
	Size        int64  `json:"size,omitempty"`
}

// A ResourceTemplate is one resource template of the catalog (RFC 6570).
// A read of one of its expansions is checked against allowed_resources
// like any other URI.
type ResourceTemplate struct {
	Server      string `json:"server"`
	URITemplate string `json:"uri_template"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mime_type,omitempty"`
}

// A Prompt is one prompt of the catalog, under its local name
// (server__prompt, by the rules of tool names).
type Prompt struct {
	Name        string           `json:"name"`
	Server      string           `json:"server"`
	RemoteName  string           `json:"remote_name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments"`
}

// A PromptArgument is one argument a prompt takes; every value is a
// string.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required"`
}

// Resources returns the snapshot's resources, ordered by server, then URI.
func (s *Snapshot) Resources() []Resource {
	return each(s.snap.Resources(), func(r *catalog.Resource) Resource {
		return Resource{Server: r.Server, URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description,
			MIMEType: r.MIMEType, Size: r.Size}
	})
}

// ResourceTemplates returns the snapshot's resource templates.
func (s *Snapshot) ResourceTemplates() []ResourceTemplate {
	return each(s.snap.Templates(), func(t *catalog.Template) ResourceTemplate {
		return ResourceTemplate{Server: t.Server, URITemplate: t.URITemplate, Name: t.Name, Title: t.Title,
			Description: t.Description, MIMEType: t.MIMEType}
	})
}

// Prompts returns the snapshot's prompts, ordered by local name.
func (s *Snapshot) Prompts() []Prompt {
	return each(s.snap.Prompts(), func(p *catalog.Prompt) Prompt {
		out := Prompt{Name: p.Name, Server: p.Server, RemoteName: p.Remote, Title: p.Title, Description: p.Description,
			Arguments: make([]PromptArgument, len(p.Arguments))}
		for j, a := range p.Arguments {
			out.Arguments[j] = PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required}
		}
		return out
	})
}

// each returns what f makes of every element of in, in its order: the
// snapshot's own types, made from the catalog's.
func each[T, U any](in []T, f func(T) U) []U {
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// discoverContent lists the resources, templates and prompts of a server
// that offers them and that the configuration lets expose any. A list
// that breaks the rules costs the server that primitive, not its tools:
// it is logged and audited, and the server is without it until its next
// discovery.
func (h *Host) discoverContent(ctx context.Context, s *server, conn *upstream.Conn) catalog.Content {
	caps := conn.Session().InitializeResult().Capabilities
	if caps == nil {
		return catalog.Content{}
	}
	rec := &recordingContent{inner: conn.Session()}
	c, whole := h.bindContent(ctx, s, rec, caps.Resources != nil, caps.Prompts != nil)
	// Flagged when the server says it, not again from the cache.
	for _, r := range c.Resources {
		h.flagHidden(ctx, s.cfg.ID, "resource", r.URI, r.Hidden)
	}
	for _, t := range c.Templates {
		h.flagHidden(ctx, s.cfg.ID, "resource template", t.URITemplate, t.Hidden)
	}
	for _, p := range c.Prompts {
		h.flagHidden(ctx, s.cfg.ID, "prompt", p.Remote, p.Hidden)
	}
	s.pages = append(s.pages, rec.pages...)
	if whole && len(rec.pages) > 0 {
		h.keepList(ctx, s, contentKind, conn.ProtocolVersion(), rec.ttlMs, rec.scope, rec.kept)
	} else {
		h.forgetList(s, contentKind)
	}
	return c
}

// bindContent lists and binds what l offers of resources (when
// resources) and prompts (when prompts) that the configuration lets s
// expose; whole is false when a list broke a rule, which costs s that
// list.
func (h *Host) bindContent(ctx context.Context, s *server, l catalog.ContentLister, resources, prompts bool) (c catalog.Content, whole bool) {
	lim, cfg := h.limits(), &s.cfg
	whole = true
	refuse := func(what string, err error) {
		whole = false
		var ce *catalog.ContractError
		msg := err.Error()
		if !errors.As(err, &ce) {
			msg = fmt.Sprintf("server %s: %s failed: %v", cfg.ID, what, err)
		}
		msg = h.gov.scrub(msg)
		h.log.Warn("server's list refused; it exposes none of it", "server", cfg.ID, "list", what, "error", msg)
		h.audit(ctx, storepkg.Event{Event: storepkg.EventCatalogRefused, Server: cfg.ID, Class: string(ContractError),
			Fields: map[string]any{"list": what, "error": msg}})
	}
	if resources && len(cfg.AllowedResources) > 0 {
		if listed, err := catalog.ListResources(ctx, cfg.ID, l, lim); err != nil {
			refuse("resources/list", err)
		} else if c.Resources, err = catalog.AllowedResources(cfg, listed, lim); err != nil {
			refuse("resources/list", err)
		}
		if listed, err := catalog.ListTemplates(ctx, cfg.ID, l, lim); err != nil {
			refuse("resources/templates/list", err)
		} else if c.Templates, err = catalog.AllowedTemplates(cfg, listed, lim); err != nil {
			refuse("resources/templates/list", err)
		}
	}
	if prompts && len(cfg.AllowedPrompts) > 0 {
		if listed, err := catalog.ListPrompts(ctx, cfg.ID, l, lim); err != nil {
			refuse("prompts/list", err)
		} else if c.Prompts, err = catalog.AllowedPrompts(cfg, listed, lim); err != nil {
			refuse("prompts/list", err)
		}
	}
	return c, whole
}

// flagHidden records that the text of something a server listed had
// characters nobody would have seen.
func (h *Host) flagHidden(ctx context.Context, server, what, name string, count int) {
	if count == 0 {
		return
	}
	h.log.Warn(what+" text had hidden characters; they are shown", "server", server, "name", name, "count", count)
	h.audit(ctx, storepkg.Event{Event: storepkg.EventToolFlagged, Server: server,
		Fields: map[string]any{"kind": what, "name": h.gov.scrub(name), "flag": catalog.FlagHidden, "count": count}})
}
