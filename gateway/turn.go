package gateway

import (
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// metaTurn is the _meta key of a tools/call that names the agent turn the
// call belongs to. A gateway cannot see its clients' turns, so a client
// that wants limits.max_calls_per_turn to hold for it says which calls
// make one turn: the same string in every call of a turn, a new one for
// each turn. The calls of one turn count together for the caller (tenant
// and user), on whichever replica they land when the store counts turns
// (airlock.Call.Turn). A call that names no turn counts in none.
const metaTurn = "airlock/turn"

// maxTurnLen bounds the length of a turn's name, in characters.
const maxTurnLen = 128

// badTurn is the error of a call whose _meta names its turn with anything
// but a short printable string.
var badTurn = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
	Message: `_meta "airlock/turn" must be a string of 1 to 128 printable characters: the same for every call of one agent turn, a new one for each turn; leave it out for a call that counts in no turn`}

// turnOf returns the turn that a request's _meta names, "" when it names
// none.
func turnOf(meta mcp.Meta) (string, error) {
	v, ok := meta[metaTurn]
	if !ok {
		return "", nil
	}
	s, ok := v.(string)
	if !ok || s == "" || !utf8.ValidString(s) || utf8.RuneCountInString(s) > maxTurnLen {
		return "", badTurn
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return "", badTurn
		}
	}
	return s, nil
}
