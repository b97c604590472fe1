package redact

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// decode parses JSON the way the host's strict decoder hands values on.
func decode(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestValue(t *testing.T) {
	r := New([]string{"s3cr3t-v4lue-xyz"})
	for _, tc := range []struct {
		name     string
		in, want string
	}{
		{"scalars stay", `[1, 2.5, true, null, "plain", 12345678901234567890]`,
			`[1, 2.5, true, null, "plain", 12345678901234567890]`},
		{"patterns and secrets in strings",
			`{"path": "a.txt", "content": "key=` + githubClassic + `", "note": "uses s3cr3t-v4lue-xyz"}`,
			`{"path": "a.txt", "content": "key=[REDACTED:github_token]", "note": "uses [REDACTED:secret]"}`},
		{"sensitive keys", `{"password": "pw", "API_KEY": "abc", "X-Api-Key": "k", "github_token": "t", "max_tokens": 100,
			"token_count": "12", "client_secret": "", "headers": {"Authorization": "Bearer x", "Accept": "text/plain"}}`,
			`{"password": "[REDACTED:sensitive_field]", "API_KEY": "[REDACTED:sensitive_field]", "X-Api-Key": "[REDACTED:sensitive_field]",
			"github_token": "[REDACTED:sensitive_field]", "max_tokens": 100, "token_count": "12", "client_secret": "",
			"headers": {"Authorization": "[REDACTED:sensitive_field]", "Accept": "text/plain"}}`},
		{"arrays under a sensitive key", `{"tokens": ["a", "b"], "token": ["abc", 1, {"x": "y"}]}`,
			`{"tokens": ["a", "b"], "token": ["[REDACTED:sensitive_field]", 1, {"x": "y"}]}`},
		{"aws secret beside its key id", `{"AccessKeyId": "` + awsKeyID + `", "SecretKey": "` + awsSecret + `", "Other": "` + awsSecret + `"}`,
			`{"AccessKeyId": "[REDACTED:aws_access_key_id]", "SecretKey": "[REDACTED:sensitive_field]", "Other": "[REDACTED:aws_secret_access_key]"}`},
		{"aws-looking secret alone", `{"blob": "` + awsSecret + `"}`, `{"blob": "` + awsSecret + `"}`},
		{"keys that are credentials", `{"` + githubClassic + `": 1}`, `{"[REDACTED:github_token]": 1}`},
		{"keys that collide once redacted", `{"` + githubClassic + `": 1, "` + githubOAuth + `": 2}`,
			`{"[REDACTED:github_token]": 2, "[REDACTED:github_token]#2": 1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := decode(t, tc.in)
			before, _ := json.Marshal(in)
			got := r.Value(in)
			if diff := cmp.Diff(decode(t, tc.want), got); diff != "" {
				t.Errorf("Value (-want +got):\n%s", diff)
			}
			if after, _ := json.Marshal(in); string(after) != string(before) {
				t.Errorf("Value changed its input: %s became %s", before, after)
			}
			if again := r.Value(got); !cmp.Equal(again, got) {
				t.Errorf("Value is not idempotent: %v became %v", got, again)
			}
		})
	}
}

func TestValueOtherTypes(t *testing.T) {
	type args struct {
		Path  string `json:"path"`
		Token string `json:"token"`
	}
	r := New(nil)
	for _, tc := range []struct {
		name string
		in   any
		want any
	}{
		{"struct", args{Path: "x", Token: "abc"}, map[string]any{"path": "x", "token": "[REDACTED:sensitive_field]"}},
		{"map of strings", map[string]string{"k": githubClassic}, map[string]any{"k": "[REDACTED:github_token]"}},
		{"raw JSON", json.RawMessage(`{"password":"x"}`), map[string]any{"password": "[REDACTED:sensitive_field]"}},
		{"int", 42, json.Number("42")},
		{"unencodable", make(chan int), "[REDACTED:unencodable]"},
		{"error value", errors.New("x"), map[string]any{}},
	} {
		if diff := cmp.Diff(tc.want, r.Value(tc.in)); diff != "" {
			t.Errorf("Value(%s) (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestSensitiveKey(t *testing.T) {
	for k, want := range map[string]bool{
		"password": true, "Password": true, "DB_PASSWORD": true, "api_key": true, "X-Api-Key": true,
		"apiKey": true, "GITHUB_TOKEN": true, "access_token": true, "refresh-token": true, "client_secret": true,
		"Authorization": true, "Proxy-Authorization": true, "cookie": true, "Set-Cookie": true,
		"Mcp-Session-Id": true, "session_id": true, "private_key": true, "aws_secret_access_key": true,
		"credentials": true, "code_verifier": true,
		"path": false, "max_tokens": false, "token_count": false, "tokenizer": false, "secret_name": false,
		"key": false, "keys": false, "session": false, "code": false, "description": false, "passage": false,
	} {
		if got := SensitiveKey(k); got != want {
			t.Errorf("SensitiveKey(%q) = %t, want %t", k, got, want)
		}
	}
}

func TestShape(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"scalars", `["a", 1, 2.5, true, null]`, `["string", "number", "boolean", "null"]`},
		{"object", `{"path": "src/a.go", "limit": 10, "opts": {"regex": false}}`,
			`{"path": "string", "limit": "number", "opts": {"regex": "boolean"}}`},
		{"array of like objects", `[{"a": 1}, {"a": 2}, {"a": "x"}, {"a": 3}]`, `[{"a": "number"}, {"a": "string"}]`},
		{"empty", `{"a": [], "b": {}}`, `{"a": [], "b": {}}`},
		{"credential keys", `{"` + githubClassic + `": "x"}`, `{"[REDACTED:github_token]": "string"}`},
		{"secret values vanish", `{"password": "` + githubClassic + `"}`, `{"password": "string"}`},
	} {
		if diff := cmp.Diff(decode(t, tc.want), Shape(decode(t, tc.in))); diff != "" {
			t.Errorf("Shape(%s) (-want +got):\n%s", tc.name, diff)
		}
	}
	r := New([]string{"s3cr3t-v4lue-xyz"})
	if diff := cmp.Diff(map[string]any{"[REDACTED:secret]": "number"}, r.Shape(map[string]any{"s3cr3t-v4lue-xyz": 1})); diff != "" {
		t.Errorf("Shape with a secret key (-want +got):\n%s", diff)
	}
	if got := Shape(struct{ A int }{1}); !cmp.Equal(got, map[string]any{"A": "number"}) {
		t.Errorf("Shape of a struct: got %v", got)
	}
	// Keys that are not UTF-8 have no canonical JSON; unlike shapes still
	// stay apart.
	unlike := []any{map[string]any{"a\xff": 1}, map[string]any{"b\xff": true}, map[string]any{"a\xff": 2}}
	if diff := cmp.Diff([]any{map[string]any{"a\xff": "number"}, map[string]any{"b\xff": "boolean"}}, Shape(unlike)); diff != "" {
		t.Errorf("Shape with keys that are not UTF-8 (-want +got):\n%s", diff)
	}
}
