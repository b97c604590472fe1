package airlock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/airlockhq/airlock/internal/catalog"
	storepkg "github.com/airlockhq/airlock/store"
)

// A lineage is a line of snapshots over a set of servers: the host's, or a
// task's (the host's servers and the task's own). A snapshot never changes;
// at a safe point (BeginTurn) the lineage discovers the tools of servers
// that said theirs changed, and swaps in a new snapshot, one generation on,
// if anything did change.
type lineage struct {
	mu      sync.Mutex // one refresh at a time, so an older one never overwrites a newer
	servers []*server
	seen    []uint64 // the tools version of each server in the current snapshot
	snap    atomic.Pointer[Snapshot]
	task    *Task
}

func newLineage(servers []*server, task *Task) *lineage {
	return &lineage{servers: servers, seen: make([]uint64, len(servers)), task: task}
}

// build makes the lineage's first snapshot.
func (h *Host) build(l *lineage) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	snap, seen, err := h.snapshotOf(l, 1)
	if err != nil {
		return err
	}
	l.seen = seen
	l.snap.Store(snap)
	return nil
}

// snapshotOf freezes the current tools of the lineage's servers.
func (h *Host) snapshotOf(l *lineage, generation uint64) (*Snapshot, []uint64, error) {
	var (
		tools    []*catalog.Tool
		content  catalog.Content
		withheld []Withheld
	)
	seen := make([]uint64, len(l.servers))
	byID := make(map[string]*server, len(l.servers))
	launches := make(map[string]string, len(l.servers))
	prefixes := make(map[string]string, len(l.servers))
	for i, s := range l.servers {
		ts, v := s.toolsNow()
		tools = append(tools, ts...)
		c := s.contentNow()
		content.Resources = append(content.Resources, c.Resources...)
		content.Templates = append(content.Templates, c.Templates...)
		content.Prompts = append(content.Prompts, c.Prompts...)
		withheld = append(withheld, s.withheldNow()...)
		seen[i] = v
		byID[s.cfg.ID] = s
		launches[s.cfg.ID] = s.cfg.LaunchFingerprint()
		prefixes[s.cfg.ID] = s.cfg.LocalPrefix()
	}
	snap, err := catalog.BuildWith(tools, content, generation, launches, prefixes)
	if err != nil {
		return nil, nil, &Error{Kind: ContractError, Msg: "cannot name the tools: " + err.Error(), Err: err}
	}
	fields := map[string]any{"generation": generation, "tools": len(snap.Tools())}
	if n := len(content.Resources) + len(content.Templates) + len(content.Prompts); n > 0 {
		fields["resources"], fields["templates"], fields["prompts"] = len(content.Resources), len(content.Templates), len(content.Prompts)
	}
	if l.task != nil {
		fields["task"] = l.task.info.ID
	}
	h.audit(context.Background(), storepkg.Event{Event: storepkg.EventDiscovery, Snapshot: snap.ID(), Fields: fields})
	who := h.Principal()
	if l.task != nil {
		who = l.task.who
	}
	warnings := h.unmatched(l, snap)
	return &Snapshot{snap: snap, servers: byID, task: l.task, who: who, warnings: warnings, withheld: withheld}, seen, nil
}

// refresh is the safe point: it discovers again the tools of every server
// marked dirty (however many times it was marked: a storm of notifications
// costs one discovery), and swaps in a new snapshot if the catalog changed.
func (h *Host) refresh(ctx context.Context, l *lineage) (*Snapshot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, s := range l.servers {
		if s.getStatus().Status == StatusAuthRequired {
			// Someone may have logged in since; without a token this
			// fails before anything is sent.
			if _, err := h.relogin(ctx, s, ""); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err := h.rediscover(ctx, s); err != nil {
			errs = append(errs, err)
		}
	}
	cur := l.snap.Load()
	changed := false
	for i, s := range l.servers {
		if _, v := s.toolsNow(); v != l.seen[i] {
			changed = true
		}
	}
	if !changed {
		return cur, errors.Join(errs...)
	}
	next, seen, err := h.snapshotOf(l, cur.Generation()+1)
	if err != nil {
		return cur, errors.Join(append(errs, err)...)
	}
	before := l.seen
	l.seen = seen
	if next.ID() == cur.ID() {
		return cur, errors.Join(errs...) // rediscovered, and nothing changed
	}
	l.snap.Store(next)
	if l.task == nil {
		h.announceChanged(h.changedOffers(l, before, cur, next))
	}
	return next, errors.Join(errs...)
}

// changedOffers returns the servers of l that offer something else in
// next than in cur, among those whose tools were replaced since (before:
// their versions in cur) by a discovery that worked and was not caused by
// another replica's announcement alone (server.told). A server that
// failed offers nothing here, which says nothing of what it offers
// others.
func (h *Host) changedOffers(l *lineage, before []uint64, cur, next *Snapshot) []string {
	var ids []string
	for i, s := range l.servers {
		v := l.seen[i]
		if tools, _ := s.toolsNow(); v == before[i] || tools == nil || v == s.quiet.Load() {
			continue
		}
		if cur.snap.Offered(s.cfg.ID) != next.snap.Offered(s.cfg.ID) {
			ids = append(ids, s.cfg.ID)
		}
	}
	return ids
}

// rediscover lists a dirty server's tools again. A server whose new catalog
// breaks the rules exposes no tools until it is fixed.
func (h *Host) rediscover(ctx context.Context, s *server) error {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	conn := s.current()
	if conn == nil || conn.Fault() != nil || !s.dirty.Load() {
		return nil
	}
	// Cleared first: a notification that arrives during discovery marks
	// the server for the next safe point.
	s.dirty.Store(false)
	told := s.told.Swap(false)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ConnectTimeout)
	defer cancel()
	tools, err := h.discover(ctx, s, conn)
	if err != nil {
		s.setTools(nil)
		s.setStatus(func(st *ServerStatus) { st.Status, st.Err, st.Tools = StatusDegraded, err, 0 })
		h.audit(ctx, storepkg.Event{Event: storepkg.EventServerFailed, Server: s.cfg.ID, Class: string(err.Kind),
			Fields: map[string]any{"error": err.Msg}})
		return err
	}
	if v := s.setTools(tools); told {
		s.quiet.Store(v)
	}
	s.setStatus(func(st *ServerStatus) {
		if st.Status == StatusDegraded {
			st.Status, st.Err = StatusReady, nil
		}
		st.Tools = len(tools)
	})
	return nil
}

// BeginTurn is the safe point between model turns: servers that said their
// tools changed are discovered again, and the newest snapshot is returned.
// Every call of the turn should use it, whatever servers do meanwhile.
// A server that fails its new discovery is reported in Servers; the turn
// still gets a snapshot.
func (h *Host) BeginTurn(ctx context.Context) *Snapshot {
	snap, err := h.refresh(ctx, h.line)
	if err != nil {
		h.log.Warn("refreshing the catalog", "error", err)
	}
	return snap.forTurn()
}

// A turn counts the calls made with one BeginTurn's snapshot, for
// limits.max_calls_per_turn.
type turn struct {
	calls atomic.Int64
}

// forTurn returns a copy of snap that counts its calls as one turn.
func (s *Snapshot) forTurn() *Snapshot {
	t := *s
	t.turn = &turn{}
	return &t
}
