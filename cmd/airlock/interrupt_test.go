package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestShellInterruptLetsCallsFinish: an interrupt (SIGINT) of airlock
// shell --json does not cancel the calls in flight: a write that needs a
// second more finishes, its answer is written, and then the shell ends.
func TestShellInterruptLetsCallsFinish(t *testing.T) {
	testShellSignalLetsCallsFinish(t, syscall.SIGINT)
}

// TestShellHangupLetsCallsFinish: a hangup (the terminal closed, an SSH
// session dropped) ends airlock shell as an interrupt does. Before, SIGHUP
// killed it at once: no answer for the call in flight, and whatever its
// servers had started (a daemon, a child that left the group) kept running.
func TestShellHangupLetsCallsFinish(t *testing.T) {
	testShellSignalLetsCallsFinish(t, syscall.SIGHUP)
}

func testShellSignalLetsCallsFinish(t *testing.T, sig syscall.Signal) {
	dir := t.TempDir()
	mark := filepath.Join(t.TempDir(), "mark")
	writeFile(t, filepath.Join(dir, "airlock.yaml"), testServerYAML(t, `["*"]`, envTestMark, mark)+`policy:
  tools:
    - {server: w, tool: progress, effect: write}
  rules:
    - {server: w, tool: progress, decision: allow}
`)
	sh := startShell(t, dir)
	sh.send(map[string]any{"id": "slow", "cmd": "call", "name": "w__progress", "args": map[string]any{"steps": 4, "pause_ms": 300}})
	deadline := time.Now().Add(20 * time.Second)
	for b, _ := os.ReadFile(mark); !strings.Contains(string(b), "progress"); b, _ = os.ReadFile(mark) {
		if time.Now().After(deadline) {
			t.Fatal("the call did not reach the server")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := sh.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	if l := sh.next(); l["id"] != "slow" || l["status"] != "ok" {
		t.Fatalf("the call in flight at %v: %v, want ok", sig, l)
	}
	for l := range sh.lines {
		t.Errorf("after the answer: %v", l)
	}
}
