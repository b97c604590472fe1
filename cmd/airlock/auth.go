package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/auth/oauth"
	"github.com/airlockhq/airlock/config"
)

// authStatusJSON is one line of `airlock auth status --json`: it says
// whether the person is logged in, never what the token is.
type authStatusJSON struct {
	Server       string   `json:"server"`
	LoggedIn     bool     `json:"logged_in"`
	Issuer       string   `json:"issuer"`
	Tenant       string   `json:"tenant"`
	User         string   `json:"user"`
	Partition    string   `json:"partition"`
	Scopes       []string `json:"scopes"`
	Expiry       *string  `json:"expiry"`
	Expired      bool     `json:"expired"`
	Refreshable  bool     `json:"refreshable"`
	LoginAgain   bool     `json:"login_again"`
	Registration string   `json:"registration"`
	Error        *string  `json:"error"`

	expiry time.Time // for text
}

// principalFlags are --tenant and --user, for the auth commands.
func principalFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.tenant, "tenant", "", "act for this tenant (default: tenancy's), such as a gateway user's")
	fs.StringVar(&o.user, "user", "", "act for this user (default: tenancy's), such as a gateway user's")
}

// credentials opens the logins of the configuration's OAuth servers for
// the tenant and user of tenancy:, or those --tenant and --user name (a
// gateway's users reach OAuth servers with their own logins), for
// `airlock auth login|status|logout`. It starts no server. A login calls
// opening, if set, just before it shows the authorization URL: once the
// server and its authorization server are known to be fit for one.
func (e *env) credentials(o *options, opening func(who airlock.Principal)) (*airlock.Credentials, error) {
	for _, f := range []struct{ flag, what, name string }{{"--tenant", "tenant", o.tenant}, {"--user", "user", o.user}} {
		if f.name == "" {
			continue
		}
		if err := config.CheckPrincipal(f.what, f.name); err != nil {
			return nil, usageError("%s: %v", f.flag, err)
		}
	}
	cfg, err := e.loadConfig(&o.common)
	if err != nil {
		return nil, err
	}
	var creds *airlock.Credentials
	open := oauth.Opener(e.stderr, o.noBrowser)
	creds = airlock.OpenCredentials(cfg, &airlock.Options{
		StateDir:  stateDir(&o.common, cfg),
		Principal: airlock.Principal{Tenant: o.tenant, User: o.user},
		Auth: airlock.AuthOptions{Open: func(ctx context.Context, authURL string) error {
			if opening != nil {
				opening(creds.Principal())
			}
			return open(ctx, authURL)
		}},
	})
	return creds, nil
}

func (e *env) authLogin(o *options, pos []string) error {
	creds, err := e.credentials(o, func(who airlock.Principal) {
		fmt.Fprintf(e.stderr, "airlock: logging in to %s as %s/%s; waiting for the browser…\n", pos[0], who.Tenant, who.User)
	})
	if err != nil {
		return err
	}
	who := creds.Principal()
	st, err := creds.Login(e.ctx, pos[0])
	if err != nil {
		return authFailure(err)
	}
	if o.json {
		return writeJSON(e.stdout, statusJSON(st, who, nil))
	}
	fmt.Fprintf(e.stdout, "logged in to %s (issuer %s, scopes %s)\n", st.Server, st.Issuer, printable(strings.Join(st.Scopes, " "), 500))
	return nil
}

func (e *env) authLogout(o *options, pos []string) error {
	creds, err := e.credentials(o, nil)
	if err != nil {
		return err
	}
	if err := creds.Logout(e.ctx, pos[0]); err != nil {
		return authFailure(err)
	}
	if !o.json {
		fmt.Fprintf(e.stdout, "logged out of %s; its tokens were deleted from this machine\n", pos[0])
	}
	return nil
}

// authStatus reports the logins of the server named, or of every OAuth
// server. It exits 3 when a status could not be read, else 6 when a server
// is not logged in or its login expired for good.
func (e *env) authStatus(o *options, pos []string) error {
	creds, err := e.credentials(o, nil)
	if err != nil {
		return err
	}
	who := creds.Principal()
	ids := creds.Servers()
	if len(pos) == 1 {
		ids = pos
	}
	var out []authStatusJSON
	code := exitOK
	for _, id := range ids {
		st, err := creds.Status(e.ctx, id)
		if err != nil && errors.Is(err, airlock.ErrNotOAuth) {
			return usageError("%v", err)
		}
		j := statusJSON(st, who, err)
		if st == nil {
			j.Server = id
		}
		switch {
		case err != nil:
			code = exitServer
		case (!j.LoggedIn || j.Expired) && !j.Refreshable:
			code = max(code, exitAuth)
		}
		out = append(out, j)
	}
	if o.json {
		if out == nil {
			out = []authStatusJSON{}
		}
		if err := writeJSON(e.stdout, map[string]any{"servers": out}); err != nil {
			return err
		}
		return exitCode(code)
	}
	if len(out) == 0 {
		fmt.Fprintln(e.stdout, "no server in the configuration uses OAuth")
		return nil
	}
	printAuthStatus(e.stdout, coloursFor(e.stdout), who, out)
	return exitCode(code)
}

func statusJSON(st *oauth.Status, who airlock.Principal, err error) authStatusJSON {
	j := authStatusJSON{Tenant: who.Tenant, User: who.User, Scopes: []string{}}
	if err != nil {
		msg := err.Error()
		j.Error = &msg
	}
	if st == nil {
		return j
	}
	j.Server, j.LoggedIn, j.Issuer, j.Partition = st.Server, st.LoggedIn, st.Issuer, st.Partition
	j.Expired, j.Refreshable, j.LoginAgain, j.Registration = st.Expired, st.Refreshable, st.LoginAgain, st.Registration
	if st.Scopes != nil {
		j.Scopes = st.Scopes
	}
	if !st.Expiry.IsZero() {
		s := st.Expiry.UTC().Format(time.RFC3339)
		j.Expiry, j.expiry = &s, st.Expiry
	}
	return j
}

func printAuthStatus(w io.Writer, col colours, who airlock.Principal, out []authStatusJSON) {
	fmt.Fprintf(w, "tenant %s, user %s\n\n", who.Tenant, who.User)
	rows := [][]string{{"SERVER", "STATUS", "ISSUER", "SCOPES", "EXPIRES"}}
	for _, s := range out {
		state := "logged in"
		switch {
		case s.Error != nil:
			state = col.red("error")
		case s.LoginAgain:
			state = col.paint("33", "log in again")
		case !s.LoggedIn && s.Refreshable:
			state = "no token yet"
		case !s.LoggedIn:
			state = col.paint("33", "not logged in")
		case s.Expired && s.Refreshable:
			state = "expired, refreshable"
		case s.Expired:
			state = col.paint("33", "expired")
		default:
			state = col.green(state)
		}
		expires := "-"
		if !s.expiry.IsZero() {
			expires = localTime(s.expiry)
		}
		rows = append(rows, []string{s.Server, state, dash(s.Issuer), dash(printable(strings.Join(s.Scopes, " "), 200)), expires})
	}
	table(w, col, rows)
	for _, s := range out {
		switch {
		case s.Error != nil:
			fmt.Fprintf(w, "\nairlock: %s\n", *s.Error)
		case s.LoginAgain:
			fmt.Fprintf(w, "\n%s: the authorization server refused the refresh token: run airlock auth login %s\n", s.Server, s.Server)
		case !s.LoggedIn && s.Refreshable:
			fmt.Fprintf(w, "\n%s: its client obtains a token at the first call (client_credentials): no login is needed\n", s.Server)
		case !s.LoggedIn || (s.Expired && !s.Refreshable):
			fmt.Fprintf(w, "\n%s: run airlock auth login %s\n", s.Server, s.Server)
		}
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// authFailure maps an OAuth failure to an exit: a login that a person can
// retry, or a server that needs one, is 6; an unknown or non-OAuth server
// is a usage error; a server or authorization server that fails its checks
// is 3.
func authFailure(err error) error {
	if errors.Is(err, airlock.ErrNotOAuth) {
		return usageError("%v", err)
	}
	var oe *oauth.Error
	if errors.As(err, &oe) {
		switch oe.Kind {
		case oauth.KindAuthRequired, oauth.KindInsufficientScope, oauth.KindLogin:
			return &exitError{code: exitAuth, msg: oe.Error()}
		}
		return &exitError{code: exitServer, msg: oe.Error()}
	}
	return &exitError{code: exitServer, msg: err.Error()}
}
