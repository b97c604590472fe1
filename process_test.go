package airlock_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/testenv"
)

// waitFor polls until cond holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func hasMark(t *testing.T, lines func() []string, want string) bool {
	for _, m := range lines() {
		if m == want {
			return true
		}
	}
	return false
}

// groupOf reads a process's group from /proc.
func groupOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	g, err := strconv.Atoi(fields[2])
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestCloseKillsTheWholeProcessGroup(t *testing.T) {
	srv := testServer(t, "wrapped", "grandchild")
	h := open(t, newConfig(t, srv))
	pgid := groupOf(t, markedPID(t, srv, "grandchild", "the grandchild's pid"))
	if procs, _ := testenv.ProcsInGroup(pgid); len(procs) < 2 {
		t.Fatalf("group %d has %v, want the server and its grandchild", pgid, procs)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	procs, err := testenv.ProcsInGroup(pgid)
	if err != nil {
		t.Fatal(err)
	}
	if len(procs) != 0 {
		t.Errorf("after Close, group %d still has %v", pgid, procs)
	}
	// Close is idempotent.
	if err := h.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if st := h.Servers()[0].Status; st != airlock.StatusStopped {
		t.Errorf("status after Close = %s, want stopped", st)
	}
}

func TestCloseEscalatesForAStubbornServer(t *testing.T) {
	srv := testServer(t, "stubborn", "stubborn")
	h := open(t, newConfig(t, srv))
	r := call(t, h, "stubborn__echo", `{"text":"x"}`)
	wantStatus(t, r, airlock.OK)
	pid := serverPID(t, srv)
	done := make(chan error)
	go func() { done <- h.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close did not return")
	}
	if procs, _ := testenv.ProcsInGroup(pid); len(procs) > 0 {
		t.Errorf("processes %v survived Close", procs)
	}
}

func TestServerTimeoutCancelsTheRequest(t *testing.T) {
	srv := testServer(t, "sdk", "sdk")
	srv.RequestTimeout = 300 * time.Millisecond
	h := open(t, newConfig(t, srv))
	// The tool is external: the call was sent and nobody knows whether it
	// took effect. It is recorded as unknown, never sent again.
	r := call(t, h, "sdk__slow", `{}`)
	wantStatus(t, r, airlock.OutcomeUnknown)
	if !strings.Contains(r.Err.Msg, "request_timeout") || r.Content != "" || r.RecoveryID == "" {
		t.Errorf("result = %q / %q / %q, want a timeout for a person to check, with a recovery id", r.Err.Msg, r.Content, r.RecoveryID)
	}
	// The cancellation reached the server: its handler saw ctx.Done.
	waitFor(t, 10*time.Second, "the server to see the cancellation", func() bool {
		return hasMark(t, func() []string { return marks(t, srv) }, "cancelled slow")
	})
	if got := calls(t, srv); len(got) != 1 {
		t.Errorf("server received %v, want exactly one call", got)
	}
	wantStatus(t, call(t, h, "sdk__echo", `{"text":"after"}`), airlock.OK)
}

func TestReadTimeoutIsAConnectionError(t *testing.T) {
	srv := testServer(t, "sdk", "sdk")
	srv.RequestTimeout = 300 * time.Millisecond
	r := callRead(t, srv, "slow", `{}`)
	wantStatus(t, r, airlock.ConnectionError)
	if r.RecoveryID != "" {
		t.Errorf("a read has a recovery record %s", r.RecoveryID)
	}
}

func TestCallerCancellation(t *testing.T) {
	srv := testServer(t, "sdk", "sdk")
	h := open(t, newConfig(t, srv))
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg sync.WaitGroup
		r  *airlock.Result
	)
	wg.Go(func() { r = h.Call(ctx, h.Snapshot(), airlock.Call{Name: "sdk__slow"}) })
	waitFor(t, 10*time.Second, "the call to arrive", func() bool { return len(calls(t, srv)) == 1 })
	cancel()
	wg.Wait()
	// Cancelled after it was sent: the outcome of an external call is unknown.
	wantStatus(t, r, airlock.OutcomeUnknown)
	waitFor(t, 10*time.Second, "the server to see the cancellation", func() bool {
		return hasMark(t, func() []string { return marks(t, srv) }, "cancelled slow")
	})
}

func TestCrashDuringCallAndRestart(t *testing.T) {
	srv := testServer(t, "sdk", "sdk")
	h := open(t, newConfig(t, srv))
	r := call(t, h, "sdk__crash", `{}`)
	wantStatus(t, r, airlock.OutcomeUnknown)
	if r.Content != "" || !strings.Contains(r.Err.Msg, "exited") {
		t.Errorf("content %q, error %q: a crash is not tool text, and says the server exited", r.Content, r.Err.Msg)
	}
	if n := strings.Count(strings.Join(calls(t, srv), "\n"), "call crash"); n != 1 {
		t.Errorf("the server got the write %d times, want once", n)
	}
	// The supervisor restarts the server; the host stays usable.
	waitFor(t, 30*time.Second, "the server to be restarted", func() bool {
		st := h.Servers()[0]
		return st.Status == airlock.StatusReady && st.Restarts == 1
	})
	wantStatus(t, call(t, h, "sdk__echo", `{"text":"back"}`), airlock.OK)
	done := make(chan error)
	go func() { done <- h.Close() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Close hangs after a crash")
	}
}

func TestServerKilledDuringReadAndWrite(t *testing.T) {
	for _, effect := range []string{"read", "external"} {
		t.Run(effect, func(t *testing.T) {
			srv := testServer(t, "sdk", "stubborn") // records its pid
			cfg := newConfig(t, srv)
			classify(cfg, "sdk", effect, "slow")
			h := open(t, cfg)
			pid := serverPID(t, srv)
			done := make(chan *airlock.Result)
			go func() { done <- call(t, h, "sdk__slow", `{}`) }()
			waitFor(t, 10*time.Second, "the call to arrive", func() bool { return len(calls(t, srv)) == 1 })
			syscall.Kill(-pid, syscall.SIGKILL)
			r := <-done
			if effect == "read" {
				wantStatus(t, r, airlock.ConnectionError)
			} else {
				wantStatus(t, r, airlock.OutcomeUnknown)
			}
			if n := len(calls(t, srv)); n != 1 {
				t.Errorf("the server got %d calls, want 1: nothing is replayed", n)
			}
			waitFor(t, 30*time.Second, "the restart", func() bool { return h.Servers()[0].Restarts == 1 })
			wantStatus(t, call(t, h, "sdk__echo", `{"text":"again"}`), airlock.OK)
		})
	}
}

// serverPID reads the pid a stubborn test server recorded.
func serverPID(t *testing.T, srv config.Server) int {
	t.Helper()
	return markedPID(t, srv, "pid", "the server's pid")
}

// markedPID reads the pid a test server recorded in its mark "name PID";
// want says what the test wanted, should there be none.
func markedPID(t *testing.T, srv config.Server, name, want string) int {
	t.Helper()
	for _, m := range marks(t, srv) {
		if p, ok := strings.CutPrefix(m, name+" "); ok {
			if pid, _ := strconv.Atoi(p); pid != 0 {
				return pid
			}
		}
	}
	t.Fatalf("marks = %v, want %s", marks(t, srv), want)
	return 0
}

func TestOversizedMessage(t *testing.T) {
	srv := testServer(t, "sdk", "sdk")
	cfg := newConfig(t, srv)
	classify(cfg, "sdk", "read", "big")
	cfg.Limits.MaxMessageBytes = 64 << 10
	h := open(t, cfg)
	wantStatus(t, call(t, h, "sdk__big", `{"bytes":1000}`), airlock.OK)
	r := call(t, h, "sdk__big", `{"bytes":200000}`)
	wantStatus(t, r, airlock.ContractError)
	if !strings.Contains(r.Err.Msg, "max_message_bytes") {
		t.Errorf("error = %q, want it to name the limit", r.Err.Msg)
	}
}
