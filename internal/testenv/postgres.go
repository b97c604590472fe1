package testenv

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const postgresHint = "run `make test`, or `export AIRLOCK_TEST_POSTGRES=$(scripts/setup-postgres.sh)` as the Makefile does"

// Postgres returns the URL of the PostgreSQL server the tests may use
// (AIRLOCK_TEST_POSTGRES, which `make test` sets to the server that
// scripts/setup-postgres.sh starts). When it is unset the test is skipped
// with a hint, except under CI, where it fails.
func Postgres(t testing.TB) string {
	t.Helper()
	u := os.Getenv("AIRLOCK_TEST_POSTGRES")
	if u == "" && !underCI(os.Getenv) {
		t.Skipf("testenv: AIRLOCK_TEST_POSTGRES is unset; %s", postgresHint)
	}
	if u == "" {
		t.Fatalf("testenv: AIRLOCK_TEST_POSTGRES is unset; %s", postgresHint)
	}
	return u
}

// PostgresDatabase creates an empty database for the calling test on the
// server [Postgres] names and returns its URL; the database is dropped when
// the test ends, with any connection still open to it. It skips or fails
// the test as [Postgres] does.
func PostgresDatabase(t testing.TB) string {
	t.Helper()
	server := Postgres(t)
	u, err := url.Parse(server)
	if err != nil {
		t.Fatalf("testenv: AIRLOCK_TEST_POSTGRES is not a URL: %v", err)
	}
	name := fmt.Sprintf("airlock_test_%d_%d", time.Now().UnixNano(), os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := adminExec(ctx, server, `CREATE DATABASE `+name); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := adminExec(ctx, server, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			t.Errorf("testenv: %v", err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// adminExec runs one statement on the server's own database.
func adminExec(ctx context.Context, server, sql string) error {
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return fmt.Errorf("cannot reach the test PostgreSQL (AIRLOCK_TEST_POSTGRES): %w; %s", err, postgresHint)
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// WaitListening waits until at least n sessions of the database url
// listen to topic's channel (their last statement its LISTEN), as PostgreSQL
// sees them, and fails the test after a generous deadline: a replica
// that has yet to listen would not hear what the test makes happen.
func WaitListening(t testing.TB, url, topic string, n int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND query = $1`, `LISTEN "airlock_`+topic+`"`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("testenv: %d sessions listen to %s after 30s, want %d", got, topic, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
