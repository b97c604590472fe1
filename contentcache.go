package airlock

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/catalog"
)

// A server's resources, templates and prompts are cached with its tools
// (toolcache.go), as one entry under "content:", kept for the shortest
// ttlMs of their lists and privately when any of them is private; a warm
// start shows them before the server has answered.

// recordingContent passes a server's resource and prompt lists through
// and keeps what a cache entry needs.
type recordingContent struct {
	inner catalog.ContentLister
	kept  cachedContent
	ttlMs int
	scope string
	pages []*mcp.Cacheable // as recordingLister's
}

// cachedContent is what the cache keeps of a server's lists, as the
// server sent them.
type cachedContent struct {
	Resources []*mcp.Resource         `json:"resources,omitempty"`
	Templates []*mcp.ResourceTemplate `json:"templates,omitempty"`
	Prompts   []*mcp.Prompt           `json:"prompts,omitempty"`
}

func (l *recordingContent) page(c *mcp.Cacheable) {
	if len(l.pages) == 0 || c.TTLMs < l.ttlMs {
		l.ttlMs = c.TTLMs
	}
	if c.CacheScope == "private" {
		l.scope = "private"
	}
	l.pages = append(l.pages, c)
}

func (l *recordingContent) ListResources(ctx context.Context, p *mcp.ListResourcesParams) (*mcp.ListResourcesResult, error) {
	res, err := l.inner.ListResources(ctx, p)
	if err == nil {
		l.kept.Resources = append(l.kept.Resources, res.Resources...)
		l.page(&res.Cacheable)
	}
	return res, err
}

func (l *recordingContent) ListResourceTemplates(ctx context.Context, p *mcp.ListResourceTemplatesParams) (*mcp.ListResourceTemplatesResult, error) {
	res, err := l.inner.ListResourceTemplates(ctx, p)
	if err == nil {
		l.kept.Templates = append(l.kept.Templates, res.ResourceTemplates...)
		l.page(&res.Cacheable)
	}
	return res, err
}

func (l *recordingContent) ListPrompts(ctx context.Context, p *mcp.ListPromptsParams) (*mcp.ListPromptsResult, error) {
	res, err := l.inner.ListPrompts(ctx, p)
	if err == nil {
		l.kept.Prompts = append(l.kept.Prompts, res.Prompts...)
		l.page(&res.Cacheable)
	}
	return res, err
}

// cachedLists serves cached lists as one page each, so that they go
// through every check discovery makes.
type cachedLists struct{ c cachedContent }

func (l cachedLists) ListResources(context.Context, *mcp.ListResourcesParams) (*mcp.ListResourcesResult, error) {
	return &mcp.ListResourcesResult{Resources: l.c.Resources}, nil
}

func (l cachedLists) ListResourceTemplates(context.Context, *mcp.ListResourceTemplatesParams) (*mcp.ListResourceTemplatesResult, error) {
	return &mcp.ListResourceTemplatesResult{ResourceTemplates: l.c.Templates}, nil
}

func (l cachedLists) ListPrompts(context.Context, *mcp.ListPromptsParams) (*mcp.ListPromptsResult, error) {
	return &mcp.ListPromptsResult{Prompts: l.c.Prompts}, nil
}

// cachedContentOf returns a server's resources, templates and prompts
// from the cache, checked as discovery checks them.
func (h *Host) cachedContentOf(ctx context.Context, s *server) (catalog.Content, bool) {
	var kept cachedContent
	if !h.cachedList(ctx, s, contentKind, &kept) {
		return catalog.Content{}, false
	}
	c, _ := h.bindContent(ctx, s, cachedLists{kept}, true, true)
	return c, true
}

const contentKind = "content:"
