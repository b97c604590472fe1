package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	airlock "github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/auth/oauth"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/testenv"
)

// serverID is the id the scenario's server gets in the configuration; its
// tools are serverID__NAME in the host's catalog.
const serverID = "conformance"

// clientMetadataURL is the client ID metadata document the suite's
// authorization servers accept (auth/basic-cimd); they never fetch it.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// clientSecretEnv is the variable that holds a pre-registered client's
// secret (oauth.client_secret_env).
const clientSecretEnv = "AIRLOCK_CONFORMANCE_CLIENT_SECRET"

// A session is one host opened on the scenario's server, with what it needs
// to log in and to close.
type session struct {
	host  *airlock.Host
	state string // the host's state directory, removed on close
	snap  *airlock.Snapshot
	// logins counts the logins so far: a person told to log in again does
	// so, but not forever.
	logins int
}

// maxLogins bounds the logins of one run: the first, and one more when the
// host says the login no longer works (a server that moved to another
// authorization server, say). A person would not loop either.
const maxLogins = 2

// openSession writes the configuration an operator would write for the
// scenario's server, opens a host on it and, for OAuth scenarios, logs in
// the way `airlock auth login` would, then begins a turn.
func openSession(ctx context.Context, serverURL, name string, sc scenario, extra *scenarioContext) (*session, error) {
	u, err := url.Parse(serverURL)
	if err != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("server URL %q is not an absolute URL", serverURL)
	}
	state, err := os.MkdirTemp("", "airlock-conformance-")
	if err != nil {
		return nil, err
	}
	s := &session{state: state}
	ok := false
	defer func() {
		if !ok {
			s.close()
		}
	}()

	var redirect, keyFile string
	if sc.oauth != nil && !sc.oauth.clientCredentials {
		if redirect, err = testenv.FreeRedirectURI(); err != nil {
			return nil, err
		}
	}
	if extra.PrivateKeyPEM != "" {
		// As an operator would: the key in a file only its owner may
		// read, its path in the configuration.
		keyFile = filepath.Join(state, "client-key.pem")
		if err := os.WriteFile(keyFile, []byte(extra.PrivateKeyPEM), 0o600); err != nil {
			return nil, err
		}
	}
	doc, err := configYAML(serverURL, u.Hostname(), sc, extra, redirect, keyFile)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Parse(doc, name+".yaml", state)
	if err != nil {
		return nil, fmt.Errorf("the generated configuration is refused: %w", err)
	}

	opts := &airlock.Options{
		StateDir: state,
		Logger:   stderrLog,
		Version:  "conformance",
		Auth: airlock.AuthOptions{
			// The tokens of one scenario need not outlive it.
			Store: newMemoryStore(),
			// Logins, and step-ups (a 403 insufficient_scope during a
			// call), go through an automatic "browser", and the person
			// always consents.
			Open:    approve,
			Consent: consentAlways,
		},
		// The person accepts every question a server asks as it is
		// offered: a form with its defaults (SEP-1034), which the host
		// fills in and checks before the server sees them.
		Elicit: acceptAsOffered,
	}
	if s.host, err = airlock.Open(ctx, cfg, opts); err != nil {
		return nil, fmt.Errorf("cannot open the host: %w", err)
	}
	s.snap = s.host.Snapshot()
	// Log in when the host says the server needs it, and once more if it
	// still says so after the login: what a person reading `airlock
	// status` does (a server may have moved to another authorization
	// server, auth/authorization-server-migration).
	for s.host.Servers()[0].Status == airlock.StatusAuthRequired && s.logins < maxLogins {
		if err := s.relogin(ctx); err != nil {
			return nil, err
		}
	}
	if st := s.host.Servers()[0]; st.Status != airlock.StatusReady {
		return nil, fmt.Errorf("server is %s: %v", st.Status, st.Err)
	}
	ok = true
	return s, nil
}

// relogin does what a person does when the host says a server needs a
// login: logs in, then starts a new turn, the safe point at which the host
// reconnects a server someone has logged in to since it last tried.
func (s *session) relogin(ctx context.Context) error {
	s.logins++
	if err := s.login(ctx); err != nil {
		return err
	}
	s.snap = s.host.BeginTurn(ctx)
	return nil
}

func (s *session) close() {
	if s.host != nil {
		s.host.Close()
	}
	os.RemoveAll(s.state)
}

// tool returns the local name of the server's tool remote, if the host's
// catalog has it.
func (s *session) tool(remote string) (string, bool) {
	for _, t := range s.snap.Tools() {
		if t.RemoteName == remote {
			return t.Name, true
		}
	}
	return "", false
}

// call calls the server's tool remote with args through the host's
// pipeline and returns the result, or an error unless it is ok.
func (s *session) call(ctx context.Context, remote string, args any) (*airlock.Result, error) {
	name, ok := s.tool(remote)
	if !ok {
		return nil, fmt.Errorf("tool %q is not in the host's catalog", remote)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	r := s.host.Call(ctx, s.snap, airlock.Call{Name: name, Arguments: raw})
	if r.Status == airlock.AuthRequired && s.logins < maxLogins && loginHelps(r.Err) {
		// An auth_required call was never acted on by the server: after
		// logging in again, the person asks for it once more.
		if err := s.relogin(ctx); err != nil {
			return r, err
		}
		if name, ok = s.tool(remote); !ok {
			return nil, fmt.Errorf("tool %q is not in the host's catalog after logging in again", remote)
		}
		r = s.host.Call(ctx, s.snap, airlock.Call{Name: name, Arguments: raw})
	}
	if r.Status != airlock.OK {
		return r, fmt.Errorf("call %s: %s: %v", remote, r.Status, r.Err)
	}
	return r, nil
}

// configYAML is the airlock.yaml for the scenario's server. It goes
// through config.Parse, so that it passes every check a file written by a
// person passes, and gets the same defaults.
func configYAML(serverURL, host string, sc scenario, extra *scenarioContext, redirect, keyFile string) ([]byte, error) {
	// The suite names the version to speak when it is run with
	// --spec-version; otherwise the configuration's default applies (the
	// newest first, falling back to initialize for older servers).
	var versions []string
	if v := os.Getenv("MCP_CONFORMANCE_PROTOCOL_VERSION"); v != "" && slices.Contains(config.SupportedProtocolVersions, v) {
		versions = []string{v}
	}
	srv := map[string]any{
		"id":              serverID,
		"transport":       "http",
		"url":             serverURL,
		"allowed_hosts":   []string{host},
		"allowed_tools":   []string{"*"},
		"request_timeout": "20s",
		"connect_timeout": "5s",
	}
	if len(versions) > 0 {
		srv["protocol_versions"] = versions
	}
	if o := sc.oauth; o != nil {
		srv["resource"] = serverURL
		if o.originResource {
			srv["resource"] = origin(serverURL)
		}
		oauth := map[string]any{
			"client_metadata_url":  clientMetadataURL,
			"dynamic_registration": true,
			"redirect_uri":         redirect,
		}
		if o.clientCredentials {
			oauth = map[string]any{"grant": "client_credentials"}
			if keyFile != "" {
				oauth["private_key_file"] = keyFile
			}
		}
		if extra.ClientID != "" {
			oauth["client_id"] = extra.ClientID
		}
		if extra.ClientSecret != "" {
			// As an operator would: the secret in the environment, its
			// name in the file.
			if err := os.Setenv(clientSecretEnv, extra.ClientSecret); err != nil {
				return nil, err
			}
			oauth["client_secret_env"] = clientSecretEnv
		}
		srv["oauth"] = oauth
	}
	doc := map[string]any{
		// The suite's servers listen on plain http on loopback.
		"development": true,
		"servers":     []any{srv},
		// Policy is not under test: every tool runs without asking.
		"policy": map[string]any{
			"rules": []any{map[string]any{"server": serverID, "tool": "*", "decision": "allow"}},
		},
	}
	// JSON is YAML; encoding/json quotes every string correctly.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// errNotLoopback refuses any URL that would take traffic off this machine.
var errNotLoopback = errors.New("refusing a URL that is not on loopback")

func isLoopback(u *url.URL) bool {
	h := strings.ToLower(u.Hostname())
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// loginHelps reports whether an error says that logging in again
// could help: there is no usable token. A server that wants more scopes is
// another matter: the host steps up on its own, with consent, once per
// request, and a person logging in again for the same scopes would only
// add to the attempts (auth/scope-retry-limit counts them).
func loginHelps(err error) bool {
	var oe *oauth.Error
	return errors.As(err, &oe) && oe.Kind == oauth.KindAuthRequired
}

// origin is the scheme and host of an absolute URL.
func origin(raw string) string {
	u, _ := url.Parse(raw)
	return u.Scheme + "://" + u.Host
}

// acceptAsOffered is a person who accepts every question as it is asked,
// adding nothing: a form's defaults are what it sends.
func acceptAsOffered(_ context.Context, req *airlock.InputRequest) (*airlock.InputAnswer, error) {
	stderrLog.Info("a server asked for input; accepted as offered", "server", req.Server, "tool", req.Tool,
		"kind", req.Kind, "mode", req.Mode, "round", req.Round)
	return &airlock.InputAnswer{Action: airlock.AnswerAccept}, nil
}
