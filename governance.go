package airlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	authsecrets "github.com/airlockhq/airlock/auth/secrets"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/redact"
	"github.com/airlockhq/airlock/policy"
	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/postgres"
	"github.com/airlockhq/airlock/store/sqlite"
)

// governance is what the pipeline consults besides the servers: policy,
// hooks, approvals, the journal and the audit trail.
type governance struct {
	policy    *policy.Policy
	store     store.Store
	ownStore  bool // opened by the host, closed by it
	redactor  *redact.Redactor
	secrets   []string // exact secret values (secret_env), kept from models too
	before    []BeforeHook
	after     []AfterHook
	approver  Approver
	ttl       time.Duration
	principal Principal
	now       func() time.Time
	// requesting serializes finding and making approval requests, so that
	// calls made together for the same call get one request, not one each.
	requesting sync.Mutex
}

// openGovernance builds the governance of a host from its configuration.
func openGovernance(cfg *config.Config, opts *Options, stateDir string) (*governance, error) {
	g := &governance{ttl: cfg.Approvals.TTL, before: opts.Before, after: opts.After, approver: opts.Approver, now: time.Now}
	if g.ttl <= 0 {
		g.ttl = config.DefaultApprovalTTL
	}
	pol, err := policy.New(&cfg.Policy, cfg.Dir)
	if err != nil {
		return nil, err
	}
	g.policy = pol
	for _, h := range cfg.Policy.Hooks {
		g.before = append(g.before, commandHook(h, cfg.Dir))
	}
	// Every secret_env value and OAuth client secret is a secret, wherever it
	// would be written.
	var secrets []string
	for _, s := range cfg.Servers {
		for _, hostVar := range s.SecretEnv {
			if v := os.Getenv(hostVar); v != "" {
				secrets = append(secrets, v)
			}
		}
		if s.OAuth != nil && s.OAuth.ClientSecretEnv != "" {
			if v := os.Getenv(s.OAuth.ClientSecretEnv); v != "" {
				secrets = append(secrets, v)
			}
		}
	}
	// The host's own: the store's password, the key that seals logins,
	// the metrics token, the console's client secret.
	hostVars := []string{cfg.Store.PasswordEnv, authsecrets.DefaultKeyEnv, cfg.Serve.MetricsTokenEnv}
	if c := cfg.Serve.Console; c != nil {
		hostVars = append(hostVars, c.ClientSecretEnv)
	}
	for _, env := range hostVars {
		if v := os.Getenv(env); env != "" && v != "" {
			secrets = append(secrets, v)
		}
	}
	secrets = append(secrets, opts.Secrets...)
	g.redactor = redact.New(secrets)
	for _, v := range secrets {
		if len(v) >= redact.MinSecretLen {
			g.secrets = append(g.secrets, v)
		}
	}
	g.principal = principalFor(cfg, opts.Principal)
	if opts.Store != nil {
		g.store = opts.Store
	} else {
		db, err := OpenConfiguredStore(cfg, stateDir)
		if err != nil {
			return nil, storeUnavailable{err}
		}
		g.store, g.ownStore = db, true
	}
	return g, nil
}

// ErrStoreUnavailable is what Open's error is (errors.Is) when the host's
// store (the journal) cannot be opened or reached: a database that is
// down, unreadable or refuses the credentials, rather than a mistake in
// the configuration.
var ErrStoreUnavailable = errors.New("the store cannot be opened")

// storeUnavailable is an error of opening the store, which Is
// ErrStoreUnavailable and reads as the store's own error.
type storeUnavailable struct{ err error }

func (e storeUnavailable) Error() string        { return e.err.Error() }
func (e storeUnavailable) Unwrap() error        { return e.err }
func (e storeUnavailable) Is(target error) bool { return target == ErrStoreUnavailable }

// OpenStore opens the store a host keeps in a state directory by default:
// the SQLite database STATE/airlock.db with the journal, approvals and the
// audit trail.
func OpenStore(stateDir string) (store.Store, error) {
	if err := MakeStateDir(stateDir); err != nil {
		return nil, fmt.Errorf("cannot open the journal: %w", err)
	}
	db, err := sqlite.Open(filepath.Join(stateDir, "airlock.db"))
	if err != nil {
		return nil, fmt.Errorf("cannot open the journal: %w", err)
	}
	return db, nil
}

// OpenConfiguredStore opens the store cfg names: the PostgreSQL database
// of store.url, which several replicas share, with the password that
// store.password_env names and the audit key file of store.audit_key
// (default STATE/audit.key); or, without store.url, the SQLite database in
// stateDir (OpenStore).
func OpenConfiguredStore(cfg *config.Config, stateDir string) (store.Store, error) {
	if cfg.Store.URL == "" {
		return OpenStore(stateDir)
	}
	key := AuditKeyFile(cfg, stateDir)
	if cfg.Store.AuditKey == "" {
		if err := MakeStateDir(stateDir); err != nil {
			return nil, fmt.Errorf("cannot open the journal: %w", err)
		}
	}
	opts := &postgres.Options{}
	if env := cfg.Store.PasswordEnv; env != "" {
		opts.Password = os.Getenv(env)
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeOpenTimeout)
	defer cancel()
	db, err := postgres.Open(ctx, cfg.Store.URL, key, opts)
	if err != nil {
		return nil, fmt.Errorf("cannot open the journal: %w", err)
	}
	return db, nil
}

// AuditKeyFile is the file that holds the key of cfg's audit trail:
// store.audit_key, or audit.key in the state directory (beside SQLite's
// database). Every replica on one PostgreSQL database is given the same.
func AuditKeyFile(cfg *config.Config, stateDir string) string {
	if cfg.Store.URL != "" && cfg.Store.AuditKey != "" {
		return cfg.Store.AuditKey
	}
	return filepath.Join(stateDir, "audit.key")
}

// storeOpenTimeout bounds connecting to a PostgreSQL store and bringing its
// schema up to date, at start.
const storeOpenTimeout = 30 * time.Second

func (g *governance) close() error {
	if g.ownStore {
		return g.store.Close()
	}
	return nil
}

// Redact returns s with the secrets the host knows (secret_env values,
// OAuth client secrets, the store's password, Options.Secrets) and the
// credential formats it recognises replaced by markers, as the audit
// trail and the journal have them.
func (h *Host) Redact(s string) string { return h.gov.redactor.String(s) }

// RedactJSON is Redact for JSON text, such as a tool call's arguments: a
// value under a key that names a credential is redacted whole, and the
// result is JSON again. Text that is not JSON is redacted as text.
func (h *Host) RedactJSON(text string) string {
	if !json.Valid([]byte(text)) {
		return h.Redact(text)
	}
	var out strings.Builder
	e := json.NewEncoder(&out)
	e.SetEscapeHTML(false)
	if e.Encode(h.gov.redactor.Value(json.RawMessage(text))) != nil {
		return h.Redact(text)
	}
	return strings.TrimSuffix(out.String(), "\n")
}

// scrub replaces the exact values of configured secrets in text a model or
// a file will see. Unlike the audit trail's redaction it leaves credential-
// looking text alone: a tool may legitimately return a token the agent asked
// for, but never one the host holds for a server.
func (g *governance) scrub(s string) string {
	for _, v := range g.secrets {
		s = strings.ReplaceAll(s, v, "[REDACTED:secret]")
	}
	return s
}

// scrubbedTool is t with the secrets taken out of all a model reads of it
// (a server may repeat its own key in a description): its titles, its
// description and its schemas. t is left as it was.
func (g *governance) scrubbedTool(t *mcp.Tool) *mcp.Tool {
	if len(g.secrets) == 0 || t == nil {
		return t
	}
	c := *t
	c.Title, c.Description = g.scrub(c.Title), g.scrub(c.Description)
	if c.Annotations != nil {
		a := *c.Annotations
		a.Title = g.scrub(a.Title)
		c.Annotations = &a
	}
	c.InputSchema, c.OutputSchema = g.scrubValue(c.InputSchema), g.scrubValue(c.OutputSchema)
	return &c
}

// scrubValue applies scrub to every string of a decoded JSON value.
func (g *governance) scrubValue(v any) any {
	if len(g.secrets) == 0 {
		return v
	}
	switch x := v.(type) {
	case string:
		return g.scrub(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = g.scrubValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[g.scrub(k)] = g.scrubValue(e)
		}
		return out
	}
	return v
}
