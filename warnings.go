package airlock

import (
	"context"
	"slices"

	"github.com/airlockhq/airlock/internal/catalog"
	"github.com/airlockhq/airlock/policy"
	"github.com/airlockhq/airlock/store"
)

// A Warning is a configuration entry that names a tool none of the ready
// servers has: a misspelt rule that never applies, a classification that
// classifies nothing, a tool whose values are never recorded. The
// configuration is valid; the entry just has no effect.
type Warning = policy.Warning

// Warnings returns the entries of the configuration's policy and
// audit.record_values that name no tool of the snapshot, as checked when
// it was built: entries about servers that were not ready then are not
// reported.
func (s *Snapshot) Warnings() []Warning { return slices.Clone(s.warnings) }

// unmatched checks the configuration against a new snapshot of l, and
// writes each warning to the log and the audit trail the first time the
// host sees it.
func (h *Host) unmatched(l *lineage, snap *catalog.Snapshot) []Warning {
	cat := policy.Catalog{Prefixes: map[string]string{}}
	for _, s := range l.servers {
		cat.Prefixes[s.cfg.ID] = s.cfg.LocalPrefix()
		if s.getStatus().Status == StatusReady {
			cat.Ready = append(cat.Ready, s.cfg.ID)
		} else {
			cat.NotReady = append(cat.NotReady, s.cfg.ID)
		}
	}
	if l.task == nil {
		// The task-scoped servers run only in tasks: their tools are
		// unknown here.
		for _, s := range h.perTask {
			cat.NotReady = append(cat.NotReady, s.ID)
			cat.Prefixes[s.ID] = s.LocalPrefix()
		}
	}
	for _, t := range snap.Tools() {
		cat.Tools = append(cat.Tools, policy.CatalogTool{Server: t.Server, Name: t.Name, Remote: t.Remote})
	}
	warnings := h.gov.policy.Unmatched(cat, h.cfg.Audit)
	for _, w := range warnings {
		if _, seen := h.warned.LoadOrStore(w.Msg, true); seen {
			continue
		}
		h.log.Warn("configuration entry names no tool", "entry", w.Entry, "source", w.Source, "warning", w.Msg)
		h.audit(context.Background(), store.Event{Event: store.EventPolicyWarning, Snapshot: snap.ID(),
			Fields: map[string]any{"entry": w.Entry, "source": w.Source, "message": w.Msg}})
	}
	return warnings
}
