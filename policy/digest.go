package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/airlockhq/airlock/internal/canonical"
)

// DigestInput is what an approval is bound to: one call of one tool as the
// current catalog snapshot defines it.
type DigestInput struct {
	// Server is the server id.
	Server string
	// Tool is the local name, and RemoteTool the server's own name.
	Tool, RemoteTool string
	// Description and InputSchema are the tool's definition in the
	// snapshot the call resolved against. A server that changes either
	// after an approval (a "rug pull") changes the digest.
	Description string
	InputSchema json.RawMessage
	// Arguments are the decoded arguments, as sent. Nil is the same as an
	// empty object.
	Arguments map[string]any
	// WorkDir is the working directory of the call: the task's worktree for
	// a task server, else the server's cwd.
	WorkDir string
	// Launch is the fingerprint of how the server is started or reached
	// (config.Server.LaunchFingerprint). A server whose command, arguments,
	// environment or URL changed after an approval (MCPoison) changes the
	// digest.
	Launch string
}

// digestVersion names the layout hashed by Digest. A change of layout
// changes it, so that no old grant matches a new digest by accident.
const digestVersion = "airlock-action/2"

// Digest returns the action digest of a call, "sha256:" and 64 hex digits:
// the SHA-256 of the canonical JSON (see [canonical.JSON]) of an object
// holding every field of in. Arguments that are equal as JSON values give
// the same digest whatever their key order or number spelling; any other
// difference, in the arguments, the tool's definition, the working
// directory or the server's launch, gives another.
//
// It fails only for values that are not JSON (NaN, a string that is not
// UTF-8, an input schema that does not parse); a caller refuses the call
// then.
func Digest(in DigestInput) (string, error) {
	var schema any
	if len(in.InputSchema) > 0 {
		var err error
		if schema, err = canonical.Decode(in.InputSchema); err != nil {
			return "", fmt.Errorf("action digest: input schema: %w", err)
		}
	}
	args := in.Arguments
	if args == nil {
		args = map[string]any{}
	}
	text, err := canonical.JSON(map[string]any{
		"digest":       digestVersion,
		"server":       in.Server,
		"tool":         in.Tool,
		"remote_tool":  in.RemoteTool,
		"description":  in.Description,
		"input_schema": schema,
		"arguments":    args,
		"workdir":      in.WorkDir,
		"launch":       in.Launch,
	})
	if err != nil {
		return "", fmt.Errorf("action digest: %w", err)
	}
	sum := sha256.Sum256(text)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
