package redact

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/airlockhq/airlock/internal/canonical"
)

// sensitiveKeys are object keys (lower case, without "-", "_", "." and
// spaces) whose string values are secrets whatever they look like.
var sensitiveKeys = map[string]bool{
	"authorization": true, "proxyauthorization": true, "cookie": true, "setcookie": true,
	"password": true, "passwd": true, "passphrase": true, "secret": true, "clientsecret": true,
	"token": true, "accesstoken": true, "refreshtoken": true, "idtoken": true, "authtoken": true,
	"bearertoken": true, "sessiontoken": true, "apikey": true, "xapikey": true, "apisecret": true,
	"privatekey": true, "secretkey": true, "secretaccesskey": true, "sessionid": true,
	"mcpsessionid": true, "credential": true, "credentials": true, "codeverifier": true, "authorizationcode": true,
}

// sensitiveSuffixes extend sensitiveKeys to names such as "db_password",
// "github_token" and "aws_secret_access_key".
var sensitiveSuffixes = []string{
	"password", "passwd", "passphrase", "secret", "token", "apikey", "privatekey", "secretkey",
	"accesskey", "sessionid", "credentials", "cookie", "authorization",
}

// SensitiveKey reports whether values under the object key or attribute
// name k are secrets by their name alone: password, api_key, X-Api-Key,
// GITHUB_TOKEN, client_secret and the like.
func SensitiveKey(k string) bool {
	n := strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', '.', ' ':
			return -1
		}
		return r
	}, strings.ToLower(k))
	if sensitiveKeys[n] {
		return true
	}
	for _, s := range sensitiveSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

// Value returns a deep copy of v, a decoded JSON value, with secrets
// redacted: strings as String does, every string under a SensitiveKey
// (directly or in an array), object keys that look like credentials, and
// 40-character AWS secret keys in an object that also holds an AWS access
// key id. Values of other Go types are converted to decoded JSON first;
// one that cannot be is replaced by a marker.
func (r *Redactor) Value(v any) any {
	return r.value(v, false, false)
}

func (r *Redactor) value(v any, sensitive, nearAWS bool) any {
	switch x := v.(type) {
	case nil, bool, float64, json.Number:
		return x
	case string:
		if sensitive && x != "" && !isMarker(x) {
			return marker("sensitive_field")
		}
		return r.redact(x, nearAWS)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.value(e, sensitive, nearAWS)
		}
		return out
	case map[string]any:
		aws := false
		for _, e := range x {
			if s, ok := e.(string); ok && hasAWSKeyID(s) {
				aws = true
				break
			}
		}
		return r.mapKeys(x, func(k string, e any) any { return r.value(e, SensitiveKey(k), aws) })
	}
	j, ok := toJSON(v)
	if !ok {
		return marker("unencodable")
	}
	return r.value(j, sensitive, nearAWS)
}

// mapKeys returns a copy of the object x with its keys redacted and each
// member's value replaced by f(key, value). Keys that redact alike are told
// apart with "#2", "#3" and so on, in the order of the original keys.
func (r *Redactor) mapKeys(x map[string]any, f func(k string, v any) any) map[string]any {
	out := make(map[string]any, len(x))
	var room [32]string // the keys of most objects, without a slice on the heap
	keys := room[:0]
	for k := range x {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		nk := r.String(k)
		for i := 2; ; i++ {
			if _, taken := out[nk]; !taken {
				break
			}
			nk = fmt.Sprintf("%s#%d", r.String(k), i)
		}
		out[nk] = f(k, x[k])
	}
	return out
}

// toJSON converts v to decoded JSON (numbers as json.Number).
func toJSON(v any) (any, bool) {
	var raw []byte
	if m, ok := v.(json.RawMessage); ok {
		raw = m
	} else {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, false
		}
		raw = b
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, false
	}
	return out, true
}

// Shape returns the structure of v, a decoded JSON value, without its
// values: each scalar becomes its JSON type name ("string", "number",
// "boolean", "null"), objects keep their keys (redacted like Value's), and
// an array becomes the list of its elements' distinct shapes, in order of
// first appearance. Values of other Go types are converted to decoded JSON
// first; one that cannot be becomes "unencodable".
func (r *Redactor) Shape(v any) any {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64, json.Number, int, int64:
		return "number"
	case []any:
		if len(x) == 1 {
			return []any{r.Shape(x[0])} // nothing to tell apart
		}
		out := []any{}
		seen := map[string]bool{}
		for _, e := range x {
			s := r.Shape(e)
			key, err := canonical.JSON(s)
			if err != nil {
				// A key that is not UTF-8: fmt writes maps sorted too.
				key = fmt.Appendf(nil, "%#v", s)
			}
			if !seen[string(key)] {
				seen[string(key)] = true
				out = append(out, s)
			}
		}
		return out
	case map[string]any:
		return r.mapKeys(x, func(_ string, e any) any { return r.Shape(e) })
	}
	j, ok := toJSON(v)
	if !ok {
		return "unencodable"
	}
	return r.Shape(j)
}

// Shape is Shape of a Redactor that knows no secret values.
func Shape(v any) any { return (*Redactor)(nil).Shape(v) }
