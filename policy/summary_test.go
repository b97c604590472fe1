package policy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// redactToken stands in for the host's redaction: it replaces the value of
// any key named token.
func redactToken(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if k == "token" {
				out[k] = "[redacted]"
			} else {
				out[k] = redactToken(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = redactToken(e)
		}
		return out
	}
	return v
}

func TestSummary(t *testing.T) {
	write := call("fs", "write_file", args(t, `{"path": "src/a.go", "mode": 4.20e2, "opts": {"z": 1, "a": [true, null]}, "auth": {"token": "sk-canary"}}`))
	write.Annotations = &mcp.ToolAnnotations{Title: "Write\u202e a file", ReadOnlyHint: true, DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)}
	decision := Decision{Verdict: Ask, Effect: Write, Idempotent: true, Rule: "policy.rules[0] (airlock.yaml:9)", Reason: "policy.rules[0] (airlock.yaml:9) asks for a person's approval"}

	long := call("gh", "create_issue", map[string]any{"body": strings.Repeat("é", 300), "title": "Line one\nLine two\x1b[31m"})

	tests := []struct {
		name   string
		req    Request
		d      Decision
		redact func(any) any
		want   string
	}{
		{"everything", write, decision, redactToken, `call "fs__write_file" (tool "write_file" of server "fs")
effect: write, idempotent
decision: ask: policy.rules[0] (airlock.yaml:9) asks for a person's approval
server's hints (unverified, they change nothing): title "Write\u202e a file", read-only, not destructive, idempotent, closed world
arguments:
  "auth": {"token":"[redacted]"}
  "mode": 420
  "opts": {"a":[true,null],"z":1}
  "path": "src/a.go"
`},
		{"no redaction given", call("web", "fetch", map[string]any{"token": "shown"}), Decision{Verdict: Ask, Effect: External, Rule: "default", Reason: "no rule matches"}, nil,
			`call "web__fetch" (tool "fetch" of server "web")
effect: external
decision: ask: no rule matches
arguments:
  "token": "shown"
`},
		{"no arguments", call("web", "ping", nil), Decision{}, redactToken, `call "web__ping" (tool "ping" of server "web")
effect: external
arguments: none
`},
		{"long and control characters", long, Decision{Effect: External}, nil, `call "gh__create_issue" (tool "create_issue" of server "gh")
effect: external
arguments:
  "body": "` + strings.Repeat("é", 199) + `… (203 more bytes)
  "title": "Line one\nLine two\u001b[31m"
`},
		{"redaction that changes the shape", call("web", "fetch", map[string]any{"a": "b"}), Decision{Effect: External}, func(any) any { return "[all redacted]" },
			`call "web__fetch" (tool "fetch" of server "web")
effect: external
arguments: "[all redacted]"
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summary(tt.req, tt.d, tt.redact)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Summary mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSummaryManyArguments(t *testing.T) {
	a := make(map[string]any)
	for i := range 60 {
		a[string(rune('A'+i))] = i
	}
	got := Summary(call("web", "fetch", a), Decision{}, nil)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if n := len(lines); n != 3+maxSummaryArgs+1 {
		t.Errorf("Summary has %d lines, want %d:\n%s", n, 3+maxSummaryArgs+1, got)
	}
	if last := lines[len(lines)-1]; last != "  … and 10 more" {
		t.Errorf("last line = %q, want %q", last, "  … and 10 more")
	}
}
