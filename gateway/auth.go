package gateway

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/auth/bearer"
	"github.com/airlockhq/airlock/config"
)

// Inbound authentication (serve.auth): the HTTP endpoint is an OAuth
// resource server. Every request carries an RFC 9068 access token that
// serve.auth.issuer issued for serve.auth.resource; the Verifier's
// middleware checks it (401 with an RFC 9728 challenge otherwise, 403
// insufficient_scope without serve.auth.scopes), removes it from the
// request, and leaves its principal where the SDK puts token information,
// which also binds a 2025-11-25 session to that principal. Each call is
// then made for the token's tenant and user (SnapshotFor): policy,
// approvals, the journal, the audit trail, the tenant cap and every OAuth
// server's credentials are that principal's. The caller's token itself
// goes no further than the middleware: not to a server, a log or the
// audit trail.

// NewVerifier returns the verifier of serve.auth: access tokens a.Issuer
// issued for a.Resource, whose tenant claim (when a.TenantClaim is set)
// and user claim name a tenant and user Airlock can act for (tenancy:'s
// rules); a token that names any other is refused as invalid.
func NewVerifier(a *config.ServeAuth, logger *slog.Logger) (*bearer.Verifier, error) {
	userClaim := a.UserClaim
	if userClaim == "" {
		userClaim = "sub"
	}
	const rule = "it must be 1 to 128 letters, digits, ., _, @, + or -"
	return bearer.NewVerifier(a.Issuer, a.Resource, &bearer.Options{
		TenantClaim: a.TenantClaim,
		UserClaim:   userClaim,
		Logger:      logger,
		CheckPrincipal: func(p *bearer.Principal) error {
			if a.TenantClaim != "" && config.CheckPrincipal("tenant", p.Tenant) != nil {
				return fmt.Errorf("token claim %s is not a tenant name Airlock can act for: %s", a.TenantClaim, rule)
			}
			if config.CheckPrincipal("user", p.User) != nil {
				return fmt.Errorf("token claim %s is not a user name Airlock can act for: %s", userClaim, rule)
			}
			return nil
		},
	})
}

// resourceHost is the host of the verifier's resource, which a Host header
// may name besides loopback names.
func resourceHost(v *bearer.Verifier) string {
	u, err := url.Parse(v.Resource())
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// A caller is whom one request's calls are made for.
type caller struct {
	token *bearer.Principal // what the access token says; nil: the host's own principal
	who   airlock.Principal // the tenant and user the calls are made for
}

// errNoPrincipal refuses a request over HTTP that reached a handler without
// a verified principal although inbound authentication is on. The
// middleware lets none through; this keeps a mistake from failing open.
var errNoPrincipal = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the request carries no verified access token: send one in the Authorization header"}

// callerOf returns whom a request is made for: the principal of its access
// token, or, without one (stdio, HTTP without serve.auth), the host's own.
func (g *Gateway) callerOf(extra *mcp.RequestExtra) (caller, error) {
	own := g.host.Load().Principal()
	var p *bearer.Principal
	if extra != nil {
		p = bearer.PrincipalFromTokenInfo(extra.TokenInfo)
	}
	if p == nil {
		if g.opts.Verifier != nil && extra != nil && extra.Header != nil {
			return caller{}, errNoPrincipal
		}
		return caller{who: own}, nil
	}
	c := caller{token: p, who: airlock.Principal{Tenant: p.Tenant, User: p.User}}
	if c.who.Tenant == "" {
		c.who.Tenant = own.Tenant // no tenant claim: tenancy's tenant
	}
	return c, nil
}

// key names the caller in an approval question's signed state: an answer
// is taken only from the principal that was asked.
func (c caller) key() string {
	return c.who.Tenant + "/" + c.who.User
}

// snapshot returns the listed catalog as c sees it, and its release.
func (g *Gateway) snapshot(c caller) (*airlock.Snapshot, func(), error) {
	snap := g.snap.Load()
	if c.token == nil {
		return snap, func() {}, nil
	}
	s, release, err := g.host.Load().SnapshotFor(snap, c.who)
	if err != nil {
		g.log.Warn("cannot act for the caller", "tenant", c.who.Tenant, "user", c.who.User, "error", err)
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the gateway cannot act for this caller's tenant and user"}
	}
	return s, release, nil
}

// callerSnapshot returns whom a request is made for (callerOf) and the
// listed catalog as that caller sees it (snapshot), with its release.
func (g *Gateway) callerSnapshot(extra *mcp.RequestExtra) (caller, *airlock.Snapshot, func(), error) {
	who, err := g.callerOf(extra)
	if err != nil {
		return caller{}, nil, nil, err
	}
	snap, release, err := g.snapshot(who)
	return who, snap, release, err
}

// hint adds to the text a person reads what only a caller other than the
// host's own principal needs to know: that a login or an approval is that
// principal's, and the command that acts for it.
func (g *Gateway) hint(c caller, status airlock.Kind, server, approval string) string {
	if c.token == nil || c.who == g.host.Load().Principal() {
		return ""
	}
	switch {
	case status == airlock.AuthRequired && server != "":
		return fmt.Sprintf("\nThe call is made for tenant %s, user %s: the login must be theirs (airlock auth login --tenant %s --user %s %s).",
			c.who.Tenant, c.who.User, c.who.Tenant, c.who.User, server)
	case status == airlock.ApprovalRequired && approval != "":
		return fmt.Sprintf("\nThe request is for tenant %s, user %s: an operator approves it with airlock approvals approve %s --all-principals.",
			c.who.Tenant, c.who.User, approval)
	}
	return ""
}

// withHint appends c's hint to a tool result's text.
func (g *Gateway) withHint(c caller, res *mcp.CallToolResult, r *airlock.Result) {
	if res == nil || !res.IsError {
		return
	}
	server := ""
	if r.Err != nil {
		server = r.Err.Server
	}
	h := g.hint(c, r.Status, server, r.ApprovalID)
	if h == "" || len(res.Content) == 0 {
		return
	}
	if tc, ok := res.Content[len(res.Content)-1].(*mcp.TextContent); ok && !strings.HasSuffix(tc.Text, h) {
		tc.Text += h
	}
}
