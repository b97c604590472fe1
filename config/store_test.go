package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseStore(t *testing.T) {
	dir := t.TempDir()
	env := mapEnv(map[string]string{"PGPASS": "s3cret", "USER": "alice"})
	parse := func(src string) Store {
		t.Helper()
		cfg, err := parseYAML([]byte(server+src), "airlock.yaml", dir, env)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Store
	}
	for _, tc := range []struct {
		name, src string
		want      Store
	}{
		{"left out", "", Store{}},
		{"empty", "store: {}\n", Store{}},
		{"the defaults", "store: {url: \"\", password_env: \"\", audit_key: \"\"}\n", Store{}},
		{"a URL", "store: {url: \"postgres://airlock@db.internal:5432/airlock?sslmode=verify-full\"}\n",
			Store{URL: "postgres://airlock@db.internal:5432/airlock?sslmode=verify-full"}},
		{"every key", "store:\n  url: postgresql://airlock@db.internal/airlock\n  password_env: PGPASS\n  audit_key: keys/audit.key\n",
			Store{URL: "postgresql://airlock@db.internal/airlock", PasswordEnv: "PGPASS", AuditKey: filepath.Join(dir, "keys", "audit.key")}},
	} {
		if tc.name == "every key" {
			if err := os.MkdirAll(filepath.Join(dir, "keys"), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(tc.want, parse(tc.src)); diff != "" {
			t.Errorf("%s: Store mismatch (-want +got):\n%s", tc.name, diff)
		}
	}
	// An audit key that exists is read by its owner only.
	key := filepath.Join(dir, "keys", "audit.key")
	if err := os.WriteFile(key, []byte("00\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := parse("store: {url: \"postgres://a@h/db\", audit_key: keys/audit.key}\n"); got.AuditKey != key {
		t.Errorf("an existing key file: got %q, want %q", got.AuditKey, key)
	}
}

func TestParseStoreErrors(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open.key")
	if err := os.WriteFile(open, []byte("00\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const example = "such as postgres://airlock@db.internal:5432/airlock"
	env := mapEnv(map[string]string{"EMPTY": "", "USER": "alice"})
	tests := []errorCase{
		{"a password in the URL", server + "store: {url: \"postgres://airlock:hunter2-pw@db/airlock\"}\n", []string{
			"airlock.yaml:5: store.url: must not contain a password: put it in an environment variable and name that variable with store.password_env"}},
		{"a password as a parameter", server + "store: {url: \"postgres://airlock@db/airlock?password=hunter2-pw\"}\n", []string{
			"airlock.yaml:5: store.url: must not contain a password: put it in an environment variable and name that variable with store.password_env"}},
		{"not postgres", server + "store: {url: \"mysql://db/airlock\"}\n", []string{
			"airlock.yaml:5: store.url: must be a postgres:// URL, " + example + ", or be left out for the embedded SQLite store"}},
		{"no database", server + "store: {url: \"postgres://airlock@db:5432\"}\n", []string{
			"airlock.yaml:5: store.url: must name the database, " + example}},
		{"not a URL", server + "store: {url: \"postgres://airlock:hunter2-pw@db:port/x\"}\n", []string{
			"airlock.yaml:5: store.url: is not a URL: give a PostgreSQL URL, " + example}},
		{"a fragment", server + "store: {url: \"postgres://db/airlock#x\"}\n", []string{
			"airlock.yaml:5: store.url: must not contain a fragment (#)"}},
		{"password_env unset", server + "store: {url: \"postgres://db/airlock\", password_env: NOT_SET}\n", []string{
			"airlock.yaml:5: store.password_env: the host variable NOT_SET is not set: set it to the database password in the environment airlock starts in"}},
		{"password_env empty", server + "store: {url: \"postgres://db/airlock\", password_env: EMPTY}\n", []string{
			"airlock.yaml:5: store.password_env: the host variable EMPTY is empty: set it to the database password"}},
		{"password_env not a name", server + "store: {url: \"postgres://db/airlock\", password_env: \"1X\"}\n", []string{
			`airlock.yaml:5: store.password_env: is not the name of an environment variable (letters, digits and _, not starting with a digit): name the variable that holds the secret; the secret itself never goes in this file`}},
		{"without a URL", server + "store: {password_env: EMPTY, audit_key: a.key}\n", []string{
			"airlock.yaml:5: store.password_env: is only used with store.url: the embedded SQLite store has no password",
			"airlock.yaml:5: store.audit_key: is only used with store.url: the embedded SQLite store keeps its key beside its database"}},
		{"an audit key others may read", server + "store: {url: \"postgres://db/airlock\", audit_key: open.key}\n", []string{
			`airlock.yaml:5: store.audit_key: "open.key" may be read or written by others (mode 0644): make it readable only by its owner (chmod 600)`}},
		{"an audit key in no directory", server + "store: {url: \"postgres://db/airlock\", audit_key: nowhere/audit.key}\n", []string{
			`airlock.yaml:5: store.audit_key: "nowhere/audit.key": its directory does not exist; the file itself is made by the first append`}},
		{"an audit key that is a directory", server + "store: {url: \"postgres://db/airlock\", audit_key: .}\n", []string{
			`airlock.yaml:5: store.audit_key: "." is not a regular file`}},
		{"unknown key", server + "store: {url: \"postgres://db/airlock\", password: x}\n", []string{
			`airlock.yaml:5: store.password: unknown key: expected one of url, password_env, audit_key`}},
	}
	checkErrors(t, tests, func(src string) (*Config, error) {
		return parseYAML([]byte(src), "airlock.yaml", dir, env)
	}, "hunter2-pw")
}
