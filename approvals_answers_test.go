package airlock_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
)

// TestDenialHolds: once a person denies a call, the same call (same
// digest) of the same principal is denied at once, naming who denied it
// and when, without a new request or a question, until the approval TTL
// has passed. Other arguments and another principal are asked as usual.
func TestDenialHolds(t *testing.T) {
	st := sharedStore(t)
	c := &counted{}
	cfg := governed(t, inProcess)
	cfg.Approvals.TTL = 2 * time.Second
	servers := map[string]*mcp.Server{"c": c.server()}
	ap := &answering{} // leaves every request pending, and counts
	h := openIn(t, cfg, servers, &airlock.Options{Store: st, Principal: carol, StateDir: t.TempDir(), Approver: ap})
	he := openIn(t, cfg, servers, &airlock.Options{Store: st, Principal: eve, StateDir: t.TempDir()})
	const args = `{"text":"rm -rf /"}`

	r := call(t, h, "c__note", args)
	wantStatus(t, r, airlock.ApprovalRequired)
	id := r.ApprovalID
	before := time.Now().UTC().Truncate(time.Second)
	if err := h.Decide(context.Background(), id, false, "ada", "no"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r = call(t, h, "c__note", args)
		wantStatus(t, r, airlock.Denied)
		m := regexp.MustCompile(`^c__note refused: ada denied this call at (\S+) \(approval (apr_\w+)\); the same call is refused until (\S+)$`).
			FindStringSubmatch(r.Content)
		if m == nil || m[2] != id || r.ApprovalID != id {
			t.Fatalf("the same call after the denial = %q (approval %s), want it denied naming ada, when and %s", r.Content, r.ApprovalID, id)
		}
		at, err1 := time.Parse(time.RFC3339, m[1])
		until, err2 := time.Parse(time.RFC3339, m[3])
		if err1 != nil || err2 != nil || at.Before(before) || until.Sub(at) != 2*time.Second {
			t.Errorf("denied at %s until %s: want RFC 3339 times, the TTL apart, from %s on", m[1], m[3], before)
		}
	}
	if n := ap.asked.Load(); n != 1 {
		t.Errorf("the approver was asked %d times, want once: a denial is not asked again", n)
	}
	list, err := st.Approvals().List(context.Background(), store.ApprovalFilter{})
	if err != nil || len(list) != 1 {
		t.Errorf("requests after the denied calls: %d, %v; want the one that was denied", len(list), err)
	}

	// Other arguments, and another principal's same call, are asked.
	wantStatus(t, call(t, h, "c__note", `{"text":"ls"}`), airlock.ApprovalRequired)
	wantStatus(t, call(t, he, "c__note", args), airlock.ApprovalRequired)

	// Once the TTL has passed, the same call is asked again.
	time.Sleep(2100 * time.Millisecond)
	r = call(t, h, "c__note", args)
	wantStatus(t, r, airlock.ApprovalRequired)
	if r.ApprovalID == id {
		t.Errorf("the call after the denial lapsed was asked on the denied request %s", id)
	}
	if n := c.calls.Load(); n != 0 {
		t.Errorf("server got %d calls", n)
	}
}

// TestApproverDenialHolds: a person at hand who answers no is not asked
// about the same call again.
func TestApproverDenialHolds(t *testing.T) {
	c := &counted{}
	ap := &answering{answer: airlock.Deny}
	h := openIn(t, governed(t, inProcess), map[string]*mcp.Server{"c": c.server()}, &airlock.Options{Approver: ap})
	wantStatus(t, call(t, h, "c__note", `{"text":"x"}`), airlock.Denied)
	r := call(t, h, "c__note", `{"text":"x"}`)
	wantStatus(t, r, airlock.Denied)
	if ap.asked.Load() != 1 || !strings.Contains(r.Content, " denied this call at ") || c.calls.Load() != 0 {
		t.Errorf("asked %d times, %d calls, second answer %q; want one question, no call, and the denial named", ap.asked.Load(), c.calls.Load(), r.Content)
	}
}

// always is a RememberingApprover that answers "always".
type always struct {
	asked, remembered atomic.Int64
}

func (a *always) Approve(context.Context, airlock.ApprovalRequest) (airlock.Verdict, error) {
	a.asked.Add(1)
	return airlock.Allow, nil
}

func (a *always) ApproveRemember(context.Context, airlock.ApprovalRequest) (airlock.Verdict, bool, error) {
	a.remembered.Add(1)
	return airlock.Allow, true, nil
}

// TestAlwaysIsRemembered: a person who answers "always" is not asked
// again about that tool, whatever the arguments, for that principal;
// argument constraints and deny rules still refuse, another principal is
// still asked, a hook that asks is asked, a tool that changes is asked
// about again, and so is every call once the rule is forgotten.
func TestAlwaysIsRemembered(t *testing.T) {
	st := sharedStore(t)
	cfg := governed(t, inProcess)
	// Policy asks about notes of some texts, and denies the others.
	cfg.Policy.Rules = []config.Rule{{Server: "c", Tool: "note", Decision: "ask", Source: "test:1",
		Args: []config.ArgConstraint{{Pointer: "/text", Enum: []string{"a", "b"}, Source: "test:2"}}}}
	c := &counted{}
	ap := &always{}
	servers := map[string]*mcp.Server{"c": c.server()}
	h := openIn(t, cfg, servers, &airlock.Options{Store: st, Principal: carol, StateDir: t.TempDir(), Approver: ap})

	wantStatus(t, call(t, h, "c__note", `{"text":"a"}`), airlock.OK)
	wantStatus(t, call(t, h, "c__note", `{"text":"b"}`), airlock.OK)
	wantStatus(t, call(t, h, "c__note", `{"text":"a"}`), airlock.OK)
	if ap.remembered.Load() != 1 || ap.asked.Load() != 0 || c.calls.Load() != 3 {
		t.Fatalf("asked %d+%d times for 3 calls (%d ran), want one question", ap.remembered.Load(), ap.asked.Load(), c.calls.Load())
	}
	// An argument constraint still refuses.
	wantStatus(t, call(t, h, "c__note", `{"text":"c"}`), airlock.Denied)

	rules, err := airlock.ListRules(context.Background(), st, airlock.Actor{Principal: carol})
	if err != nil || len(rules) != 1 || rules[0].Tool != "c__note" || rules[0].Server != "c" || rules[0].User != "carol" ||
		rules[0].CreatedBy != "carol" || !strings.HasPrefix(rules[0].ID, "rule_") {
		t.Fatalf("rules = %+v, %v; want carol's one rule for c__note", rules, err)
	}
	if other, _ := airlock.ListRules(context.Background(), st, airlock.Actor{Principal: eve}); len(other) != 0 {
		t.Errorf("eve's rules = %+v, want none", other)
	}

	// Another principal is asked.
	he := openIn(t, cfg, servers, &airlock.Options{Store: st, Principal: eve, StateDir: t.TempDir()})
	wantStatus(t, call(t, he, "c__note", `{"text":"a"}`), airlock.ApprovalRequired)

	// A deny rule wins over what was remembered.
	denying := governed(t, inProcess)
	denying.Policy.Rules = append(cfg.Policy.Rules, config.Rule{Server: "c", Tool: "note", Decision: "deny", Source: "test:3"})
	hd := openIn(t, denying, servers, &airlock.Options{Store: st, Principal: carol, StateDir: t.TempDir()})
	wantStatus(t, call(t, hd, "c__note", `{"text":"a"}`), airlock.Denied)

	// A hook that asks is asked, whatever was remembered: alone, or
	// along with policy. While hooks may ask, nothing remembered applies.
	ask := func(context.Context, *airlock.CallInfo) airlock.HookVerdict {
		return airlock.HookVerdict{Decision: airlock.Ask, Reason: "the hook asks"}
	}
	allowing := governed(t, inProcess)
	allowing.Policy.Rules = []config.Rule{{Server: "c", Tool: "note", Decision: "allow", Source: "test:4"}}
	for _, c := range []*config.Config{allowing, cfg} {
		hh := openIn(t, c, servers, &airlock.Options{Store: st, Principal: carol, StateDir: t.TempDir(), Before: []airlock.BeforeHook{ask}})
		wantStatus(t, call(t, hh, "c__note", `{"text":"a"}`), airlock.ApprovalRequired)
	}

	// The tool changed: asked again.
	changed := &counted{description: "Write a note. Also mail it out."}
	hc := openIn(t, cfg, map[string]*mcp.Server{"c": changed.server()}, &airlock.Options{Store: st, Principal: carol, StateDir: t.TempDir()})
	wantStatus(t, call(t, hc, "c__note", `{"text":"a"}`), airlock.ApprovalRequired)

	// Eve cannot forget carol's rule; carol can, and is asked again.
	if _, err := airlock.ForgetRule(context.Background(), st, rules[0].ID, "", airlock.Actor{Principal: eve, By: "eve"}); !errors.Is(err, airlock.ErrOtherPrincipal) {
		t.Errorf("eve forgetting carol's rule = %v, want ErrOtherPrincipal", err)
	}
	if _, err := airlock.ForgetRule(context.Background(), st, rules[0].ID, "changed my mind", airlock.Actor{Principal: carol, By: "carol"}); err != nil {
		t.Fatalf("ForgetRule: %v", err)
	}
	h.Close()
	ap2 := &answering{}
	h2 := openIn(t, cfg, servers, &airlock.Options{Store: st, Principal: carol, StateDir: t.TempDir(), Approver: ap2})
	wantStatus(t, call(t, h2, "c__note", `{"text":"b"}`), airlock.ApprovalRequired)
	h2.Close()

	events, err := st.Audit().Events(context.Background(), time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, e := range events {
		switch e.Event {
		case store.EventRuleRemembered, store.EventRuleUsed, store.EventRuleForgotten:
			if e.Fields["rule"] != rules[0].ID || e.Fields["user"] != "carol" {
				t.Errorf("%s event = %+v, want it to name the rule and carol", e.Event, e)
			}
			counts[e.Event]++
		}
	}
	// The first call ran on its grant, the next two on the rule.
	want := map[string]int{store.EventRuleRemembered: 1, store.EventRuleUsed: 2, store.EventRuleForgotten: 1}
	for ev, n := range want {
		if counts[ev] != n {
			t.Errorf("%d %s events, want %d", counts[ev], ev, n)
		}
	}
}

// TestRememberApproval: approving a pending request with "always" from
// outside the host (airlock approvals approve --remember) runs the call
// once on the grant, and later calls of the tool with other arguments
// without asking.
func TestRememberApproval(t *testing.T) {
	st := sharedStore(t)
	c := &counted{}
	h := openIn(t, governed(t, inProcess), map[string]*mcp.Server{"c": c.server()}, &airlock.Options{Store: st, Principal: carol, StateDir: t.TempDir()})
	r := call(t, h, "c__note", `{"text":"one"}`)
	wantStatus(t, r, airlock.ApprovalRequired)
	if _, err := airlock.RememberApproval(context.Background(), st, r.ApprovalID, "", airlock.Actor{Principal: eve, By: "eve"}); !errors.Is(err, airlock.ErrOtherPrincipal) {
		t.Errorf("eve remembering carol's request = %v, want ErrOtherPrincipal", err)
	}
	rule, err := airlock.RememberApproval(context.Background(), st, r.ApprovalID, "fine", airlock.Actor{Principal: carol, By: "carol"})
	if err != nil || rule.Approval != r.ApprovalID || rule.Tool != "c__note" {
		t.Fatalf("RememberApproval = %+v, %v", rule, err)
	}
	ran := call(t, h, "c__note", `{"text":"one"}`)
	wantStatus(t, ran, airlock.OK)
	if ran.ApprovalID != r.ApprovalID {
		t.Errorf("the approved call ran on %q, want its grant %s", ran.ApprovalID, r.ApprovalID)
	}
	wantStatus(t, call(t, h, "c__note", `{"text":"two"}`), airlock.OK)
	if n := c.calls.Load(); n != 2 {
		t.Errorf("server got %d calls, want 2", n)
	}
	// Remembering is once per tool and principal: a second request's
	// "always" gives the same rule.
	wantStatus(t, call(t, h, "c__note", `{"text":"three"}`), airlock.OK)
	if list, _ := st.Approvals().Rules(context.Background(), store.RuleFilter{}); len(list) != 1 {
		t.Errorf("rules = %+v, want one", list)
	}
}
