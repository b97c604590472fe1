//lint:file-ignore SA1019 the gateway declares logging, and reads the sampling and roots capabilities a server needs, which protocol version 2026-07-28 deprecates (SEP-2577).

package gateway

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
)

// capabilities are what the gateway declares: tools, prompts and
// resources, and their changes (a catalog with none of them lists none);
// resource subscriptions; logging, for the log messages servers write
// during a client's calls. Completions, which the SDK declares for the
// gateway's completion handler, are declared only while a prompt or a
// resource template is listed (screen).
func capabilities() *mcp.ServerCapabilities {
	return &mcp.ServerCapabilities{
		Tools:     &mcp.ToolCapabilities{ListChanged: true},
		Logging:   &mcp.LoggingCapabilities{},
		Prompts:   &mcp.PromptCapabilities{ListChanged: true},
		Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
	}
}

// missingCapabilities is the answer to a call whose server answered that
// it needs client capabilities the call did not offer it (-32021,
// MissingRequiredClientCapabilityError; the host's call ends denied, see
// airlock.MissingFeatures), or nil: the same error, in the gateway's
// words, with data naming the capabilities (sampling, elicitation, roots;
// nothing else the server sent goes on). A call offers a server what its
// client declared, of what Airlock declares to the server (sampling as
// the server's sampling: says; elicitation and roots always, as the
// gateway relays them), so the client learns what it would have to declare;
// on Streamable HTTP the SDK answers it with HTTP 400.
func missingCapabilities(r *airlock.Result) *jsonrpc.Error {
	if r.Err == nil {
		return nil
	}
	names := airlock.MissingFeatures(r.Err)
	if len(names) == 0 {
		return nil
	}
	required := map[string]struct{}{}
	for _, name := range names {
		required[name] = struct{}{}
	}
	data, err := json.Marshal(map[string]any{"requiredCapabilities": required})
	if err != nil {
		return nil
	}
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Data: data,
		Message: fmt.Sprintf("server %s needs client capabilities that this call does not offer it (%s): declare them to use the tool through the gateway",
			r.Err.Server, strings.Join(names, ", "))}
}
