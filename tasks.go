package airlock

import (
	"context"

	"github.com/airlockhq/airlock/internal/catalog"
	storepkg "github.com/airlockhq/airlock/store"
)

// A Withheld tool is one the allowlist admits that the host leaves out of
// the catalog because it cannot call it: a tool that can only be called
// as an MCP task (execution.taskSupport: required), which the SDK the host
// is built on cannot do yet. People see it with the reason
// (Snapshot.Withheld, airlock tools); a model never does.
type Withheld = catalog.Withheld

// Withheld returns the allowed tools the snapshot's servers have that the
// host cannot call, with the reason, by server and name.
func (s *Snapshot) Withheld() []Withheld { return append([]Withheld(nil), s.withheld...) }

// withhold takes the tools the host cannot call out of a server's
// discovered tools, remembers them for the snapshots (Snapshot.Withheld),
// and logs and audits each one. taskSupport is each tool's
// execution.taskSupport, by name.
func (h *Host) withhold(ctx context.Context, s *server, tools []*catalog.Tool, taskSupport map[string]string) []*catalog.Tool {
	kept, withheld := catalog.Withhold(tools, taskSupport)
	for _, w := range withheld {
		h.log.Warn("tool left out of the catalog", "server", w.Server, "tool", w.Tool, "reason", w.Reason)
		h.audit(ctx, storepkg.Event{Event: storepkg.EventToolFlagged, Server: w.Server,
			Fields: map[string]any{"remote_tool": w.Tool, "flag": w.Flag, "withheld": true, "reason": w.Reason}})
	}
	s.setWithheld(withheld)
	return kept
}
