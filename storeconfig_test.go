package airlock_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/postgres"
)

// TestHostOnPostgres: with store.url set, the host journals and audits its
// calls in that PostgreSQL database, with the audit key in the state
// directory, and the store the CLI opens from the same configuration sees
// them.
func TestHostOnPostgres(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "w", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "write", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text("written")}, nil
		})
	cfg := newConfig(t, inProcess)
	classify(cfg, "c", "write", "write")
	cfg.Store.URL = testenv.PostgresDatabase(t)
	h := openIn(t, cfg, map[string]*mcp.Server{"c": s}, nil)
	wantStatus(t, call(t, h, "c__write", `{"path":"a.txt"}`), airlock.OK)
	h.Close() // which waits for the call's outcome, written as it returned

	st, err := airlock.OpenConfiguredStore(cfg, h.StateDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, ok := st.(*postgres.DB); !ok {
		t.Fatalf("OpenConfiguredStore with store.url gave a %T, want a *postgres.DB", st)
	}
	recs, err := st.Journal().Records(t.Context(), store.RecordFilter{All: true})
	if err != nil || len(recs) != 1 || recs[0].Tool != "c__write" || recs[0].Status != store.OutcomeSucceeded {
		t.Fatalf("journal in PostgreSQL: got %+v, %v; want the call, succeeded", recs, err)
	}
	if _, err := os.Stat(filepath.Join(h.StateDir(), "airlock.db")); err == nil {
		t.Error("the host made a SQLite database although store.url is set")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		events, err := st.Audit().Events(t.Context(), time.Time{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) > 0 || time.Now().After(deadline) {
			if len(events) == 0 {
				t.Fatal("no audit events in PostgreSQL")
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r, err := st.Audit().Verify(t.Context()); err != nil || !r.Intact {
		t.Errorf("Verify: got %+v, %v; want an intact chain", r, err)
	}
	if fi, err := os.Stat(filepath.Join(h.StateDir(), "audit.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the audit key in the state directory: %v, %v; want a file of mode 0600", fi, err)
	}
}

// TestHostPostgresUnreachable: a host whose PostgreSQL cannot be reached
// does not start, and says which database it tried, without the password.
func TestHostPostgresUnreachable(t *testing.T) {
	const password = "canary-pg-password-9"
	t.Setenv("AIRLOCK_TEST_PG_PASSWORD", password)
	cfg := newConfig(t, inProcess)
	cfg.Store.URL = "postgres://airlock@127.0.0.1:1/airlock_prod?sslmode=disable"
	cfg.Store.PasswordEnv = "AIRLOCK_TEST_PG_PASSWORD"
	_, err := airlock.Open(t.Context(), cfg, &airlock.Options{StopGrace: 500 * time.Millisecond})
	if err == nil {
		t.Fatal("Open with an unreachable PostgreSQL: got nil error")
	}
	for _, want := range []string{"cannot open the journal", "host 127.0.0.1 port 1", `database "airlock_prod"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), password) {
		t.Errorf("Open error holds the password: %v", err)
	}
}

// TestHostsOwnSecretsAreRedacted: the host's own secrets (the key that
// seals logins, the store's password, the metrics token) are redacted as
// a server's are, should a server or an error repeat them.
func TestHostsOwnSecretsAreRedacted(t *testing.T) {
	const sealKey, storePassword, metricsToken = "c2VhbC1rZXktY2FuYXJ5LTAxMjM0NTY3ODlhYmNkZWY=", "canary-store-password-7", "canary-metrics-token-0123"
	t.Setenv("AIRLOCK_SECRET_KEY", sealKey)
	t.Setenv("AIRLOCK_TEST_STORE_PASSWORD", storePassword)
	t.Setenv("AIRLOCK_TEST_METRICS", metricsToken)
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "say", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text(sealKey + " " + storePassword + " " + metricsToken)}, nil
		})
	cfg := newConfig(t, inProcess)
	cfg.Store.PasswordEnv, cfg.Serve.MetricsTokenEnv = "AIRLOCK_TEST_STORE_PASSWORD", "AIRLOCK_TEST_METRICS"
	h := openIn(t, cfg, map[string]*mcp.Server{"c": s}, nil)
	r := call(t, h, "c__say", `{}`)
	wantStatus(t, r, airlock.OK)
	if r.Content != "[REDACTED:secret] [REDACTED:secret] [REDACTED:secret]" {
		t.Errorf("result = %q, want each of the host's secrets redacted", r.Content)
	}
}
