// Command client is the MCP client that the official conformance suite
// (@modelcontextprotocol/conformance, client mode) drives to check Airlock's
// host against the specification.
//
// The suite starts a test server for one scenario on loopback and runs
//
//	client SERVER_URL
//
// with the scenario's name in $MCP_CONFORMANCE_SCENARIO and, for some
// scenarios, a JSON object of extra data (pre-registered client
// credentials, tool calls to make) in $MCP_CONFORMANCE_CONTEXT. The program
// then behaves as an operator and an agent would: it writes an airlock.yaml
// for the one server, opens an [airlock.Host] on it, logs in when the host
// says the server needs it, and makes the tool calls the scenario expects
// through [airlock.Host.Call]. Every protocol message therefore comes from
// the host's own stack (upstream connections, the OAuth client, the egress
// guard), never from the SDK used directly: a failing scenario is a finding
// about Airlock.
//
// It exits 0 when the scenario's steps ran, and 1 with the reason on stderr
// otherwise; the suite judges conformance from what it saw on the wire.
// See docs/conformance.md for how to run the suite and for the baseline of
// scenarios Airlock deliberately does not support.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "conformance client:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 2 {
		return fmt.Errorf("usage: %s SERVER_URL (with MCP_CONFORMANCE_SCENARIO set)", os.Args[0])
	}
	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	sc, ok := scenarios[name]
	if !ok {
		return fmt.Errorf("unknown scenario %q in MCP_CONFORMANCE_SCENARIO", name)
	}
	var extra scenarioContext
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &extra); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT is not the expected JSON object: %w", err)
		}
	}
	// The suite kills a client after its own timeout (30s by default);
	// ending a little earlier leaves the reason on stderr.
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()

	s, err := openSession(ctx, os.Args[1], name, sc, &extra)
	if err != nil {
		return err
	}
	defer s.close()
	return sc.run(ctx, s, &extra)
}

// scenarioContext is $MCP_CONFORMANCE_CONTEXT: what some scenarios hand the
// client beyond the server URL.
type scenarioContext struct {
	// ClientID and ClientSecret are a pre-registered OAuth client
	// (auth/pre-registration, auth/client-credentials-basic).
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	// PrivateKeyPEM is the private key of a pre-registered client that
	// proves who it is with signed assertions
	// (auth/client-credentials-jwt).
	PrivateKeyPEM string `json:"private_key_pem"`
	// ToolCalls are calls to make after listing the tools
	// (http-custom-headers).
	ToolCalls []struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"toolCalls"`
}
