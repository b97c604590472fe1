package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"

	airlock "github.com/airlockhq/airlock"
)

// A scenario is what the client does for one of the suite's client
// scenarios, once the host is open on the scenario's server (and logged in
// to it, for OAuth scenarios). What it checks is the suite's business: run
// only makes the calls an agent would make.
type scenario struct {
	// oauth, when set, makes the server entry an OAuth one.
	oauth *oauthSetup
	run   func(ctx context.Context, s *session, extra *scenarioContext) error
}

// oauthSetup is the OAuth part of a server entry that is not the same for
// every scenario.
type oauthSetup struct {
	// clientCredentials makes the entry grant: client_credentials, with
	// the client the scenario's context gives (a secret, or a private
	// key): a CI job's or a daemon's server, where nobody logs in.
	clientCredentials bool
	// originResource configures the server's origin as its resource
	// instead of its URL: what the operator of a server that documents
	// its resource that way writes (config never derives resource from
	// url).
	originResource bool
}

var scenarios = map[string]scenario{
	// The handshake and tools/list happen when the host opens.
	"initialize":       {run: nothing},
	"request-metadata": {run: nothing},
	// The host must list the tools without fetching the network $ref in
	// their schema (its schema loader refuses everything outside the
	// document).
	"json-schema-ref-no-deref": {run: nothing},

	"tools_call": {run: func(ctx context.Context, s *session, _ *scenarioContext) error {
		_, err := s.call(ctx, "add_numbers", map[string]any{"a": 5, "b": 3})
		return err
	}},
	"sse-retry": {run: func(ctx context.Context, s *session, _ *scenarioContext) error {
		_, err := s.call(ctx, "test_reconnection", map[string]any{})
		return err
	}},
	"elicitation-sep1034-client-defaults": {run: func(ctx context.Context, s *session, _ *scenarioContext) error {
		_, err := s.call(ctx, "test_client_elicitation_defaults", map[string]any{})
		return err
	}},
	"json-schema-2020-12-preservation": {run: echoSchema},
	"sep-2322-client-request-state": {run: func(ctx context.Context, s *session, _ *scenarioContext) error {
		// Some of these are meant to be refused; the suite judges what
		// the host sent.
		for _, tool := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
			logCall(s.call(ctx, tool, map[string]any{}))
		}
		return nil
	}},
	"http-standard-headers": {run: func(ctx context.Context, s *session, _ *scenarioContext) error {
		// The host is a tool host: it never reads resources or gets
		// prompts, so a tool call is the one request to show.
		tools := s.snap.Tools()
		if len(tools) == 0 {
			return fmt.Errorf("the host's catalog is empty")
		}
		logCall(s.call(ctx, tools[0].RemoteName, map[string]any{}))
		return nil
	}},
	"http-custom-headers": {run: func(ctx context.Context, s *session, extra *scenarioContext) error {
		for _, c := range extra.ToolCalls {
			args := c.Arguments
			if len(args) == 0 || string(args) == "null" {
				args = json.RawMessage(`{}`)
			}
			logCall(s.call(ctx, c.Name, args))
		}
		return nil
	}},
	"http-invalid-tool-headers": {run: func(ctx context.Context, s *session, _ *scenarioContext) error {
		// Tools whose x-mcp-header annotations are invalid must not be
		// in the catalog at all; every other one is called.
		for _, t := range s.snap.Tools() {
			logCall(s.call(ctx, t.RemoteName, map[string]any{"region": "us-west1"}))
		}
		return nil
	}},
}

// authScenarios log in and call the scenario server's one tool; they differ
// in the server's and the authorization server's metadata and behaviour.
var authScenarios = []string{
	"auth/2025-03-26-oauth-endpoint-fallback",
	"auth/2025-03-26-oauth-metadata-backcompat",
	"auth/authorization-server-migration",
	"auth/basic-cimd",
	"auth/iss-normalized",
	"auth/iss-not-advertised",
	"auth/iss-supported",
	"auth/iss-supported-missing",
	"auth/iss-unexpected",
	"auth/iss-wrong-issuer",
	"auth/metadata-default",
	"auth/metadata-issuer-mismatch",
	"auth/metadata-var1",
	"auth/metadata-var2",
	"auth/metadata-var3",
	"auth/offline-access-not-supported",
	"auth/offline-access-scope",
	"auth/pre-registration",
	"auth/resource-mismatch",
	"auth/scope-from-scopes-supported",
	"auth/scope-from-www-authenticate",
	"auth/scope-omitted-when-undefined",
	"auth/scope-retry-limit",
	"auth/scope-step-up",
	"auth/token-endpoint-auth-basic",
	"auth/token-endpoint-auth-none",
	"auth/token-endpoint-auth-post",
}

func init() {
	// The entries list no scopes: the suite's servers say which they
	// need (their 401 challenge, their resource metadata), and the host
	// requests those, as the specification's scope selection says; the
	// servers that want more say so with 403 insufficient_scope
	// (step-up).
	for _, name := range authScenarios {
		scenarios[name] = scenario{oauth: &oauthSetup{}, run: callTestTool}
	}
	// This server's protected resource metadata is at the root of its
	// origin and names the origin as the resource (RFC 9728 §3.3 allows
	// that), so the tokens it takes are for the origin.
	scenarios["auth/metadata-var2"] = scenario{oauth: &oauthSetup{originResource: true}, run: callTestTool}
	// A headless client: the host obtains its tokens itself, with the
	// secret (client_secret_basic) or the private key (private_key_jwt)
	// of the client the scenario registered.
	for _, name := range []string{"auth/client-credentials-basic", "auth/client-credentials-jwt"} {
		scenarios[name] = scenario{oauth: &oauthSetup{clientCredentials: true}, run: callTestTool}
	}
}

func nothing(context.Context, *session, *scenarioContext) error { return nil }

func callTestTool(ctx context.Context, s *session, _ *scenarioContext) error {
	_, err := s.call(ctx, "test-tool", map[string]any{})
	return err
}

// echoSchema hands the focal tool's input schema, as the host's catalog
// shows it to a model, back to the server, which checks that no JSON
// Schema 2020-12 keyword was lost on the way.
func echoSchema(ctx context.Context, s *session, _ *scenarioContext) error {
	const focal, echo = "json_schema_2020_12_tool", "json_schema_echo"
	tools := s.snap.Tools()
	i := slices.IndexFunc(tools, func(t airlock.Tool) bool { return t.RemoteName == focal })
	if i < 0 {
		return fmt.Errorf("tool %q is not in the host's catalog", focal)
	}
	_, err := s.call(ctx, echo, map[string]any{"schema": tools[i].InputSchema})
	return err
}

// logCall notes, on stderr, a call that the scenario may expect to be
// refused.
func logCall(_ *airlock.Result, err error) {
	if err != nil {
		stderrLog.Info("call not ok (the scenario may expect that)", "error", err)
	}
}

// stderrLog is where the client's log goes; the suite keeps it with the
// scenario's results.
var stderrLog = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
