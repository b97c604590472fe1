package gateway

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
)

// Reads of resources and gets of prompts run through the host's pipeline
// as tool calls do (Host.ReadResource, Host.GetPrompt): for the caller the
// request is made for, against the catalog the gateway lists, approvals
// asked of the person at the client when it declared elicitation (the
// same question as a tool call's, approve.go), and a 2026-07-28 server's
// questions during a get put to the client as during a call (asks.go,
// parked.go).

// CodeRefused is the code of the JSON-RPC error a resources/read,
// prompts/get, completion/complete or resources/subscribe ends with when
// the pipeline refused it, as a tool call would end isError (these methods
// have no isError): denied, busy, approval_required or auth_required. It
// is a server error of JSON-RPC's implementation-defined range; the
// message says what to do, and data says {"class", "server",
// "approval_id"}.
const CodeRefused = -32000

// read is the handler of the listed resources and templates: at maps the
// URI the client read to where it is read from.
func (g *Gateway) read(at func(uri string) target) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		ctx, done, ok := g.calls.enter(ctx)
		if !ok {
			return nil, shuttingDown
		}
		defer g.calls.leave()
		defer done()
		who, snap, release, err := g.callerSnapshot(req.Extra)
		if err != nil {
			return nil, err
		}
		defer release()
		to, ex := at(req.Params.URI), readExchange(req)
		if err := g.checkState(ex, who); err != nil {
			return nil, err
		}
		q := g.question(ex, who, to.uri, whatRead)
		rd := airlock.Read{URI: to.uri, Server: to.server}
		rel := g.relayFor(ctx, req.Session, req.Params)
		rel.onto(&rd.Progress, &rd.Log, &rd.LogLevel)
		r := g.host.Load().ReadResource(withQuestion(ctx, q), snap, rd)
		rel.close()
		if asked, ok := g.askedOf(ctx, ex, q, r); ok {
			return as[*mcp.ReadResourceResult](asked, nil)
		}
		if r.Status != airlock.OK {
			return nil, g.refused(ctx, who, r, req.Params.URI)
		}
		res := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{}}
		for _, c := range r.Contents {
			rc := &mcp.ResourceContents{URI: c.URI, MIMEType: c.MIMEType, Text: c.Text}
			if c.URI == to.uri {
				rc.URI = req.Params.URI // as the client knows it, qualified or not
			}
			if c.Artifact != nil {
				rc.Text, rc.Blob = "", c.Blob
				if rc.Blob == nil {
					rc.Blob = []byte{}
				}
				if rc.MIMEType == "" {
					rc.MIMEType = c.Artifact.MediaType
				}
			}
			res.Contents = append(res.Contents, rc)
		}
		return res, nil
	}
}

// get is the handler of every listed prompt: Host.GetPrompt with the
// client's arguments, its server's questions during the get put to the
// client as a tool call's are.
func (g *Gateway) get(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	ctx, done, ok := g.calls.enter(ctx)
	if !ok {
		return nil, shuttingDown
	}
	defer g.calls.leave()
	defer done()
	p, ex := req.Params, promptExchange(req)
	who, err := g.callerOf(req.Extra)
	if err != nil {
		return nil, err
	}
	if err := g.checkState(ex, who); err != nil {
		return nil, err
	}
	if ex.parked() {
		return as[*mcp.GetPromptResult](g.resume(ctx, ex, who))
	}
	snap, release, err := g.snapshot(who)
	if err != nil {
		return nil, err
	}
	args := json.RawMessage(`{}`)
	if len(p.Arguments) > 0 {
		if args, err = json.Marshal(p.Arguments); err != nil {
			release()
			return nil, invalidParams("the arguments cannot be encoded: "+err.Error(), nil)
		}
	}
	q := g.question(ex, who, p.Name, whatPrompt)
	pg := airlock.PromptGet{Name: p.Name, Arguments: args}
	rel := g.relayFor(ctx, req.Session, req.Params)
	rel.onto(&pg.Progress, &pg.Log, &pg.LogLevel)
	run := func(ctx context.Context, k askers) *airlock.Result {
		defer release()
		k.onGet(&pg)
		r := g.host.Load().GetPrompt(withQuestion(ctx, q), snap, pg)
		rel.close()
		return r
	}
	finish := func(ctx context.Context, r *airlock.Result) (mcp.Result, error) {
		if asked, ok := g.askedOf(ctx, ex, q, r); ok {
			return asked, nil
		}
		if r.Status != airlock.OK {
			return nil, g.refused(ctx, who, r, "")
		}
		res := &mcp.GetPromptResult{Description: r.Description, Messages: []*mcp.PromptMessage{}}
		for _, m := range r.Messages {
			res.Messages = append(res.Messages, &mcp.PromptMessage{Role: mcp.Role(m.Role), Content: m.Block})
		}
		return res, nil
	}
	// A get offers its server what the client declared, of what the
	// gateway relays during one.
	a := askingOf(ex)
	pg.Offers = a.offers()
	return as[*mcp.GetPromptResult](g.runAsking(ctx, ex, who, a, run, finish))
}

// complete answers completion/complete through Host.Complete: for a
// prompt by its listed name, for a resource template by its listed URI
// template (a qualified one names its server).
func (g *Gateway) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := req.Params
	who, snap, release, err := g.callerSnapshot(req.Extra)
	if err != nil {
		return nil, err
	}
	defer release()
	c := airlock.CompleteRequest{Argument: p.Argument.Name, Value: p.Argument.Value}
	if p.Context != nil {
		c.Context = p.Context.Arguments
	}
	switch p.Ref.Type {
	case "ref/prompt":
		c.Prompt = p.Ref.Name
	case "ref/resource":
		c.Template = p.Ref.URI
		if t, ok := g.content.Load().templates[p.Ref.URI]; ok {
			c.Template, c.Server = t.at.uri, t.at.server
		}
	default:
		return nil, invalidParams("ref.type must be ref/prompt or ref/resource, not "+clip(p.Ref.Type), nil)
	}
	out, e := g.host.Load().Complete(ctx, snap, c)
	if e != nil {
		return nil, g.refused(ctx, who, &airlock.Result{Status: e.Kind, Err: e, Content: e.Msg}, "")
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: out.Values, Total: out.Total, HasMore: out.HasMore}}, nil
}

// refused maps the failure of a read, get, completion or subscription
// onto a JSON-RPC error (these methods have no isError), uri being what
// the client read:
//
//	resource_not_found                  -32602, data {"uri"}, as SEP-2164 gives (mcp.ResourceNotFoundError)
//	invalid_arguments, unknown_tool      -32602 with the reason: bad arguments, an unknown prompt or server
//	denied, busy, approval_required,     CodeRefused (-32000) with the text a tool result would carry (the
//	  auth_required                       approval id and airlock approvals approve ID; the login to make),
//	                                      data {"class", "server", "approval_id"}
//	denied for client capabilities       -32021, as for a tool call (missingCapabilities)
//	contract_error, connection_error     -32603 with the gateway's own words, as for a tool call (failure)
//	cancelled                            the request's own cancellation
func (g *Gateway) refused(ctx context.Context, who caller, r *airlock.Result, uri string) error {
	if e := missingCapabilities(r); e != nil {
		return e
	}
	msg, server := r.Content, ""
	if r.Err != nil {
		msg, server = r.Err.Msg, r.Err.Server
	}
	switch r.Status {
	case airlock.ResourceNotFound:
		return mcp.ResourceNotFoundError(uri)
	case airlock.InvalidArguments, airlock.UnknownTool:
		return invalidParams(msg, nil)
	case airlock.AuthRequired:
		return refusal(r.Status, loginNeeded(r)+g.hint(who, r.Status, server, ""), "", server)
	case airlock.Denied, airlock.Busy, airlock.ApprovalRequired:
		return refusal(r.Status, msg+g.hint(who, r.Status, server, r.ApprovalID), r.ApprovalID, server)
	case airlock.Cancelled:
		if err := ctx.Err(); err != nil {
			return err
		}
		return shuttingDown
	}
	return failure(r)
}

// refusal is the CodeRefused error of a request the pipeline refused.
func refusal(class airlock.Kind, msg, approval, server string) *jsonrpc.Error {
	d := map[string]string{"class": string(class)}
	if server != "" {
		d["server"] = server
	}
	if approval != "" {
		d["approval_id"] = approval
	}
	data, _ := json.Marshal(d)
	return &jsonrpc.Error{Code: CodeRefused, Message: msg, Data: data}
}

func invalidParams(msg string, data json.RawMessage) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg, Data: data}
}

// shuttingDown answers a request that arrives, or is cancelled, while the
// gateway shuts down.
var shuttingDown = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the gateway is shutting down: call again once it is back"}
