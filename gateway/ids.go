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
	id, request, response, ok := head(body)
	if !ok {
		return nil, jsonrpc.ID{}
	}
	invalid := func(msg string) *jsonrpc.Error {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: " + msg}
	}
	switch {
	case request && bytes.Equal(id, []byte("null")):
		return invalid("a request's id must be a string or an integer, not null (a notification has no id)"), jsonrpc.ID{}
	case len(id) > 0 && id[0] != '"' && !bytes.Equal(id, []byte("null")) && !safeInteger(id):
		return invalid(fmt.Sprintf("the id %.40s is not an integer from -%d to %d: use a string, or such an integer", id, maxSafeID, maxSafeID)), jsonrpc.ID{}
	case !request && !response:
		var echo jsonrpc.ID
		var v any
		if len(id) > 0 && json.Unmarshal(id, &v) == nil {
			echo, _ = jsonrpc.MakeID(v)
		}
		return invalid("the message has neither a method (a request or a notification) nor a result or an error (a response)"), echo
	}
	return nil, jsonrpc.ID{}
}

// head reads what checkMessage needs of a message's top level: its id as
// written (nil when it has none), and whether it has a method (request)
// or a result or an error (response). It stops once it knows the id and
// the kind, which a client sends first ("jsonrpc", "id", "method"), so
// that a call's params, most of its bytes, are not read again here (nor
// a response's result, which serve --stdio looks at too); ok
// is false for what is not a JSON object.
func head(body []byte) (id json.RawMessage, request, response, ok bool) {
	d := json.NewDecoder(bytes.NewReader(body))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, false, false, false
	}
	for d.More() {
		t, err := d.Token()
		key, isKey := t.(string)
		if err != nil || !isKey {
			return nil, false, false, false
		}
		var skip seen
		switch key {
		case "id":
			err = d.Decode(&id)
		case "method":
			request, err = true, d.Decode(&skip)
		case "result", "error":
			if response = true; id != nil {
				// The kind is known by the key: a response's result,
				// most of its bytes, is not read.
				return id, request, response, true
			}
			err = d.Decode(&skip)
		default:
			err = d.Decode(&skip)
		}
		if err != nil {
			return nil, false, false, false
		}
		if id != nil && (request || response) {
			break
		}
	}
	return id, request, response, true
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

// errorResponse encodes the JSON-RPC error response e for id. One whose id
// cannot be given back says "id": null, as JSON-RPC 2.0 requires; the
// SDK's encoder would leave the member out.
func errorResponse(id jsonrpc.ID, e *jsonrpc.Error) []byte {
	if id.IsValid() {
		if b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: e}); err == nil {
			return b
		}
	}
	b, _ := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      *struct{}      `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", nil, e})
	return b
}
