package airlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/canonical"
	"github.com/airlockhq/airlock/internal/redact"
	"github.com/airlockhq/airlock/internal/upstream"
	"github.com/airlockhq/airlock/policy"
	"github.com/airlockhq/airlock/store"
)

// ListRecoveries lists the journal records of st that f selects and as
// may see: those of calls made for its principal, or, with AllPrincipals,
// every principal's (which is written to the audit trail).
func ListRecoveries(ctx context.Context, st store.Store, f store.RecordFilter, as Actor) ([]store.Record, error) {
	return listAs(ctx, st, as, "list recovery records", store.EventRecoveryOperator, "list",
		func(p Principal) { f.Tenant, f.User = p.Tenant, p.User },
		func() ([]store.Record, error) { return st.Journal().Records(ctx, f) })
}

// GetRecovery returns the journal record id of st, if as may see it (see
// ListRecoveries). Another principal's record is ErrOtherPrincipal.
func GetRecovery(ctx context.Context, st store.Store, id string, as Actor) (store.Record, error) {
	rec, err := recordFor(ctx, st, id, as)
	if err != nil {
		return rec, err
	}
	return rec, shown(ctx, st, as, store.EventRecoveryOperator, ownedRecord(rec))
}

// recordFor reads a journal record that as may act on.
func recordFor(ctx context.Context, st store.Store, id string, as Actor) (store.Record, error) {
	rec, err := st.Journal().Get(ctx, id)
	if err != nil {
		return store.Record{}, err // the store's error names the record
	}
	if !as.AllPrincipals && (rec.Tenant != as.Principal.Tenant || rec.User != as.Principal.User) {
		return store.Record{}, fmt.Errorf("recovery record %s: %w than %s/%s", id, ErrOtherPrincipal, as.Principal.Tenant, as.Principal.User)
	}
	return rec, nil
}

// ResolveRecovery records what a person found out about a call whose
// outcome was unknown: applied or not-applied, once, for as: a record of a
// call made for its principal, or, with AllPrincipals, any (another
// principal's record is otherwise ErrOtherPrincipal). The audit trail is
// written as DecideApproval writes it.
func ResolveRecovery(ctx context.Context, st store.Store, id string, r store.Resolution, note string, as Actor) error {
	return withTrail(ctx, st, func(t *auditTrail) error {
		rec, err := recordFor(ctx, st, id, as)
		if err != nil {
			return err
		}
		var red *redact.Redactor // the built-in credential formats
		if err := st.Journal().Resolve(ctx, id, r, red.String(note), as.By); err != nil {
			return err // the store's error names the record
		}
		if as.AllPrincipals {
			t.w.Append(ctx, operatorEvent(as, store.EventRecoveryOperator, "resolve", ownedRecord(rec)))
		}
		t.w.Append(ctx, store.Event{Event: store.EventRecoveryResolved, Server: rec.Server, Tool: rec.Tool,
			Fields: principalFields(as.sourced(map[string]any{"recovery": id, "resolution": string(r), "by": as.By}), "", Principal{Tenant: rec.Tenant, User: rec.User})})
		return nil
	})
}

// beginIntent writes the journal's intent for a call that is not a read
// and sets q.intent to its id ("" for a read, which the journal does not
// track). An error means the call must not be sent.
func (h *Host) beginIntent(ctx context.Context, q *request) error {
	q.intent = ""
	d := q.decision
	if d.Effect == policy.Read {
		return nil
	}
	in := store.Intent{ID: store.NewID("rec_"), CallID: q.call.ID, Server: q.tool.Server, Tool: q.tool.Name, RemoteTool: q.tool.Remote,
		ArgsHash: canonical.Hash(q.args), Arguments: h.recordArguments(q.args), Snapshot: q.snap.ID(), Effect: string(d.Effect), Idempotent: d.Idempotent,
		Tenant: q.snap.who.Tenant, User: q.snap.who.User, CreatedAt: h.gov.now()}
	// The call waits for its intent to be durable, not for the journal's
	// record of it, where the store tells the two apart.
	j := h.gov.store.Journal()
	begin := j.Begin
	if later, ok := j.(store.LaterBeginner); ok {
		begin = later.BeginLater
	}
	if err := begin(context.WithoutCancel(ctx), in); err != nil {
		return err
	}
	q.intent = in.ID
	return nil
}

// Bounds of the arguments a journal record keeps: the person checking
// whether a write took effect needs to see what it was, not megabytes of
// it (args_hash covers the whole value).
const (
	maxRecordArgs   = 64 << 10 // bytes of a record's arguments
	maxRecordString = 1 << 10  // bytes of one string, when the whole is more than maxRecordArgs
)

// recordArguments is how a journal record keeps a call's arguments, for
// recovery show: redacted as approvals are (secret_env values and
// credential formats), as JSON that escapes what a terminal would hide,
// and within maxRecordArgs: long strings are cut, and arguments still too
// large are replaced by a note. Redaction comes first, so that a cut
// never leaves part of a secret.
func (h *Host) recordArguments(args map[string]any) json.RawMessage {
	red := h.gov.redactor.Value(args)
	text, err := canonical.Display(red)
	if err == nil && len(text) > maxRecordArgs {
		text, err = canonical.Display(cutStrings(red, maxRecordString))
	}
	if err != nil || len(text) > maxRecordArgs {
		// The arguments decoded strictly, so they encode; the one way here
		// is size.
		text, _ = canonical.Display(map[string]any{"…": fmt.Sprintf("%d bytes of arguments, too many to keep: args_hash covers them", len(text))})
	}
	return json.RawMessage(text)
}

// cutStrings returns v, a decoded JSON value, with every string longer
// than max bytes cut there (on a character boundary) and the length of
// the rest noted.
func cutStrings(v any, max int) any {
	switch x := v.(type) {
	case string:
		if len(x) <= max {
			return x
		}
		kept := strings.ToValidUTF8(x[:max], "") // not half a character
		return fmt.Sprintf("%s… (%d more bytes)", kept, len(x)-len(kept))
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cutStrings(e, max)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cutStrings(e, max)
		}
		return out
	}
	return v
}

// endIntent records a call's outcome. It runs even when the caller's
// context is cancelled: every intent ends in exactly one outcome. An
// answer's outcome (succeeded, failed) is written without the caller
// waiting for it, where the store can (store.LaterEnder): a crash before
// it is written leaves the intent open, which recovery marks unknown, and
// nothing is ever sent again. An unknown outcome is written before the
// call returns: the person it is shown to may look it up at once.
func (h *Host) endIntent(id string, o store.Outcome, detail string) {
	if id == "" {
		return
	}
	detail = h.gov.redactor.String(detail)
	failed := func(err error) {
		if err != nil {
			// The intent stays open; the next start of the host marks
			// it unknown, which is the truth as far as anyone can tell.
			h.log.Error("cannot record a call's outcome", "intent", id, "outcome", o, "error", err)
		}
		if errors.Is(err, store.ErrConflict) && o != store.OutcomeUnknown {
			// Another process took this host for dead and ended the
			// intent unknown (its store lock was lost, as when
			// PostgreSQL restarts): what the server answered is kept on
			// the record, as evidence for the person who resolves it;
			// not on this goroutine, which may be the store's own for
			// EndLater, whose reads wait for it.
			h.ending.Add(1)
			go func() {
				defer h.ending.Done()
				h.noteOutcome(id, o, detail)
			}()
		}
	}
	j := h.gov.store.Journal()
	if later, ok := j.(store.LaterEnder); ok && o != store.OutcomeUnknown {
		h.ending.Add(1)
		later.EndLater(id, o, detail, func(err error) {
			defer h.ending.Done()
			failed(err)
		})
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	failed(j.End(ctx, id, o, detail))
}

// recoverOpen marks unknown the intents that processes which died left
// open (the store knows which writers are alive): their calls were sent,
// or may have been, and nobody saw an answer.
func (h *Host) recoverOpen(ctx context.Context) {
	n, err := h.gov.store.Journal().RecoverOpen(ctx, h.gov.now())
	if err != nil {
		h.log.Error("cannot recover the journal", "error", err)
		return
	}
	if n > 0 {
		h.log.Warn("calls of a process that died have unknown outcomes: see airlock recovery list", "count", n)
	}
}

// lateAnswerWait is how long the host keeps listening for the answer to a
// call whose outcome it recorded unknown.
const lateAnswerWait = 10 * time.Minute

// awaitLate keeps listening, on a connection that can catch it, for the
// answer to q's call, whose outcome was just recorded unknown: if it comes
// within lateAnswerWait, what it says is kept on the journal record, as
// evidence for the person who resolves it (never as a resolution).
func (h *Host) awaitLate(q *request) {
	intent := q.intent
	ev := q.event(store.EventLateAnswer, map[string]any{"recovery": intent})
	q.link.conn.AwaitLate(q.late, lateAnswerWait, func(a upstream.LateAnswer) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.gov.store.Journal().LateAnswer(ctx, intent, h.describeLate(a), a.At); err != nil {
			h.log.Warn("cannot keep a late answer", "intent", intent, "error", err)
			return
		}
		h.audit(ctx, ev)
	})
}

// describeLate says what a late answer says, for a person: whether the
// server reported success, a tool error or a JSON-RPC error, and the start
// of its text, quoted. Secrets are redacted.
func (h *Host) describeLate(a upstream.LateAnswer) string {
	var s string
	var res mcp.CallToolResult
	switch {
	case a.Err != nil:
		s = "the server answered with a JSON-RPC error: " + quoteCut(a.Err.Error())
	case json.Unmarshal(a.Result, &res) != nil:
		s = "the server answered with something that is not a tools/call result"
	default:
		var text string
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				text = t.Text
				break
			}
		}
		s = "the server answered that the call succeeded: " + quoteCut(text)
		if res.IsError {
			s = "the server answered that the call failed (isError): " + quoteCut(text)
		}
	}
	return h.gov.redactor.String(h.gov.scrub(s))
}

// quoteCut quotes the start of a server's text for a person: escaped, so
// that it cannot move the terminal's cursor, and at most 300 bytes of it.
func quoteCut(s string) string {
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "") + "…"
	}
	return strconv.Quote(s)
}

// noteOutcome keeps on the record id, which recovery ended unknown while
// its call was still under way in this host, the outcome the host saw:
// evidence, not a resolution (Journal.LateAnswer).
func (h *Host) noteOutcome(id string, o store.Outcome, detail string) {
	note := fmt.Sprintf("the host that sent the call was still running when it was marked unknown, and the server answered: %s", o)
	if detail != "" {
		note += ": " + quoteCut(detail)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.gov.store.Journal().LateAnswer(ctx, id, note, h.gov.now()); err != nil {
		h.log.Warn("cannot keep the outcome of a call marked unknown meanwhile", "intent", id, "error", err)
	}
}
