package airlock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/catalog"
	"github.com/airlockhq/airlock/internal/upstream"
	"github.com/airlockhq/airlock/store"
)

// The tool list cache keeps each server's last tools/list in the store, so
// that a host started again (Options.WarmStart) can show tools before its
// servers have answered. It is never the authority: the server is asked
// again in the background, and a list that differs reaches the catalog only
// through the normal snapshot swap at a safe point.
//
// On 2026-07-28 servers the list is kept for the server's ttlMs (not at all
// for 0), and a list the server marks private is kept per tenant and user,
// never shared. On older servers it is kept until the server says its tools
// changed, or until it differs.

// recordingLister passes tools/list pages through and keeps what a cache
// entry needs.
type recordingLister struct {
	inner catalog.Lister
	tools []*mcp.Tool
	// taskSupport is each tool's execution.taskSupport, read from the
	// pages as the server sent them (catalog.TaskSupport).
	taskSupport map[string]string
	ttlMs       int
	scope       string
	// scrub, when set, takes the host's secrets out of each tool listed
	// (governance.scrubbedTool), before the catalog or the store sees it.
	scrub func(*mcp.Tool) *mcp.Tool
	// pages are the cache fields of the pages it passed, as the SDK keeps
	// them (expireListed).
	pages []*mcp.Cacheable
}

func (l *recordingLister) ListTools(ctx context.Context, params *mcp.ListToolsParams) (*mcp.ListToolsResult, error) {
	if l.taskSupport != nil {
		ctx = upstream.WithRawResult(ctx, func(page json.RawMessage) { catalog.TaskSupport(page, l.taskSupport) })
	}
	res, err := l.inner.ListTools(ctx, params)
	if err != nil {
		return nil, err
	}
	if l.scrub != nil {
		for i, t := range res.Tools {
			res.Tools[i] = l.scrub(t)
		}
	}
	l.tools = append(l.tools, res.Tools...)
	if len(l.pages) == 0 || res.TTLMs < l.ttlMs {
		l.ttlMs = res.TTLMs // the shortest life of any page
	}
	if res.CacheScope == "private" {
		l.scope = "private"
	}
	l.pages = append(l.pages, &res.Cacheable)
	return res, nil
}

// expireListed marks pages as expired in the SDK's cache of a session. On
// a 2026-07-28 session the SDK keeps each list page for its ttlMs and
// answers a list within that time itself, without asking the server; it
// keeps the very results it returned, so a page whose ttlMs is 0 is
// dropped at its next use and the server is asked. A discovery that must
// see the server's own word (another replica said the server's lists
// changed) expires the pages of the last one first: this replica's copy
// of them is what is stale.
func expireListed(pages []*mcp.Cacheable) {
	for _, c := range pages {
		c.TTLMs = 0
	}
}

// cachedLister serves a cached list as one page, so that cached tools go
// through every check discovery makes.
type cachedLister struct{ tools []*mcp.Tool }

func (l cachedLister) ListTools(context.Context, *mcp.ListToolsParams) (*mcp.ListToolsResult, error) {
	return &mcp.ListToolsResult{Tools: l.tools}, nil
}

// listKeys returns the cache keys of one of a server's lists, each
// starting with kind: the shared one, and the one for this host's tenant
// and user (for private lists). The configuration is part of the key:
// another command or allowlist is another catalog.
func (h *Host) listKeys(s *server, kind string) (shared, private string) {
	cfg := s.cfg
	b, _ := json.Marshal(struct {
		ID, Transport, Command string
		Args                   []string
		Cwd                    string
		Env                    map[string]string
		SecretEnv              []string // names only: the values are secrets
		AllowedTools           []string
		ProtocolVersions       []string
		AllowedResources       []string `json:",omitempty"`
		AllowedPrompts         []string `json:",omitempty"`
	}{cfg.ID, cfg.Transport, cfg.Command, cfg.Args, cfg.Cwd, cfg.Env, slices.Sorted(maps.Keys(cfg.SecretEnv)), cfg.AllowedTools, cfg.ProtocolVersions,
		cfg.AllowedResources, cfg.AllowedPrompts})
	sum := sha256.Sum256(b)
	shared = kind + hex.EncodeToString(sum[:16])
	p := sha256.Sum256([]byte(shared + "\x00" + h.gov.principal.Tenant + "\x00" + h.gov.principal.User))
	return shared, kind + hex.EncodeToString(p[:16])
}

// rememberTools writes what discovery saw to the cache.
func (h *Host) rememberTools(ctx context.Context, s *server, version string, l *recordingLister) {
	kept := make([]cachedTool, len(l.tools))
	for i, t := range l.tools {
		kept[i] = cachedTool{Tool: t}
		if support := l.taskSupport[t.Name]; support != "" {
			kept[i].Execution = &toolExecution{TaskSupport: support}
		}
	}
	h.keepList(ctx, s, "tools:", version, l.ttlMs, l.scope, kept)
}

// keepList writes one of a server's lists (v, as JSON) to the cache under
// kind, kept as ttlMs and scope say: on a 2026-07-28 server (version) for
// ttlMs, not at all for 0; a private list for this host's tenant and
// user only.
func (h *Host) keepList(ctx context.Context, s *server, kind, version string, ttlMs int, scope string, v any) {
	shared, private := h.listKeys(s, kind)
	lists := h.gov.store.ToolLists()
	modern := version >= "2026-07-28"
	if modern && ttlMs <= 0 {
		// "Immediately stale": nothing to keep.
		lists.Delete(ctx, shared)
		lists.Delete(ctx, private)
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		return
	}
	sum := sha256.Sum256(data)
	entry := store.ToolList{Key: shared, Tools: data, Hash: "sha256:" + hex.EncodeToString(sum[:]), FetchedAt: h.gov.now()}
	if modern {
		entry.ExpiresAt = entry.FetchedAt.Add(time.Duration(ttlMs) * time.Millisecond)
	}
	if scope == "private" {
		entry.Key = private
		lists.Delete(ctx, shared) // never served to another user
	}
	if err := lists.Put(ctx, entry); err != nil {
		h.log.Warn("cannot cache a list", "server", s.cfg.ID, "list", strings.TrimSuffix(kind, ":"), "error", err)
	}
}

// cachedList reads one of a server's lists from the cache into v: this
// host's principal's own, else the shared one.
func (h *Host) cachedList(ctx context.Context, s *server, kind string, v any) bool {
	shared, private := h.listKeys(s, kind)
	now := h.gov.now()
	entry, err := h.gov.store.ToolLists().Get(ctx, private, now)
	if err != nil {
		if entry, err = h.gov.store.ToolLists().Get(ctx, shared, now); err != nil {
			return false
		}
	}
	return json.Unmarshal(entry.Tools, v) == nil
}

// forgetList drops one of a server's cached lists.
func (h *Host) forgetList(s *server, kind string) {
	shared, private := h.listKeys(s, kind)
	ctx := context.Background()
	h.gov.store.ToolLists().Delete(ctx, shared)
	h.gov.store.ToolLists().Delete(ctx, private)
}

// forgetTools drops a server's cached list: it said its tools changed.
func (h *Host) forgetTools(s *server) { h.forgetList(s, "tools:") }

// cachedTools returns a server's tools from the cache, checked as
// discovery checks them, or false when there is no usable list.
func (h *Host) cachedTools(ctx context.Context, s *server) ([]*catalog.Tool, bool) {
	var cached []cachedTool
	if !h.cachedList(ctx, s, "tools:", &cached) {
		return nil, false
	}
	raw := make([]*mcp.Tool, 0, len(cached))
	support := map[string]string{}
	for _, t := range cached {
		if t.Tool == nil {
			return nil, false
		}
		raw = append(raw, t.Tool)
		if t.Execution != nil {
			support[t.Name] = t.Execution.TaskSupport
		}
	}
	tools, err := catalog.Discover(ctx, &s.cfg, cachedLister{raw}, h.limits())
	if err != nil {
		return nil, false
	}
	for _, t := range tools {
		effect, _ := h.gov.policy.Classify(t.Server, t.Remote)
		t.Effect = effect
	}
	return h.withhold(ctx, s, tools, support), true
}

// cachedTool is a tool as the cache keeps it: the SDK's, with the
// execution the SDK's type lacks (catalog.TaskSupport).
type cachedTool struct {
	*mcp.Tool
	Execution *toolExecution `json:"execution,omitempty"`
}

type toolExecution struct {
	TaskSupport string `json:"taskSupport,omitempty"`
}
