package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// maxSafeID bounds a numeric request id: 2^53 - 1, the largest integer
// every JSON implementation (JavaScript's among them) holds exactly. The
// SDK keeps ids as 64-bit integers, so an id it cannot hold exactly would
// be answered under another id.
const maxSafeID = 1<<53 - 1

// checkMessage checks what the SDK's decoding lets through but cannot
// answer truly: a request whose id is null, or a number that is not an
// integer the SDK holds exactly (1.5, 1e3, 2^64), and a message with
// neither a method nor a result nor an error. It returns the JSON-RPC
// error to answer with and the id to answer under (null when the id
// cannot be echoed as sent), or nil for a message that is fine. body is
// one message that jsonrpc.DecodeMessage took.
func checkMessage(body []byte) (*jsonrpc.Error, jsonrpc.ID) {
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method seen            `json:"method"`
		Result seen            `json:"result"`
		Error  seen            `json:"error"`
	}
	if json.Unmarshal(body, &head) != nil {
		return nil, jsonrpc.ID{}
	}
	invalid := func(msg string) *jsonrpc.Error {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: " + msg}
	}
	request := bool(head.Method)
	id := bytes.TrimSpace(head.ID)
	switch {
	case request && bytes.Equal(id, []byte("null")):
		return invalid("a request's id must be a string or an integer, not null (a notification has no id)"), jsonrpc.ID{}
	case len(id) > 0 && id[0] != '"' && !bytes.Equal(id, []byte("null")) && !safeInteger(id):
		return invalid(fmt.Sprintf("the id %.40s is not an integer from -%d to %d: use a string, or such an integer", id, maxSafeID, maxSafeID)), jsonrpc.ID{}
	case !request && !bool(head.Result) && !bool(head.Error):
		var echo jsonrpc.ID
		if len(id) > 0 {
			var v any
			if json.Unmarshal(id, &v) == nil {
				echo, _ = jsonrpc.MakeID(v)
			}
		}
		return invalid("the message has neither a method (a request or a notification) nor a result or an error (a response)"), echo
	}
	return nil, jsonrpc.ID{}
}

// safeInteger reports whether the JSON number n is an integer written
// without a fraction or an exponent, within ±maxSafeID.
func safeInteger(n []byte) bool {
	v, err := strconv.ParseInt(string(n), 10, 64)
	return err == nil && -maxSafeID <= v && v <= maxSafeID
}

// seen notes that a member is present, without keeping its value.
type seen bool

func (s *seen) UnmarshalJSON([]byte) error {
	*s = true
	return nil
}
