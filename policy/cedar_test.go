package policy

import (
	"encoding/json"
	"testing"

	"github.com/cedar-policy/cedar-go/types"
)

const cedarFile = `// Line 1.
@id("no-env")
forbid (principal, action, resource == Server::"fs")
when { context has path && context.path like "*.env" };

@id("acme-may-search")
permit (principal in Tenant::"acme", action in Action::"external", resource == Server::"gh");

@id("small-issues")
forbid (principal, action == Action::"gh__create_issue", resource)
when { context.count > 10 };

permit (principal == User::"alice", action, resource == Server::"web");

@id("no-deletes")
forbid (principal, action in Action::"write", resource)
when { context has force && context.force };
`

const cedarPolicy = `policy:
  tools:
    - {server: gh, tool: create_issue, effect: write}
    - {server: fs, tool: delete_file, effect: write}
  rules:
    - {server: fs, tool: write_file, decision: allow}
    - {server: web, tool: post, decision: ask}
    - {server: fs, tool: delete_file, decision: allow}
  cedar: policies.cedar
`

func TestCedar(t *testing.T) {
	p := compile(t, cedarPolicy, map[string]string{"policies.cedar": cedarFile})
	as := func(r Request, tenant, user string) Request {
		r.Principal = Principal{Tenant: tenant, User: user}
		return r
	}
	tests := []struct {
		name string
		req  Request
		want Decision
	}{
		// Cedar has no opinion: the rule decides.
		{"rule alone", call("fs", "write_file", args(t, `{"path": "src/a.go"}`)),
			Decision{Verdict: Allow, Effect: External, Rule: "policy.rules[0] (airlock.yaml:10)"}},
		// A forbid overrides a rule's allow.
		{"forbid overrides allow", call("fs", "write_file", args(t, `{"path": "src/.env"}`)),
			Decision{Verdict: Deny, Effect: External, Rule: `cedar policy "no-env" (policies.cedar:2)`, Reason: `forbidden by cedar policy "no-env" (policies.cedar:2)`}},
		{"forbid through the effect group", call("fs", "delete_file", args(t, `{"force": true}`)),
			Decision{Verdict: Deny, Effect: Write, Rule: `cedar policy "no-deletes" (policies.cedar:15)`}},
		{"forbid not applying", call("fs", "delete_file", args(t, `{"force": false}`)),
			Decision{Verdict: Allow, Effect: Write, Rule: "policy.rules[2] (airlock.yaml:12)"}},
		// A permit allows what no rule speaks about, for the principal it names.
		{"permit for the tenant", call("gh", "search", nil),
			Decision{Verdict: Allow, Effect: External, Rule: `cedar policy "acme-may-search" (policies.cedar:6)`, Reason: `permitted by cedar policy "acme-may-search" (policies.cedar:6)`}},
		{"no permit for another tenant", as(call("gh", "search", nil), "other", "alice"),
			Decision{Verdict: Ask, Effect: External, Rule: "default"}},
		{"permit for the user", call("web", "fetch", nil),
			Decision{Verdict: Allow, Effect: External, Rule: `cedar policy "policy3" (policies.cedar:13)`}},
		{"no permit for another user", as(call("web", "fetch", nil), "acme", "bob"),
			Decision{Verdict: Ask, Effect: External, Rule: "default"}},
		// A permit never lifts a rule's ask.
		{"permit does not lift ask", call("web", "post", nil),
			Decision{Verdict: Ask, Effect: External, Rule: "policy.rules[1] (airlock.yaml:11)"}},
		// A forbid that cannot be evaluated denies.
		{"forbid applies", call("gh", "create_issue", args(t, `{"count": 11}`)),
			Decision{Verdict: Deny, Effect: Write, Rule: `cedar policy "small-issues" (policies.cedar:9)`}},
		{"forbid does not apply", call("gh", "create_issue", args(t, `{"count": 10}`)),
			Decision{Verdict: Ask, Effect: Write, Rule: "default"}},
		{"forbid over a missing attribute", call("gh", "create_issue", args(t, `{"title": "x"}`)),
			Decision{Verdict: Deny, Effect: Write, Rule: `cedar policy "small-issues" (policies.cedar:9)`}},
		{"forbid over a string", call("gh", "create_issue", args(t, `{"count": "11"}`)),
			Decision{Verdict: Deny, Effect: Write, Rule: `cedar policy "small-issues" (policies.cedar:9)`}},
		{"forbid over a number Cedar cannot hold", call("gh", "create_issue", args(t, `{"count": 1e400}`)),
			Decision{Verdict: Deny, Effect: Write, Rule: `cedar policy "small-issues" (policies.cedar:9)`}},
		{"forbid over null", call("gh", "create_issue", args(t, `{"count": null}`)),
			Decision{Verdict: Deny, Effect: Write, Rule: `cedar policy "small-issues" (policies.cedar:9)`}},
		{"whole number written as a decimal", call("gh", "create_issue", args(t, `{"count": 10.0}`)),
			Decision{Verdict: Ask, Effect: Write, Rule: "default"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDecision(t, p.Decide(tt.req), tt.want)
		})
	}
}

func TestCedarErrorReason(t *testing.T) {
	p := compile(t, cedarPolicy, map[string]string{"policies.cedar": cedarFile})
	got := p.Decide(call("gh", "create_issue", nil)).Reason
	want := `cedar policy "small-issues" (policies.cedar:9) could not be evaluated for this call (record does not have the attribute ` +
		"`count`" + `); a forbid policy that fails denies`
	if got != want {
		t.Errorf("Reason = %s\nwant %s", got, want)
	}
}

func TestCedarValue(t *testing.T) {
	dec := func(i int64, exp int) types.Value {
		d, err := types.NewDecimal(i, exp)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	tests := []struct {
		in   any
		want types.Value
		ok   bool
	}{
		{"text", types.String("text"), true},
		{true, types.Boolean(true), true},
		{nil, nil, false},
		{json.Number("5"), types.Long(5), true},
		{json.Number("5.0"), types.Long(5), true},
		{json.Number("5e0"), types.Long(5), true},
		{json.Number("-0"), types.Long(0), true},
		{json.Number("9223372036854775807"), types.Long(9223372036854775807), true},
		{json.Number("9223372036854775808"), types.String("9223372036854775808"), true},
		{json.Number("1.25"), dec(125, -2), true},
		{json.Number("-0.0001"), dec(-1, -4), true},
		{json.Number("0.00001"), types.String("0.00001"), true},
		{json.Number("922337203685477.5808"), types.String("922337203685477.5808"), true},
		{json.Number("1e400"), types.String("1e+400"), true},
		{float64(2.5), dec(25, -1), true},
		{int(7), types.Long(7), true},
		{[]any{"a", nil, json.Number("1")}, types.NewSet(types.String("a"), types.Long(1)), true},
		{map[string]any{"k": "v", "n": nil}, types.NewRecord(types.RecordMap{"k": types.String("v")}), true},
		{[]string{"x"}, types.NewSet(types.String("x")), true},
	}
	for _, tt := range tests {
		got, ok := cedarValue(tt.in)
		if ok != tt.ok {
			t.Errorf("cedarValue(%#v) ok = %v, want %v", tt.in, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		if !got.Equal(tt.want) {
			t.Errorf("cedarValue(%#v) = %v (%T), want %v (%T)", tt.in, got, got, tt.want, tt.want)
		}
	}
}

// TestDecideConcurrent runs decisions from many goroutines; under the race
// detector it checks that a Policy is safe to share.
func TestDecideConcurrent(t *testing.T) {
	p := compile(t, cedarPolicy, map[string]string{"policies.cedar": cedarFile})
	done := make(chan Verdict)
	for i := range 8 {
		go func() {
			path := "src/a.go"
			if i%2 == 1 {
				path = "src/.env"
			}
			var v Verdict
			for range 50 {
				v = p.Decide(call("fs", "write_file", map[string]any{"path": path})).Verdict
			}
			done <- v
		}()
	}
	allowed := 0
	for range 8 {
		if <-done == Allow {
			allowed++
		}
	}
	if allowed != 4 {
		t.Errorf("%d of 8 goroutines were allowed, want 4", allowed)
	}
}
