//lint:file-ignore SA1019 the gateway declares logging, and reads the sampling and roots capabilities a server needs, which protocol version 2026-07-28 deprecates (SEP-2577).

package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
)

// capabilities are what the gateway declares: tools, and their changes;
// logging, for the log messages servers write during a client's calls;
// prompts and resources, of which it lists none (servers' prompts and
// resources are not relayed): a client that asks gets empty lists, as
// from any server that declares what it answers.
func capabilities() *mcp.ServerCapabilities {
	return &mcp.ServerCapabilities{
		Tools:     &mcp.ToolCapabilities{ListChanged: true},
		Logging:   &mcp.LoggingCapabilities{},
		Prompts:   &mcp.PromptCapabilities{},
		Resources: &mcp.ResourceCapabilities{},
	}
}

// missingCapabilities is the answer to a call whose server answered that
// it needs client capabilities it was not given (-32021,
// MissingRequiredClientCapabilityError), or nil: the same error, in the
// gateway's words, naming the capabilities (sampling, elicitation, roots;
// nothing else the server sent goes on, and roots only with listChanged,
// since the SDK writes an empty roots object into every capability set).
// What Airlock declares to a server does not follow the client (roots
// never; sampling as the server's sampling: says; elicitation always, as
// the gateway relays it), so such a call cannot succeed through it either
// way.
func missingCapabilities(r *airlock.Result) *jsonrpc.Error {
	var werr *jsonrpc.Error
	if r.Status != airlock.ConnectionError || r.Err == nil || !errors.As(r.Err, &werr) || werr.Code != mcp.CodeMissingRequiredClientCapabilities {
		return nil
	}
	var d mcp.MissingRequiredClientCapabilityData
	if json.Unmarshal(werr.Data, &d) != nil || d.RequiredCapabilities == nil {
		return nil
	}
	required := map[string]struct{}{}
	for name, needed := range map[string]bool{
		"sampling":    d.RequiredCapabilities.Sampling != nil,
		"elicitation": d.RequiredCapabilities.Elicitation != nil,
		"roots":       d.RequiredCapabilities.Roots.ListChanged,
	} {
		if needed {
			required[name] = struct{}{}
		}
	}
	if len(required) == 0 {
		return nil
	}
	data, err := json.Marshal(map[string]any{"requiredCapabilities": required})
	if err != nil {
		return nil
	}
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Data: data,
		Message: fmt.Sprintf("server %s needs client capabilities that the gateway does not give servers (%s): the tool cannot be used through the gateway",
			r.Err.Server, strings.Join(slices.Sorted(maps.Keys(required)), ", "))}
}
