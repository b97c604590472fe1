package airlock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/policy"
)

// A CallInfo describes a call to hooks: what is about to be sent, after
// strict decoding, before policy.
type CallInfo struct {
	ToolCallID string         `json:"tool_call_id"`
	Name       string         `json:"tool"` // local name
	Server     string         `json:"server"`
	RemoteName string         `json:"remote_name"`
	Arguments  map[string]any `json:"arguments"`
	Snapshot   string         `json:"snapshot"`
	Effect     Effect         `json:"effect"`
	Task       string         `json:"task,omitempty"`
}

// A Verdict is what happens to a call: [Allow], [Ask] or [Deny].
type Verdict = policy.Verdict

// The verdicts a hook, policy or a person can reach.
const (
	Allow = policy.Allow
	Ask   = policy.Ask
	Deny  = policy.Deny
)

// An Effect is what a tool may do to the world, as local policy says:
// "read", "write" or "external" (the default for every MCP tool).
type Effect = policy.Effect

// The effects local policy gives tools.
const (
	EffectRead     = policy.Read
	EffectWrite    = policy.Write
	EffectExternal = policy.External
)

// A HookVerdict is a before-call hook's answer. An empty Decision has no
// opinion; Ask makes the call need a person's approval; Deny refuses it.
// Any other Decision is a broken hook, and refuses the call too.
type HookVerdict struct {
	Decision Verdict
	Reason   string
}

// A BeforeHook looks at a call before policy does. It may refuse the call or
// ask for approval, never make it more permitted than policy does.
type BeforeHook func(ctx context.Context, c *CallInfo) HookVerdict

// An AfterHook sees every result before the caller does, and may annotate
// it (Result.Notes); it cannot undo a call that was sent.
type AfterHook func(ctx context.Context, c *CallInfo, r *Result)

// maxHookOutput bounds what a command hook may print.
const maxHookOutput = 64 << 10

// commandHook runs a configured command: the call as JSON on stdin, the
// verdict {"decision": "allow|deny|ask", "reason": "…"} on stdout. A hook
// that fails, times out or answers anything else denies: a broken guard
// must not open the door.
func commandHook(h config.Hook, dir string) BeforeHook {
	return func(ctx context.Context, c *CallInfo) HookVerdict {
		deny := func(format string, args ...any) HookVerdict {
			return HookVerdict{Decision: Deny, Reason: fmt.Sprintf("hook %s (%s) ", h.Command[0], h.Source) + fmt.Sprintf(format, args...)}
		}
		in, err := json.Marshal(c)
		if err != nil {
			return deny("cannot be given the call: %v", err)
		}
		timeout := h.Timeout
		if timeout <= 0 {
			timeout = config.DefaultHookTimeout
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, h.Command[0], h.Command[1:]...)
		cmd.Dir = dir
		cmd.Stdin = bytes.NewReader(in)
		// The hook's stderr is its own business; the host keeps none of it,
		// so nothing it prints can leak.
		cmd.Stderr = io.Discard
		var out limitedBuffer
		cmd.Stdout = &out
		cmd.Env = hookEnv()
		setGroup(cmd)
		cmd.Cancel = func() error { return killGroup(cmd) }
		cmd.WaitDelay = time.Second
		err = cmd.Run()
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return deny("did not answer within %s", timeout)
		case err != nil:
			return deny("failed: %v", err)
		case out.over:
			return deny("printed more than %d bytes", maxHookOutput)
		}
		var v struct {
			Decision Verdict `json:"decision"`
			Reason   string  `json:"reason"`
		}
		dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			return deny(`answered something other than {"decision": "allow|deny|ask", "reason": "…"}`)
		}
		// One answer, and nothing after it: a hook that printed a second
		// one (an allow, then a deny when it found a problem) did not
		// answer clearly, and the first must not stand for it.
		if _, err := dec.Token(); err != io.EOF {
			return deny(`answered more than one {"decision": "allow|deny|ask", "reason": "…"}, or something after it`)
		}
		switch v.Decision {
		case Allow, Ask, Deny:
		default:
			return deny("answered decision %q; want allow, deny or ask", v.Decision)
		}
		reason := strings.TrimSpace(v.Reason)
		if reason == "" {
			reason = "no reason given"
		}
		return HookVerdict{Decision: v.Decision, Reason: fmt.Sprintf("hook %s: %s", h.Command[0], reason)}
	}
}

// hookEnv is a command hook's environment: what a server gets, without a
// private HOME. The host's secrets are not inherited.
func hookEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// limitedBuffer keeps at most maxHookOutput bytes.
type limitedBuffer struct {
	bytes.Buffer
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > maxHookOutput {
		b.over = true
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// runBeforeHooks asks every before hook, library hooks first, and returns
// the strictest answer; the first deny ends the round.
func (h *Host) runBeforeHooks(ctx context.Context, info *CallInfo) HookVerdict {
	var v HookVerdict
	for i, hook := range h.gov.before {
		hv := hook(ctx, info)
		switch hv.Decision {
		case "":
			continue // no opinion
		case Allow, Ask, Deny:
		default:
			// A verdict nobody can act on is a broken guard, and a broken
			// guard must not open the door.
			hv = HookVerdict{Decision: Deny, Reason: fmt.Sprintf("before hook %d answered %q, which is not allow, ask or deny", i+1, hv.Decision)}
		}
		if v.Decision == "" || policy.Stricter(v.Decision, hv.Decision) != v.Decision {
			v = hv
		}
		if v.Decision == Deny {
			break
		}
	}
	return v
}

func (h *Host) runAfterHooks(ctx context.Context, info *CallInfo, r *Result) *Result {
	for _, hook := range h.gov.after {
		hook(ctx, info, r)
	}
	return r
}
