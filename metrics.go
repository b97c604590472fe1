package airlock

import (
	"context"

	"github.com/airlockhq/airlock/metrics"
	"github.com/airlockhq/airlock/policy"
	"github.com/airlockhq/airlock/store"
)

// measure counts q's result in Options.Metrics. A call for a tool not in
// the catalog is counted under server and tool "": the name is the
// model's, and a label must not grow with what a model makes up.
func (h *Host) measure(q *request) {
	m := h.opts.Metrics
	if m == nil {
		return
	}
	server, tool := "", ""
	if q.tool != nil && q.r.Status != UnknownTool {
		server, tool = q.tool.Server, q.tool.Name
	}
	switch q.kind {
	case policy.KindResource:
		m.Content(server, "resource", string(q.r.Status))
	case policy.KindPrompt:
		m.Content(server, "prompt", string(q.r.Status))
	default:
		m.Call(server, tool, string(q.r.Status), q.r.Duration)
	}
}

// maxCounted bounds the approvals and journal records a scrape counts: a
// store with more reports this many, and the person looking has work
// enough either way.
const maxCounted = 10000

// metricsState is the host's gauges, for Options.Metrics to report when
// scraped.
func (h *Host) metricsState(ctx context.Context) metrics.State {
	s := metrics.State{ApprovalsPending: -1, UnknownOutcomes: -1}
	h.calls.mu.Lock()
	s.InFlight = len(h.calls.inflight)
	h.calls.mu.Unlock()
	s.TenantInFlight, s.TenantsAtLimit = h.tenants.usage()
	for _, srv := range h.servers {
		s.Servers = append(s.Servers, srv.gauges())
	}
	a, aerr := h.gov.store.Approvals().List(ctx, store.ApprovalFilter{Status: store.ApprovalPending, Limit: maxCounted})
	if aerr == nil {
		s.ApprovalsPending = len(a)
	}
	r, rerr := h.gov.store.Journal().Records(ctx, store.RecordFilter{Limit: maxCounted})
	if rerr == nil {
		s.UnknownOutcomes = len(r)
	}
	s.StoreUp = aerr == nil && rerr == nil
	return s
}

// gauges is what a scrape reports of s.
func (s *server) gauges() metrics.Server {
	g := metrics.Server{ID: s.cfg.ID, Status: s.getStatus().Status, InFlight: len(s.slots), Limit: cap(s.slots),
		Queued: int(s.queued.Load())}
	s.lanesMu.Lock()
	for _, l := range s.lanes {
		g.InFlight += len(l.slots)
	}
	s.lanesMu.Unlock()
	return g
}
