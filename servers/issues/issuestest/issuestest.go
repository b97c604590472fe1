// Package issuestest runs Airlock's issue service (servers/issues) on a
// loopback port for tests, as a strict OAuth resource server that trusts a
// test authorization server (auth/bearer/bearertest). Only tests import it.
package issuestest

import (
	"context"
	"net"
	"testing"

	"github.com/airlockhq/airlock/auth/bearer"
	"github.com/airlockhq/airlock/auth/bearer/bearertest"
	"github.com/airlockhq/airlock/servers/issues"
)

// Start serves the issue service on a free loopback port until the test
// ends, accepting the tokens iss issues for it (tenant in the "tenant"
// claim). It returns the service's base URL, which is also its resource;
// the MCP endpoint is at base + issues.Endpoint.
func Start(t testing.TB, iss *bearertest.Issuer) (base string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base = "http://" + ln.Addr().String()
	v, err := bearer.NewVerifier(iss.URL, base, &bearer.Options{TenantClaim: "tenant"})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := issues.New(context.Background(), v, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-served
		srv.Close()
	})
	return base
}
