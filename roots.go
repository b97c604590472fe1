//lint:file-ignore SA1019 a server may still ask for its client's roots, which protocol version 2026-07-28 deprecates (SEP-2577); the host relays them.

package airlock

import (
	"context"
	"fmt"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/audit"
)

// A server may ask its client for its roots (roots/list: the directories
// it may work in), a 2025-11-25 server with a request of its own during a
// call, a 2026-07-28 one in an input_required round. The host has no
// roots of its own: it declares the capability only when a program gives
// it a RootsLister (Options.Roots), which the gateway does, relaying each
// request to the client whose call it is (Call.Roots). Nobody is asked:
// the roots are the client's, and its answer goes to the server. Each
// request and answer is in the audit trail, the roots by their number,
// and their URIs as shape and hash unless audit.record_values covers the
// tool.

// A RootsRequest is a server's request for its client's roots, as it
// reaches a RootsLister.
type RootsRequest struct {
	// ToolCallID is the call's Call.ID; Tool and Server name its tool
	// (local name) and server.
	ToolCallID   string
	Tool, Server string
	// Key, Round and Together are as SampleRequest's.
	Key             string
	Round, Together int
}

// A RootsLister gives a server its client's roots. The host checks the
// result (every root a file:// URI) and passes it to the server; an
// error, or a nil result, refuses the request.
type RootsLister func(ctx context.Context, req *RootsRequest) (*mcp.ListRootsResult, error)

// roots answers a server's request for its client's roots, made at at:
// the roots, or why the request was refused.
func (a *asking) roots(ctx context.Context, at place) (*mcp.ListRootsResult, string) {
	q := a.q
	req := a.request(InputRoots, at.round)
	req.Key, req.Together = at.key, at.together
	a.audit(ctx, req, eventInputRequest, nil)
	refuse := func(reason string) (*mcp.ListRootsResult, string) {
		a.answered(ctx, req, &InputAnswer{}, reason)
		return nil, reason
	}
	lister := q.call.Roots
	if lister == nil {
		lister = a.h.opts.Roots
	}
	if lister == nil {
		return refuse(a.undeclared(InputRoots))
	}
	rctx, stop := a.bound(ctx)
	resume := a.pause()
	res, err := lister(rctx, &RootsRequest{ToolCallID: q.call.ID, Tool: q.tool.Name, Server: q.tool.Server,
		Key: at.key, Round: at.round, Together: at.together})
	resume()
	stop()
	switch {
	case err != nil:
		return refuse("the client gave no roots: " + a.h.gov.scrub(err.Error()))
	case res == nil:
		return refuse("the client gave no roots")
	}
	if err := checkRoots(res.Roots); err != nil {
		return refuse(err.Error())
	}
	if res.Roots == nil {
		res.Roots = []*mcp.Root{} // a list, never null
	}
	fields := map[string]any{"roots": len(res.Roots)}
	audit.Record(fields, "answer", q.tool.Name, res.Roots)
	a.answeredWith(ctx, req, &InputAnswer{Action: AnswerAccept}, "", fields)
	return res, ""
}

// checkRoots refuses roots a server must not be given: each root is a
// file:// URI, as MCP requires.
func checkRoots(roots []*mcp.Root) error {
	for i, r := range roots {
		if r == nil {
			return fmt.Errorf("the client's root %d is null", i+1)
		}
		u, err := url.Parse(r.URI)
		if err != nil || u.Scheme != "file" {
			return fmt.Errorf("the client's root %d is not a file:// URI", i+1)
		}
	}
	return nil
}
