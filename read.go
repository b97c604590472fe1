package airlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/catalog"
	"github.com/airlockhq/airlock/internal/schema"
	"github.com/airlockhq/airlock/internal/telemetry"
	"github.com/airlockhq/airlock/policy"
	"github.com/airlockhq/airlock/store"
)

// A Read asks for one resource.
type Read struct {
	// ID is the caller's own id for the read, echoed as Result.ToolCallID.
	ID string
	// URI is the resource's URI, as its server lists it or as a template
	// of its expands.
	URI string
	// Server names the server to read it from; "" lets the snapshot
	// decide: the one server whose allowed_resources matches the URI
	// (among several, the one that lists it or has a template for it).
	// When that is still not one server, the read is refused, never
	// guessed.
	Server string
	// Progress, Log and LogLevel are as in Call: they are told of the
	// progress notifications and log messages the server sends about
	// this read while it runs.
	Progress func(CallProgress)
	Log      func(CallLog)
	LogLevel string
}

// A ResourceContent is one of the contents a resources/read returned:
// text, or a blob kept in the artifact store.
type ResourceContent struct {
	URI      string    `json:"uri"`
	MIMEType string    `json:"mime_type,omitempty"`
	Text     string    `json:"text,omitempty"`
	Artifact *Artifact `json:"artifact,omitempty"`
	// Blob is the blob's bytes, for a caller that hands the contents on
	// (the gateway); the model sees Artifact.
	Blob []byte `json:"-"`
}

// The method names reads and gets stand under in the audit trail,
// approvals and hooks.
const (
	methodRead = "resources/read"
)

// readArgs is the shape of what a read is bound by: its URI.
var readArgs = mustSchema(`{"type":"object","properties":{"uri":{"type":"string"}},"required":["uri"]}`)

// mustSchema compiles a schema of the host's own.
func mustSchema(doc string) *schema.Schema {
	s, err := schema.Compile(json.RawMessage(doc), &schema.CompileOptions{RequireObject: true})
	if err != nil {
		panic(err)
	}
	return s
}

// ReadResource reads one resource through snap (the caller's turn) and
// returns its contents in Result.Contents: text as the server sent it,
// secrets scrubbed; blobs in the artifact store. Nothing is sent unless
// the URI is one the server's allowed_resources matches, hooks and policy
// let the read through (policy.rules with resource:; a read is allowed by
// default) and the server has room. A resource larger than
// limits.max_resource_bytes is a contract_error; one the server does not
// have is resource_not_found.
func (h *Host) ReadResource(ctx context.Context, snap *Snapshot, rd Read) *Result {
	began := time.Now()
	ctx, span := h.spans.start(ctx, methodRead)
	srv, e := h.resolveResource(snap, rd)
	if e != nil {
		r := &Result{ToolCallID: rd.ID, CallID: store.NewID("call_"), Snapshot: snap.ID(), Duration: time.Since(began),
			TraceID: telemetry.TraceID(ctx)}
		h.opts.Metrics.Content("", "resource", string(e.Kind))
		r.fail(e)
		h.endSpan(&request{kind: policy.KindResource, r: r, span: span})
		return r
	}
	tool := &catalog.Tool{Name: methodRead, Server: srv.cfg.ID, Remote: methodRead, Description: rd.URI,
		Input: readArgs, Effect: policy.Read}
	q := newAccess(ctx, snap, policy.KindResource, rd.ID, tool, srv, map[string]any{"uri": rd.URI})
	q.span = span
	q.call.Progress, q.call.Log, q.call.LogLevel = rd.Progress, rd.Log, rd.LogLevel
	defer h.finish(ctx, q, began)
	return h.access(ctx, q, policy.KindResource, rd.URI, func(ctx context.Context, q *request) *Result {
		return h.readResource(ctx, q, rd.URI)
	})
}

// resolveResource finds the server a read goes to.
func (h *Host) resolveResource(snap *Snapshot, rd Read) (*server, *Error) {
	if why := catalog.CheckURI(rd.URI); why != "" {
		return nil, newError(InvalidArguments, rd.Server, methodRead, nil, "cannot read %q: %s", printable(rd.URI), why)
	}
	if catalog.DotSegments(rd.URI) {
		return nil, newError(InvalidArguments, rd.Server, methodRead, nil, "cannot read %s: it has . or .. path segments; give the resource's own URI", printable(rd.URI))
	}
	if rd.Server != "" {
		s, ok := snap.servers[rd.Server]
		if !ok {
			return nil, newError(UnknownTool, rd.Server, methodRead, nil, "unknown server %q: it is not in the catalog", printable(rd.Server))
		}
		if !s.cfg.AllowsResource(rd.URI) {
			return nil, newError(Denied, rd.Server, methodRead, nil, "refused: server %s's allowed_resources does not match %s", rd.Server, printable(rd.URI))
		}
		return s, nil
	}
	var allowing, offering []*server
	for _, id := range snap.serverIDs() {
		s := snap.servers[id]
		if !s.cfg.AllowsResource(rd.URI) {
			continue
		}
		allowing = append(allowing, s)
		if snap.offers(id, rd.URI) {
			offering = append(offering, s)
		}
	}
	switch {
	case len(offering) == 1:
		return offering[0], nil
	case len(offering) == 0 && len(allowing) == 1:
		return allowing[0], nil
	case len(allowing) == 0:
		return nil, newError(Denied, "", methodRead, nil, "refused: no server's allowed_resources matches %s", printable(rd.URI))
	}
	candidates := offering
	if len(candidates) == 0 {
		candidates = allowing
	}
	ids := make([]string, len(candidates))
	for i, s := range candidates {
		ids[i] = s.cfg.ID
	}
	return nil, newError(InvalidArguments, "", methodRead, nil, "%s could come from servers %s: name the server to read it from",
		printable(rd.URI), strings.Join(ids, ", "))
}

// serverIDs lists the ids of the snapshot's servers in order.
func (s *Snapshot) serverIDs() []string {
	ids := make([]string, 0, len(s.servers))
	for id := range s.servers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// offers reports whether server id lists uri, or has a template that
// expands to it, in the snapshot.
func (s *Snapshot) offers(id, uri string) bool {
	for _, r := range s.snap.Resources() {
		if r.Server == id && r.URI == uri {
			return true
		}
	}
	for _, t := range s.snap.Templates() {
		if _, ok := t.Match(uri); ok && t.Server == id {
			return true
		}
	}
	return false
}

// readResource sends resources/read and checks the answer.
func (h *Host) readResource(ctx context.Context, q *request, uri string) *Result {
	r, srv := q.r, q.srv
	ctx, cancel := context.WithTimeout(ctx, srv.cfg.RequestTimeout)
	defer cancel()
	params := &mcp.ReadResourceParams{URI: uri}
	sendCtx, unwatch := h.watchAccess(ctx, q, params)
	res, err := q.link.conn.Session().ReadResource(sendCtx, params)
	unwatch()
	if err != nil {
		if notFound(err) {
			return q.fail(ResourceNotFound, err, "resource %s was not found on server %s", printable(uri), srv.cfg.ID)
		}
		return r.fail(h.accessError(ctx, q, err))
	}
	if res.NeedsInput() {
		return q.fail(ContractError, nil, "server %s asked for input to read %s; Airlock answers input requests only during tool calls", srv.cfg.ID, printable(uri))
	}
	limit := h.cfg.Limits.MaxResourceBytes
	if limit <= 0 {
		limit = 8 << 20
	}
	total := 0
	for _, c := range res.Contents {
		if c == nil {
			return q.fail(ContractError, nil, "server %s: resources/read returned an empty content", srv.cfg.ID)
		}
		total += len(c.Text) + len(c.Blob)
	}
	if total > limit {
		return q.fail(ContractError, nil, "server %s: resource %s is %d bytes, more than limits.max_resource_bytes (%d)", srv.cfg.ID, printable(uri), total, limit)
	}
	for _, c := range res.Contents {
		out := ResourceContent{URI: h.gov.scrub(c.URI), MIMEType: c.MIMEType}
		if why := catalog.CheckURI(c.URI); why != "" {
			return q.fail(ContractError, nil, "server %s: resources/read returned a content whose uri %s", srv.cfg.ID, why)
		}
		switch {
		case c.Blob != nil:
			mt := c.MIMEType
			if mt == "" {
				mt = "application/octet-stream"
			}
			a, err := h.artifacts.Put(c.Blob, mt)
			if err != nil {
				return q.fail(ContractError, err, "server %s: resource %s cannot be stored: %v", srv.cfg.ID, printable(uri), err)
			}
			h.audit(ctx, q.event(store.EventArtifactStored, map[string]any{"artifact": a.ID, "media_type": a.MediaType, "size": a.Size}))
			out.Artifact = &Artifact{ID: a.ID, MediaType: a.MediaType, Size: a.Size, Path: a.Path}
			out.Blob = c.Blob
			r.Artifacts = append(r.Artifacts, *out.Artifact)
		default:
			if !utf8.ValidString(c.Text) {
				return q.fail(ContractError, nil, "server %s: resource %s has text that is not UTF-8", srv.cfg.ID, printable(uri))
			}
			out.Text = h.gov.scrub(c.Text)
		}
		r.Contents = append(r.Contents, out)
	}
	r.Status = OK
	r.Content = contentsText(r.Contents)
	return r
}

// contentsText is what a model sees of a read: each text, and a reference
// for each blob.
func contentsText(cs []ResourceContent) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		if c.Artifact != nil {
			parts = append(parts, fmt.Sprintf("[resource artifact %s: %s, %d bytes, %s]", c.Artifact.ID, c.Artifact.MediaType, c.Artifact.Size, quoteURI(c.URI)))
			continue
		}
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

// notFound reports whether err is a server's "resource not found": SEP-2164's
// invalid params with the URI as data, or the older -32002.
func notFound(err error) bool {
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		return false
	}
	switch werr.Code {
	case -32002:
		return true
	case jsonrpc.CodeInvalidParams:
		return strings.Contains(strings.ToLower(werr.Message), "not found") || strings.Contains(string(werr.Data), `"uri"`)
	}
	return false
}

// accessError classifies a failed read or get: the server's JSON-RPC
// error, a timeout, a broken connection.
func (h *Host) accessError(ctx context.Context, q *request, err error) *Error {
	srv, name := q.srv.cfg.ID, q.tool.Name
	if ae := authError(srv, name, err); ae != nil {
		return ae
	}
	var werr *jsonrpc.Error
	switch {
	case errors.As(err, &werr):
		return newError(ConnectionError, srv, name, err, "%s: server %s answered with an error: %s", name, srv, h.gov.scrub(printable(werr.Message)))
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return newError(ConnectionError, srv, name, err, "%s: server %s did not answer within %s (request_timeout)", name, srv, q.srv.cfg.RequestTimeout)
	case errors.Is(ctx.Err(), context.Canceled):
		return newError(Cancelled, srv, name, err, "%s: cancelled", name)
	}
	if f := q.link.conn.Fault(); f != nil && f.Contract() {
		return newError(ContractError, srv, name, err, "%s: server %s broke the protocol: %s", name, srv, f.Msg)
	}
	return newError(ConnectionError, srv, name, err, "%s: server %s: %v", name, srv, err)
}

// printable is what a message may quote of something a caller or server
// gave: one line, at most 200 characters, invisible characters shown.
func printable(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) > 200 {
		s = string([]rune(s)[:199]) + "…"
	}
	return strings.Trim(fmt.Sprintf("%q", s), `"`)
}
