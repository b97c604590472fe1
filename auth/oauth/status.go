package oauth

import (
	"context"
	"errors"
	"time"

	"github.com/airlockhq/airlock/auth/secrets"
)

// Status describes a partition's credentials without revealing them.
type Status struct {
	Server string `json:"server"`
	// LoggedIn is true when tokens are stored.
	LoggedIn bool   `json:"logged_in"`
	Issuer   string `json:"issuer,omitempty"`
	// Partition is a short fingerprint of the partition key, for
	// correlating logs; it cannot be turned back into identities.
	Partition string   `json:"partition,omitempty"`
	Scopes    []string `json:"scopes,omitempty"`
	// Expiry is the access token's expiry (zero if unknown).
	Expiry time.Time `json:"expiry,omitzero"`
	// Expired is true when the access token must be refreshed before use.
	Expired bool `json:"expired"`
	// Refreshable is true when the access token can be renewed without a
	// person: a refresh token is stored, or the client credentials grant
	// issues another.
	Refreshable bool `json:"refreshable"`
	// LoginAgain is true when the authorization server refused the
	// refresh token (invalid_grant: the grant was revoked or ran out):
	// the tokens were dropped, and a person must log in again.
	LoginAgain bool `json:"login_again"`
	// Registration is how the client identified itself:
	// "metadata_document", "preregistered" or "dynamic".
	Registration string `json:"registration,omitempty"`
}

// Status reports whether who is logged in to srv.
func (c *Client) Status(ctx context.Context, srv *Server, who Owner) (*Status, error) {
	if err := srv.validate(); err != nil {
		return nil, err
	}
	// A client credentials server has no token until its first use,
	// which obtains one without a person.
	none := &Status{Server: srv.ID, Expired: srv.clientCredentials(), Refreshable: srv.clientCredentials()}
	p, err := c.partitionFor(ctx, srv, who)
	if errors.Is(err, ErrAuthRequired) {
		return none, nil
	}
	if err != nil {
		return nil, err
	}
	rec, err := c.loadRecord(ctx, p)
	if errors.Is(err, secrets.ErrNotFound) {
		none.Issuer = p.Issuer
		return none, nil
	}
	if err != nil {
		return nil, unavailable(srv.ID, "cannot read the stored token", err)
	}
	return c.status(srv, p, rec), nil
}

func (c *Client) status(srv *Server, p Partition, rec *record) *Status {
	return &Status{
		Server:       srv.ID,
		LoggedIn:     !rec.RefreshRefused,
		LoginAgain:   rec.RefreshRefused,
		Issuer:       rec.Issuer,
		Partition:    p.Key()[:12],
		Scopes:       append([]string(nil), rec.Scopes...),
		Expiry:       rec.Expiry,
		Expired:      !rec.valid(c.opts.Now()),
		Refreshable:  rec.RefreshToken != "" || rec.Grant == string(GrantClientCredentials),
		Registration: rec.Registration,
	}
}

// Logout deletes who's tokens for srv (a dynamically registered client is
// kept for the next login). Logging out when not logged in is not an error.
// Tokens are not revoked at the authorization server.
func (c *Client) Logout(ctx context.Context, srv *Server, who Owner) error {
	if err := srv.validate(); err != nil {
		return err
	}
	unlock, err := c.lockLogin(ctx, bindingKey(who, srv))
	if err != nil {
		return err
	}
	defer unlock()
	p, err := c.partitionFor(ctx, srv, who)
	if errors.Is(err, ErrAuthRequired) {
		return nil
	}
	if err != nil {
		return err
	}
	ps := c.partition(p)
	if err := ps.acquire(ctx); err != nil {
		return err
	}
	defer ps.release()
	if err := c.opts.Store.Delete(ctx, tokenKey(p)); err != nil {
		return unavailable(srv.ID, "cannot delete the stored token", err)
	}
	if err := c.opts.Store.Delete(ctx, bindingKey(who, srv)); err != nil {
		return unavailable(srv.ID, "cannot delete the stored login", err)
	}
	ps.rec, ps.dirty = nil, false
	c.mu.Lock()
	delete(c.bindings, bindingKey(who, srv))
	c.mu.Unlock()
	return nil
}

// Forget drops what the client holds in memory of server's logins, for
// every tenant and user: the next use reads the store again, where another
// process (a replica, airlock auth logout) may have logged out. A
// refreshed token that could not be saved yet (it exists only here) is
// kept.
func (c *Client) Forget(ctx context.Context, server string) {
	c.mu.Lock()
	var parts []*partState
	for _, ps := range c.parts {
		if ps.p.Server == server {
			parts = append(parts, ps)
		}
	}
	// Binding keys are hashes: the server cannot be told from them, and
	// the others' bindings are read again as cheaply.
	clear(c.bindings)
	c.mu.Unlock()
	for _, ps := range parts {
		if ps.acquire(ctx) != nil {
			return
		}
		if !ps.dirty {
			ps.rec = nil
		}
		ps.release()
	}
}
