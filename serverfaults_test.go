package airlock_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
)

// How a server that misbehaves at start-up or dies in a call is reported:
// what a person needs to fix it, as soon as it is known.

// TestBannerOnStdout: a server that greets on stdout before it speaks MCP
// fails its start with the line quoted (escaped, cut) and the reason: a
// stdio server's stdout carries MCP messages only, its logs go to stderr.
func TestBannerOnStdout(t *testing.T) {
	long := strings.Repeat("x", 5000)
	for _, tt := range []struct {
		name, banner, want string
	}{
		{"plain", "MCP server starting...\n", `"MCP server starting..."`},
		{"coloured", "\x1b[32mready\x1b[0m on stdio\r\n", `"\x1b[32mready\x1b[0m on stdio"`},
		{"long", long + "\n", `"` + long[:200] + `"…`},
		{"after blank lines", "\n\n  Listening\n", `"  Listening"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := testServer(t, "greeter", "banner")
			srv.Env[envBanner] = tt.banner
			h := open(t, newConfig(t, srv))
			st := h.Servers()[0]
			if st.Status != airlock.StatusFailed || st.Err == nil || st.Err.Kind != airlock.ContractError {
				t.Fatalf("server = %+v (%v), want it failed with a contract error", st, st.Err)
			}
			msg := st.Err.Msg
			for _, want := range []string{
				"server greeter: during the handshake, server wrote a line on stdout that is not JSON-RPC: " + tt.want,
				"a stdio server writes only MCP messages on stdout: logs belong on stderr",
			} {
				if !strings.Contains(msg, want) {
					t.Errorf("error = %q\nwant it to contain %q", msg, want)
				}
			}
			if strings.ContainsAny(msg, "\x1b\r") || strings.Contains(msg, "invalid character") {
				t.Errorf("error = %q: want the line escaped, and no decoder jargon", msg)
			}
		})
	}
}

// Timeouts at start-up are reported when they run out: connect_timeout,
// not connect_timeout plus the time it takes to stop a server that does
// not answer (it ignores the end of stdin, so that takes the stop grace,
// then SIGTERM: before, the report waited for it). The margin is generous
// for a loaded machine and still well below the grace.
const (
	startTimeout = 2 * time.Second
	stopGrace    = 2 * time.Second // the default StopGrace
	reportMargin = 1500 * time.Millisecond
)

// openTimed opens a host with srv, which runs out of startTimeout, and
// reports how long Open took and the server's failure.
func openTimed(t *testing.T, srv config.Server) (*airlock.Host, *airlock.Error) {
	t.Helper()
	srv.ConnectTimeout = startTimeout
	began := time.Now()
	h, err := airlock.Open(context.Background(), newConfig(t, srv), &airlock.Options{StopGrace: stopGrace})
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	st := h.Servers()[0]
	if st.Status != airlock.StatusFailed || st.Err == nil || st.Err.Kind != airlock.ConnectionError {
		t.Fatalf("server = %+v (%v), want it failed with a connection error", st, st.Err)
	}
	if took < startTimeout || took > startTimeout+reportMargin {
		t.Errorf("the failure took %s to report; want connect_timeout (%s), not connect_timeout plus the %s of stopping the server",
			took.Round(time.Millisecond), startTimeout, stopGrace)
	}
	return h, st.Err
}

// TestHandshakeTimeoutIsConnectTimeout: a server that never answers fails
// after connect_timeout, named with its value, with what it wrote on
// stderr before the host gave up (secrets redacted); stopping it happens
// in the background, owned by the host, whose Close waits for it.
func TestHandshakeTimeoutIsConnectTimeout(t *testing.T) {
	const secret = "canary-host-secret-7f3e9d2a41"
	t.Setenv("AIRLOCK_TEST_CANARY", secret)
	srv := testServer(t, "mute", "silent")
	srv.SecretEnv = map[string]string{"API_KEY": "AIRLOCK_TEST_CANARY"}
	h, e := openTimed(t, srv)
	if want := "server mute: no handshake within 2s (connect_timeout)"; !strings.HasPrefix(e.Msg, want) {
		t.Errorf("error = %q, want %q", e.Msg, want)
	}
	if !strings.Contains(e.Msg, "its stderr ended with:\n    loading the index with API_KEY=[REDACTED:secret]") {
		t.Errorf("error = %q, want what the server wrote on stderr before the host gave up, its secret redacted", e.Msg)
	}
	// A server whose start failed was given no work: it is not given the
	// grace to finish any after its stdin closes, but SIGTERM soon after.
	closeAbandoned(t, h, serverPID(t, srv), "to exit on its own")
}

// closeAbandoned closes h, whose one server (process pid) failed to
// start, and wants the server gone without the host waiting the stop
// grace for it to do what (it was given no work).
func closeAbandoned(t *testing.T, h *airlock.Host, pid int, what string) {
	t.Helper()
	began := time.Now()
	if err := h.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if took := time.Since(began); took >= stopGrace {
		t.Errorf("Close took %s: it waited the %s grace for a server whose start failed %s", took.Round(time.Millisecond), stopGrace, what)
	}
	if pid == 0 {
		return
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("after Close, the server (pid %d) is still there: %v", pid, err)
	}
}

// TestStartFailureIgnoringSIGTERM: a server that never answers and
// ignores both the end of stdin and SIGTERM fails after connect_timeout,
// and the host's Close does not wait the grace twice before it kills it:
// it was given no work to finish.
func TestStartFailureIgnoringSIGTERM(t *testing.T) {
	srv := testServer(t, "mute", "silent")
	srv.Env[envIgnoreTerm] = "1"
	h, _ := openTimed(t, srv)
	closeAbandoned(t, h, serverPID(t, srv), "to exit after SIGTERM")
}

// TestDiscoveryTimeoutIsConnectTimeout: the same for a server that answers
// the handshake but never tools/list.
func TestDiscoveryTimeoutIsConnectTimeout(t *testing.T) {
	srv := rawServer(t, "mute", map[string]string{"initialize": legacyInit, "tools/list": "ignore"})
	srv.Env[envStubborn] = "1"
	srv.ProbeTimeout = 200 * time.Millisecond
	h, e := openTimed(t, srv)
	if want := "server mute: discovery did not finish within 2s (connect_timeout)"; e.Msg != want {
		t.Errorf("error = %q, want %q", e.Msg, want)
	}
	// It answered the handshake, but no call was made on it: it is not
	// given the grace to finish any either.
	closeAbandoned(t, h, 0, "(its discovery) to exit")
}

// TestCrashShowsTheServersLastWords: a call whose server dies under it
// ends with what the server last wrote on stderr, for the person: bounded,
// escaped and redacted, and the tool named once. The model gets nothing.
func TestCrashShowsTheServersLastWords(t *testing.T) {
	const (
		hostSecret = "canary-host-secret-7f3e9d2a41"
		githubPAT  = "ghp_canary0123456789abcdefghijklmnopqrst"
	)
	t.Setenv("AIRLOCK_TEST_CANARY", hostSecret)
	noise := strings.Repeat("noise\n", 50)
	lastWords := noise + "Traceback (most recent call last):\n" +
		"  using API_KEY=" + hostSecret + "\n" +
		"  token " + githubPAT + "\n" +
		"\x1b[31mfatal:\x1b[0m the index is corrupt " + strings.Repeat("y", 400) + "\n"
	for _, effect := range []string{"read", "write"} {
		t.Run(effect, func(t *testing.T) {
			srv := testServer(t, "sdk", "sdk")
			srv.SecretEnv = map[string]string{"API_KEY": "AIRLOCK_TEST_CANARY"}
			cfg := newConfig(t, srv)
			classify(cfg, "sdk", effect, "crash")
			h := open(t, cfg)
			args, _ := json.Marshal(map[string]string{"stderr": lastWords})
			r := call(t, h, "sdk__crash", string(args))
			want := airlock.ConnectionError
			if effect == "write" {
				want = airlock.OutcomeUnknown
			}
			wantStatus(t, r, want)
			msg := r.Err.Msg
			if r.Content != "" {
				t.Errorf("content = %q: a crash gives the model nothing", r.Content)
			}
			if n := strings.Count(msg, "sdk__crash"); n != 1 || !strings.HasPrefix(msg, "sdk__crash: server exited: exit status 3") {
				t.Errorf("error = %q: want it to start with the tool's name, once", msg)
			}
			_, tail, ok := strings.Cut(msg, "; its stderr ended with:\n")
			if !ok {
				t.Fatalf("error = %q, want the server's last words on stderr", msg)
			}
			lines := strings.Split(tail, "\n")
			if len(lines) != 10 {
				t.Errorf("the tail has %d lines, want the last 10:\n%s", len(lines), tail)
			}
			for _, want := range []string{"    Traceback (most recent call last):", "    \\x1b[31mfatal:\\x1b[0m the index is corrupt yyy", "…"} {
				if !strings.Contains(tail, want) {
					t.Errorf("tail lacks %q:\n%s", want, tail)
				}
			}
			for _, leak := range []string{hostSecret, githubPAT, "\x1b", strings.Repeat("y", 300)} {
				if strings.Contains(msg, leak) {
					t.Errorf("error holds %q: want it redacted, escaped and bounded:\n%s", leak, msg)
				}
			}
			if effect == "write" && !strings.Contains(msg, "will not be sent again: check (airlock recovery show "+r.RecoveryID+"), then record what you found: airlock recovery resolve "+r.RecoveryID+" --outcome applied") {
				t.Errorf("error = %q, want the recovery hint", msg)
			}
		})
	}
}

// TestDecisionErrorsNameTheirSubjectOnce: deciding an approval, or
// resolving a journal record, that is unknown or already settled says so,
// naming it once.
func TestDecisionErrorsNameTheirSubjectOnce(t *testing.T) {
	ctx := context.Background()
	st, err := airlock.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Approvals().Create(ctx, store.Approval{ID: "apr_one", Server: "c", Tool: "c__note", Digest: "d",
		ExpiresAt: time.Now().Add(time.Hour), Tenant: "default", User: "alice"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Journal().Begin(ctx, store.Intent{ID: "rec_one", Server: "c", Tool: "c__note", Effect: "write",
		Tenant: "default", User: "alice"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Journal().End(ctx, "rec_one", store.OutcomeUnknown, "no answer"); err != nil {
		t.Fatal(err)
	}
	as := airlock.Actor{Principal: airlock.Principal{Tenant: "default", User: "alice"}, By: "tester"}
	if err := airlock.DecideApproval(ctx, st, "apr_one", false, "", as); err != nil {
		t.Fatal(err)
	}
	if err := airlock.ResolveRecovery(ctx, st, "rec_one", store.ResolutionApplied, "", as); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		what string
		err  error
		want string
	}{
		{"granting a denied approval", airlock.DecideApproval(ctx, st, "apr_one", true, "", as), "grant approval apr_one: it is denied: conflict"},
		{"denying an unknown approval", airlock.DecideApproval(ctx, st, "apr_none", false, "", as), "approval apr_none: not found"},
		{"resolving a record again", airlock.ResolveRecovery(ctx, st, "rec_one", store.ResolutionApplied, "", as), "resolve rec_one: it was already resolved as applied: conflict"},
		{"resolving an unknown record", airlock.ResolveRecovery(ctx, st, "rec_none", store.ResolutionApplied, "", as), "record rec_none: not found"},
	} {
		if tt.err == nil || tt.err.Error() != tt.want {
			t.Errorf("%s = %v, want %q", tt.what, tt.err, tt.want)
		}
		if !errors.Is(tt.err, store.ErrConflict) && !errors.Is(tt.err, store.ErrNotFound) {
			t.Errorf("%s = %v, want ErrConflict or ErrNotFound to branch on", tt.what, tt.err)
		}
	}
}

// TestServerThatStopsReadingStdin: a stdio server busy in one call reads
// nothing more, and once the pipe to it is full a write to it blocks. The
// call that writes is still bounded by request_timeout: before, it waited
// until the server read its input again (for ever, if it never did), and
// neither request_timeout nor an interrupt ended it.
func TestServerThatStopsReadingStdin(t *testing.T) {
	srv := rawServer(t, "deaf", map[string]string{
		"server/discover": "ignore",
		"initialize":      legacyInit,
		"tools/list":      helloTools,
		"tools/call":      "delay:20000:" + helloCall, // reads nothing while it sleeps
	})
	srv.ProbeTimeout = 200 * time.Millisecond
	srv.RequestTimeout = time.Second
	h := open(t, newConfig(t, srv))

	first := make(chan struct{})
	go func() {
		defer close(first)
		call(t, h, "deaf__hello", `{}`)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(strings.Join(marks(t, srv), ","), "tools/call") {
		if time.Now().After(deadline) {
			t.Fatal("the server never saw the first call")
		}
		time.Sleep(10 * time.Millisecond)
	}

	big := `{"text":"` + strings.Repeat("x", 4<<20-64) + `"}` // more than a pipe holds
	start := time.Now()
	r := call(t, h, "deaf__hello", big)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the call took %v, want it ended by request_timeout (1s)", d.Round(time.Millisecond))
	}
	if r.Status == airlock.OK || r.Err == nil || !strings.Contains(r.Err.Msg, "stopped reading its input") {
		t.Errorf("status = %s (%v), want a failure that says the server stopped reading its input", r.Status, r.Err)
	}
	<-first
}
