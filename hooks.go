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
	Effect     string         `json:"effect"`
	Task       string         `json:"task,omitempty"`
}

// Verdicts a hook or policy can reach.
const (
	Allow = "allow"
	Ask   = "ask"
	Deny  = "deny"
)

// A HookVerdict is a before-call hook's answer. An empty Decision has no
// opinion; "ask" makes the call need a person's approval; "deny" refuses it.
type HookVerdict struct {
	Decision string
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
			timeout = 5 * time.Second
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
			Decision string `json:"decision"`
			Reason   string `json:"reason"`
		}
		dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			return deny(`answered something other than {"decision": "allow|deny|ask", "reason": "…"}`)
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

// stricter returns the stricter of two verdicts: deny > ask > allow > none.
func stricter(a, b string) string {
	rank := map[string]int{"": 0, Allow: 1, Ask: 2, Deny: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

func (h *Host) runBeforeHooks(ctx context.Context, info *CallInfo) HookVerdict {
	var v HookVerdict
	for _, hook := range h.gov.before {
		hv := hook(ctx, info)
		if stricter(v.Decision, hv.Decision) != v.Decision {
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
