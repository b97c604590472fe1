package airlock_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	airlock "github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/auth/oauth/oauthtest"
	"github.com/airlockhq/airlock/config"
)

// TestRemoteClientCredentials: a host configured with grant:
// client_credentials reaches its server with nobody logging in, with a
// secret from the environment or a private key from a file; neither ever
// appears in its log.
func TestRemoteClientCredentials(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "the-ci-runner-secret-nobody-may-see"
	t.Setenv("CI_RUNNER_SECRET", secret)
	keyFile := filepath.Join(t.TempDir(), "ci-runner.pem")
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		svc   *oauthtest.ServiceClient
		oauth *config.OAuth
	}{
		{"secret", &oauthtest.ServiceClient{ID: "ci-runner", Secret: secret},
			&config.OAuth{Grant: config.GrantClientCredentials, ClientID: "ci-runner", ClientSecretEnv: "CI_RUNNER_SECRET"}},
		{"private key", &oauthtest.ServiceClient{ID: "ci-runner", PublicKey: key.Public()},
			&config.OAuth{Grant: config.GrantClientCredentials, ClientID: "ci-runner", PrivateKeyFile: keyFile}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newOAuthWorld(t, false)
			w.as = oauthtest.New(t, &oauthtest.Options{Service: tt.svc})
			w.rs = oauthtest.NewResourceServer(t, w.as, nil)
			srv := &w.cfg.Servers[0]
			srv.URL, srv.Resource, srv.Scopes, srv.OAuth = w.rs.URL+"/mcp", w.rs.URL, nil, tt.oauth

			h := w.open(t)
			if st := h.Servers()[0]; st.Status != airlock.StatusReady {
				t.Fatalf("server = %+v (%v), want ready without a login", st, st.Err)
			}
			r := call(t, h, "prot__read", `{}`)
			wantStatus(t, r, airlock.OK)
			if w.opens.Load() != 0 || w.consents.Load() != 0 {
				t.Errorf("a person was asked: %d logins, %d consents", w.opens.Load(), w.consents.Load())
			}
			if got := w.as.Stats(); got.ClientCredentials != 1 || got.CodeExchanges != 0 {
				t.Errorf("authorization server stats = %+v, want one client credentials token", got)
			}
			st, err := h.Credentials().Status(context.Background(), "prot")
			if err != nil || !st.LoggedIn || st.Issuer != w.as.URL {
				t.Errorf("status = %+v, %v", st, err)
			}
			pemText, _ := os.ReadFile(keyFile)
			logs := w.logs.String()
			if strings.Contains(logs, secret) || strings.Contains(logs, string(pemText[40:80])) {
				t.Error("the host's log holds the secret or the key")
			}
		})
	}
}

// TestRemoteClientCredentialsKeyUnreadable: a key file that went away
// since the configuration was read leaves the server failed with a message
// that names the setting, not the path.
func TestRemoteClientCredentialsKeyUnreadable(t *testing.T) {
	w := newOAuthWorld(t, false)
	srv := &w.cfg.Servers[0]
	dir := t.TempDir()
	srv.Scopes, srv.OAuth = nil, &config.OAuth{Grant: config.GrantClientCredentials, ClientID: "ci-runner", PrivateKeyFile: filepath.Join(dir, "gone.pem")}
	h := w.open(t)
	st := h.Servers()[0]
	if st.Status == airlock.StatusReady || st.Err == nil || !strings.Contains(st.Err.Msg, "cannot read its oauth.private_key_file") || strings.Contains(st.Err.Msg, dir) {
		t.Errorf("server = %+v (%v), want a failure naming oauth.private_key_file without its path", st, st.Err)
	}
}
