package airlock

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/telemetry"
	"github.com/airlockhq/airlock/internal/upstream"
	"github.com/airlockhq/airlock/policy"
	"github.com/airlockhq/airlock/store"
)

// audit appends events; a failure to audit is logged, and never changes
// what a call does.
func (h *Host) audit(ctx context.Context, e ...store.Event) {
	h.trail.w.Append(ctx, e...)
}

// argsRecord is how arguments and results appear in the audit trail: their
// shape and hash, or (where the configuration asks) their redacted values.
// The work is done by the audit writer, off the call's path: v must not
// change afterwards (arguments and results are not changed once decoded).
func (h *Host) argsRecord(tool string, v any, prefix string, fields map[string]any) {
	audit.Record(fields, prefix, tool, v)
}

// An auditTrail is where the host and the commands that run without one
// write the audit trail: the writer over a store's trail, and the
// OpenTelemetry exporter the standard environment asks for.
type auditTrail struct {
	w   *audit.Writer
	tel *telemetry.Exporter // nil unless OTLP export is configured
	log *slog.Logger
}

// openTrail starts writing st's audit trail. With the standard
// OpenTelemetry environment set (see telemetry.FromEnv), the events are
// also exported as OTLP log records; a malformed environment is an error.
func openTrail(ctx context.Context, st store.Store, opts audit.Options) (*auditTrail, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	tel, err := telemetry.FromEnv(ctx, &telemetry.Options{Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	return &auditTrail{w: audit.New(tel.Audit(st.Audit()), &opts), tel: tel, log: opts.Logger}, nil
}

// close writes what is queued, then sends what the exporter holds, each
// within a bound.
func (t *auditTrail) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := t.w.Close(ctx); err != nil {
		t.log.Error(err.Error())
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.tel.Shutdown(ctx); err != nil {
		t.log.Warn("cannot flush OpenTelemetry export", "error", err)
	}
}

// withTrail runs f with st's audit trail, for a command that records what
// a person did without a Host, and writes (and exports) the events before
// it returns.
func withTrail(ctx context.Context, st store.Store, f func(*auditTrail) error) error {
	t, err := openTrail(ctx, st, audit.Options{})
	if err != nil {
		return err
	}
	defer t.close()
	return f(t)
}

// event is an audit event of q's call: its server, tool and snapshot,
// and in "call" the id that every event of one Host.Call carries
// (Result.CallID).
func (q *request) event(name string, fields map[string]any) store.Event {
	if fields == nil {
		fields = map[string]any{}
	}
	fields["call"] = q.r.CallID
	// Every event of a call names whom it was made for, so that a reader
	// who may see only one principal's calls (the console) tells them
	// apart: an event that names nobody is shown to everyone.
	if _, ok := fields["tenant"]; !ok {
		principalFields(fields, "", q.snap.who)
	}
	e := store.Event{Event: name, Tool: q.call.Name, Snapshot: q.snap.ID(), Fields: fields}
	if q.tool != nil {
		e.Server, e.Tool = q.tool.Server, q.tool.Name
	}
	if q.resource != "" {
		fields["uri"] = q.resource // scrubbed with the event
	}
	return e
}

// auditDecision records what hooks and policy decided about q. The
// decision of a read they allow without asking is held (see fold).
func (h *Host) auditDecision(ctx context.Context, q *request) {
	d := q.r.Decision
	held := d.Verdict == Allow && q.decision.Effect == policy.Read
	// A held decision's fields become its result's (see recordResult):
	// room for those too.
	size := 8
	if held {
		size = resultFields
	}
	fields := make(map[string]any, size)
	fields["decision"], fields["rule"], fields["reason"], fields["effect"] = d.Verdict, d.Rule, d.Reason, q.tool.Effect
	fields["generation"] = q.snap.Generation()
	h.argsRecord(q.tool.Name, q.args, "args", fields)
	e := q.event(store.EventDecision, fields)
	if held {
		e.Time = h.gov.now()
		q.fold = &fold{held: []store.Event{e}}
		return
	}
	h.audit(ctx, e)
}

// auditSent records that q goes out, as attempt (1 for the first send).
// fields are the event's own; they may name the journal record (intent).
// The first send of a read whose decision is held is held with it.
func (h *Host) auditSent(ctx context.Context, q *request, attempt int, fields map[string]any) {
	fields["attempt"] = attempt
	e := q.event(store.EventCallSent, fields)
	if attempt == 1 && q.fold.hold(e, h.gov.now) {
		return
	}
	h.spill(ctx, q)
	h.audit(ctx, e)
}

// A fold holds back the decision and call_sent events of a read that
// hooks and policy allow without asking, so that its result event carries
// their fields instead: one audit record for a read sent once, which is
// most of what a host writes. A read that ends any other way (refused or
// failed before it was sent, sent again after its session was gone, or
// asked for input while it ran) spills them: they are written as they
// were, with their own times, before what follows. Its methods are safe
// for concurrent use (a server's questions come on the SDK's goroutines);
// a nil fold holds nothing.
type fold struct {
	mu      sync.Mutex
	held    []store.Event // the decision, then call_sent
	spilled bool
}

// hold holds e, stamped with now, when the decision alone is held.
func (f *fold) hold(e store.Event, now func() time.Time) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.spilled || len(f.held) != 1 {
		return false
	}
	e.Time = now()
	f.held = append(f.held, e)
	return true
}

// take returns what f holds, once.
func (f *fold) take() []store.Event {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	held := f.held
	f.held, f.spilled = nil, true
	return held
}

// spill writes what q holds, if anything: something other than its
// result is about to be written about it.
func (h *Host) spill(ctx context.Context, q *request) {
	if held := q.fold.take(); len(held) > 0 {
		h.audit(ctx, held...)
	}
}

// folded puts into fields, a result's, the fields of the events its call
// held: all but call (the result's own) and the empty intent of a read.
func folded(fields map[string]any, held ...store.Event) {
	for _, e := range held {
		for k, v := range e.Fields {
			if k == "call" || k == "intent" {
				continue
			}
			fields[k] = v
		}
	}
}

// resultFields is room for the fields of a folded read's result, which
// the writer adds to (shapes and hashes) without the map growing.
const resultFields = 24

// recordResult writes the result of a call to the audit trail: its class,
// whom it was made for, and what the server answered (its structured
// content and its content, as shape and hash or, where audit.record_values
// asks, redacted values). The result of a read sent once carries its held
// decision and call_sent (see fold); any other call's follow what it held.
func (h *Host) recordResult(ctx context.Context, q *request) {
	snap, r := q.snap, q.r
	var fields map[string]any
	if held := q.fold.take(); len(held) == 2 {
		// The decision's fields are the result's (its call is the
		// result's own, set below), with call_sent's.
		fields = held[0].Fields
		folded(fields, held[1])
	} else {
		fields = make(map[string]any, resultFields)
		if len(held) > 0 {
			h.audit(ctx, held...)
		}
	}
	fields["generation"], fields["trace_id"] = snap.Generation(), r.TraceID
	principalFields(fields, "", snap.who)
	if r.QueueWait > 0 {
		fields["queue_wait_ms"] = r.QueueWait.Milliseconds()
	}
	if l := q.sent; l != nil {
		fields["connection"] = l.gen
		if id := l.conn.SessionID(); id != "" {
			fields["session"] = upstream.Fingerprint(id)
		}
	}
	if r.Err != nil && r.Status != ToolError {
		// A tool error's message is the tool's own text, its result: it is
		// recorded below with the content, as shape and hash unless
		// audit.record_values names the tool.
		fields["error"] = r.Err.Msg
	}
	if r.ApprovalID != "" {
		fields["approval"] = r.ApprovalID
	}
	if r.RecoveryID != "" {
		fields["recovery"] = r.RecoveryID
	}
	if r.InputRounds > 0 {
		fields["input_rounds"] = r.InputRounds
	}
	if q.tool != nil {
		if r.Structured != nil {
			h.argsRecord(q.tool.Name, r.Structured, "result", fields)
		}
		if q.res != nil && len(q.res.Content) > 0 && (r.Status == OK || r.Status == ToolError) {
			h.argsRecord(q.tool.Name, h.contentRecord(q.res.Content, r.Artifacts), "content", fields)
		}
	}
	e := q.event(store.EventResult, fields)
	e.Class, e.DurationMS = string(r.Status), r.Duration.Milliseconds()
	h.audit(ctx, e)
}

// contentRecord is a result's content as the audit trail records it, one
// entry a block: text as the caller got it (secrets scrubbed), and media
// as the artifact it was stored as (artifacts are in the order of their
// blocks), never its bytes.
func (h *Host) contentRecord(blocks []mcp.Content, artifacts []Artifact) []any {
	out := make([]any, 0, len(blocks))
	stored := func(kind string) map[string]any {
		b := map[string]any{"type": kind}
		if len(artifacts) > 0 {
			a := artifacts[0]
			artifacts = artifacts[1:]
			b["artifact"], b["media_type"], b["size"] = a.ID, a.MediaType, a.Size
		}
		return b
	}
	for _, c := range blocks {
		var b map[string]any
		switch c := c.(type) {
		case *mcp.TextContent:
			b = map[string]any{"type": "text", "text": h.gov.scrub(c.Text)}
		case *mcp.ImageContent:
			b = stored("image")
		case *mcp.AudioContent:
			b = stored("audio")
		case *mcp.EmbeddedResource:
			b = stored("resource")
			if c.Resource != nil {
				b["uri"] = c.Resource.URI
			}
		case *mcp.ResourceLink:
			b = map[string]any{"type": "resource_link", "uri": c.URI, "name": c.Name}
		default:
			continue // render refused it: the call did not end ok
		}
		out = append(out, b)
	}
	return out
}
