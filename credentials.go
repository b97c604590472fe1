package airlock

import (
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/airlockhq/airlock/auth/egress"
	"github.com/airlockhq/airlock/auth/oauth"
	"github.com/airlockhq/airlock/auth/secrets"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/metrics"
	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/postgres"
)

// Credentials are one principal's OAuth logins to the remote servers of a
// configuration: what `airlock auth login|status|logout` work with, and
// what a host's connections to those servers carry. Tokens stay in the
// secret store; nothing here returns them. It is safe for concurrent use.
type Credentials struct {
	cfg     *config.Config
	who     Principal
	opts    AuthOptions
	dir     string
	metrics *metrics.Metrics // counts token refreshes; nil: none
	// vault is the host's PostgreSQL store's, where logins are kept when
	// store.url is set; nil: opened when needed (secretStore).
	vault secrets.Vault
	// announcer tells the replicas sharing that store of a login, so that
	// those running connect the server at once (announce.go); nil: none.
	announcer store.Announcer

	once   sync.Once
	c      *oauth.Client
	err    error
	opened atomic.Bool // c is open

	pools sync.Map // ca_file → *x509.CertPool
	keys  sync.Map // oauth.private_key_file → crypto.Signer
}

// OpenCredentials returns the credentials of opts.Principal (empty fields
// are filled in as [Open] does) for cfg's servers, kept in opts.Auth.Store
// or, by default, in the encrypted file store under the state directory.
// It starts no server. The store is opened when first needed, so that a
// configuration without OAuth servers never touches a secret key.
func OpenCredentials(cfg *config.Config, opts *Options) *Credentials {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.StateDir == "" {
		o.StateDir = cfg.StateDir()
	}
	who := principalFor(cfg, o.Principal)
	return &Credentials{cfg: cfg, who: who, opts: o.Auth, dir: o.StateDir, metrics: o.Metrics}
}

// Credentials returns the host's credentials: logging in through them
// lets the host's servers that needed a login connect at their next call.
func (h *Host) Credentials() *Credentials { return h.creds }

// Principal is who the credentials belong to.
func (c *Credentials) Principal() Principal {
	return c.who
}

// Servers returns the ids of the configured servers that use OAuth, in
// configuration order.
func (c *Credentials) Servers() []string {
	var ids []string
	for _, s := range c.cfg.Servers {
		if s.OAuth != nil {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// Login runs a person's login to server: it discovers the server's
// authorization server, shows the authorization URL through
// [AuthOptions.Open], waits for the answer on the server's loopback
// redirect URI and stores the tokens in the principal's partition.
func (c *Credentials) Login(ctx context.Context, server string) (*oauth.Status, error) {
	srv, client, err := c.lookup(server)
	if err != nil {
		return nil, err
	}
	st, err := client.Login(ctx, srv, owner(c.who))
	if err == nil {
		c.announce("login", server)
	}
	return st, err
}

// Status reports whether the principal is logged in to server, without
// revealing any token.
func (c *Credentials) Status(ctx context.Context, server string) (*oauth.Status, error) {
	srv, client, err := c.lookup(server)
	if err != nil {
		return nil, err
	}
	return client.Status(ctx, srv, owner(c.who))
}

// Logout deletes the principal's tokens for server. Logging out when not
// logged in is not an error; tokens are not revoked at the authorization
// server.
func (c *Credentials) Logout(ctx context.Context, server string) error {
	srv, client, err := c.lookup(server)
	if err != nil {
		return err
	}
	if err := client.Logout(ctx, srv, owner(c.who)); err != nil {
		return err
	}
	c.announce("logout", server)
	return nil
}

// ErrNotOAuth is returned (wrapped) for a server that is not configured,
// or not configured with oauth:.
var ErrNotOAuth = errors.New("not a server that uses OAuth")

func (c *Credentials) lookup(id string) (*oauth.Server, *oauth.Client, error) {
	i := slices.IndexFunc(c.cfg.Servers, func(s config.Server) bool { return s.ID == id })
	if i < 0 || c.cfg.Servers[i].OAuth == nil {
		what := fmt.Sprintf("there is no server %q in the configuration", id)
		if i >= 0 {
			what = fmt.Sprintf("server %s does not use OAuth (its configuration has no oauth:)", id)
		}
		if ids := c.Servers(); len(ids) > 0 {
			return nil, nil, fmt.Errorf("%s; servers that use OAuth: %s: %w", what, strings.Join(ids, ", "), ErrNotOAuth)
		}
		return nil, nil, fmt.Errorf("%s; no server in the configuration uses OAuth: %w", what, ErrNotOAuth)
	}
	client, err := c.client()
	if err != nil {
		return nil, nil, err
	}
	srv, err := c.server(&c.cfg.Servers[i])
	if err != nil {
		return nil, nil, err
	}
	return srv, client, nil
}

// client opens the OAuth client on first use.
func (c *Credentials) client() (*oauth.Client, error) {
	c.once.Do(func() {
		store, err := c.secretStore()
		if err != nil {
			c.err = fmt.Errorf("cannot open the credential store: %w", err)
			return
		}
		c.c, c.err = oauth.New(&oauth.Options{
			Store:       store,
			Development: c.cfg.Development,
			HTTP:        &egress.ClientOptions{Proxy: c.cfg.Egress.Proxy},
			Resolver:    c.opts.Resolver,
			Open:        c.opts.Open,
			Consent:     c.opts.Consent,
			Refreshed:   c.metrics.TokenRefresh,
		})
		c.opened.Store(c.err == nil)
	})
	return c.c, c.err
}

// secretStore is where the logins are kept: AuthOptions.Store; with a
// PostgreSQL store (store.url), its vault, sealed, shared by every replica;
// otherwise the encrypted files under the state directory.
func (c *Credentials) secretStore() (secrets.Store, error) {
	if c.opts.Store != nil {
		return c.opts.Store, nil
	}
	if c.cfg.Store.URL != "" {
		vault := c.vault
		if vault == nil {
			// Without a host (airlock auth login), the store is opened
			// here, for the process's life.
			st, err := OpenConfiguredStore(c.cfg, c.dir)
			if err != nil {
				return nil, err
			}
			db, ok := st.(*postgres.DB)
			if !ok {
				st.Close()
				return nil, fmt.Errorf("store.url opened a %T, not PostgreSQL", st)
			}
			vault, c.announcer = db.Vault(), db
		}
		return secrets.OpenSealedStore(vault, nil)
	}
	if err := MakeStateDir(c.dir); err != nil {
		return nil, err
	}
	return secrets.OpenFileStore(filepath.Join(c.dir, "credentials"), nil)
}

// server is what the OAuth client needs to know about srv.
func (c *Credentials) server(srv *config.Server) (*oauth.Server, error) {
	roots, err := c.roots(srv)
	if err != nil {
		return nil, err
	}
	o := srv.OAuth
	key, err := c.privateKey(srv)
	if err != nil {
		return nil, err
	}
	return &oauth.Server{
		ID:                   srv.ID,
		URL:                  srv.URL,
		Resource:             srv.Resource,
		Scopes:               srv.Scopes,
		Grant:                oauth.Grant(o.Grant),
		RedirectURI:          o.RedirectURI,
		ClientID:             o.ClientID,
		ClientSecret:         secretOf(o.ClientSecretEnv),
		PrivateKey:           key,
		ClientMetadataURL:    o.ClientMetadataURL,
		DynamicRegistration:  o.DynamicRegistration,
		AllowPrivateNetworks: srv.AllowPrivateNetworks,
		RootCAs:              roots,
	}, nil
}

// privateKey returns the key of srv's oauth.private_key_file, read once,
// or nil when it has none. Its errors name the setting, never the key.
func (c *Credentials) privateKey(srv *config.Server) (crypto.Signer, error) {
	name := srv.OAuth.PrivateKeyFile
	if name == "" {
		return nil, nil
	}
	if k, ok := c.keys.Load(name); ok {
		return k.(crypto.Signer), nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("server %s: cannot read its oauth.private_key_file: %w", srv.ID, errors.Unwrap(err))
	}
	key, err := oauth.ParsePrivateKey(b)
	clear(b)
	if err != nil {
		return nil, fmt.Errorf("server %s: oauth.private_key_file: %w", srv.ID, err)
	}
	k, _ := c.keys.LoadOrStore(name, key)
	return k.(crypto.Signer), nil
}

// roots returns the certificate authorities srv's connections trust: the
// system's and those of its ca_file, read once; nil means the system's
// alone.
func (c *Credentials) roots(srv *config.Server) (*x509.CertPool, error) {
	if srv.CAFile == "" {
		return nil, nil
	}
	if p, ok := c.pools.Load(srv.CAFile); ok {
		return p.(*x509.CertPool), nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	b, err := os.ReadFile(srv.CAFile)
	if err != nil {
		return nil, fmt.Errorf("server %s: cannot read its ca_file: %w", srv.ID, errors.Unwrap(err))
	}
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("server %s: its ca_file holds no PEM certificate", srv.ID)
	}
	p, _ := c.pools.LoadOrStore(srv.CAFile, pool)
	return p.(*x509.CertPool), nil
}

// secretOf reads the host variable name holds (a secret), or "".
func secretOf(name string) string {
	if name == "" {
		return ""
	}
	return os.Getenv(name)
}

// owner is who as the OAuth client names the owner of a credential
// partition.
func owner(who Principal) oauth.Owner { return oauth.Owner{Tenant: who.Tenant, User: who.User} }
