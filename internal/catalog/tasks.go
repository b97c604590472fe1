package catalog

import (
	"encoding/json"
	"fmt"
)

// MCP tasks (2025-11-25) let a server run a tool call in the background:
// the client sends tools/call with a task, and polls for the result. A
// tool whose execution.taskSupport is "required" can be called no other
// way, and the SDK the host is built on cannot make such a call yet. Such
// a tool is withheld: left out of the catalog, with the reason shown to
// people, instead of being listed for a model whose every call of it
// would fail.

// TaskRequired is the execution.taskSupport of a tool that can only be
// called as a task.
const TaskRequired = "required"

// FlagTaskRequired is the flag of a tool withheld because it can only be
// called as a task.
const FlagTaskRequired = "task_required"

// A Withheld tool is one the allowlist admits that the host leaves out of
// the catalog because it cannot call it. People are shown it with the
// reason; a model never sees it.
type Withheld struct {
	Server string `json:"server"`
	Tool   string `json:"tool"` // the server's name for it
	// Flag says why, in a word: FlagTaskRequired.
	Flag string `json:"flag"`
	// Reason says why, and what would change it, for a person.
	Reason string `json:"reason"`
}

// TaskSupport reads the execution.taskSupport of every tool of a
// tools/list result, as the server sent it, into into (by tool name). The
// SDK's types drop it, so the host reads the result as the server sent it
// (upstream.WithRawResult). A tool that says nothing is recorded as ""; a
// result that is not a tools/list result records nothing.
func TaskSupport(result json.RawMessage, into map[string]string) {
	var list struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &list) != nil {
		return
	}
	for _, t := range list.Tools {
		support := ""
		if t.Execution != nil {
			support = t.Execution.TaskSupport
		}
		into[t.Name] = support
	}
}

// Withhold returns tools without those the host cannot call, and those
// as Withheld: a tool whose taskSupport (by remote name, as TaskSupport
// read it) is TaskRequired.
func Withhold(tools []*Tool, taskSupport map[string]string) (kept []*Tool, withheld []Withheld) {
	for _, t := range tools {
		if taskSupport[t.Remote] != TaskRequired {
			kept = append(kept, t)
			continue
		}
		withheld = append(withheld, Withheld{Server: t.Server, Tool: t.Remote, Flag: FlagTaskRequired,
			Reason: fmt.Sprintf("server %s's tool %s can only be called as an MCP task (execution.taskSupport: required), "+
				"which Airlock cannot do yet; it is left out of the catalog", t.Server, t.Remote)})
	}
	return kept, withheld
}
