package airlock_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
)

// serveAsHost opens a host as an agent process would, says "ready" on
// stdout once Open returned, and waits to be killed.
func serveAsHost() {
	var spec struct {
		Config config.Config
		State  string
	}
	if err := json.Unmarshal([]byte(os.Getenv("AIRLOCK_TEST_HOST")), &spec); err != nil {
		fmt.Println("bad spec:", err)
		os.Exit(2)
	}
	if _, err := airlock.Open(context.Background(), &spec.Config, &airlock.Options{StateDir: spec.State}); err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	fmt.Println("ready")
	time.Sleep(time.Hour)
}

// A proc is what /proc/PID/stat says about a process, for the tests.
type proc struct {
	state byte
	ppid  int
	start string
}

func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ppid, _ := strconv.Atoi(f[1])
	return proc{state: f[0][0], ppid: ppid, start: f[19]}, true
}

// running reports whether pid is a live process of srv's: it carries the
// server's mark file in its environment, so a recycled pid never counts.
func running(srv config.Server, pid int) bool {
	p, ok := readProc(pid)
	if !ok || p.state == 'Z' || p.state == 'X' {
		return false
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	return err == nil && bytes.Contains(env, []byte(envMark+"="+srv.Env[envMark]+"\x00"))
}

// unreaped reports whether pid is a zombie child of this process: one that
// the host, a child subreaper, adopted and did not reap.
func unreaped(pid int) bool {
	p, ok := readProc(pid)
	return ok && p.state == 'Z' && p.ppid == os.Getpid()
}

// escapees waits until an "escaper" server of srv marked its pid and its
// three leftovers, and returns them, the leftovers by kind. Processes of
// srv still running when the test ends are killed.
func escapees(t *testing.T, srv config.Server) (server int, leftovers map[string]int) {
	t.Helper()
	waitFor(t, 20*time.Second, "the server and its leftovers to start", func() bool {
		server, leftovers = 0, map[string]int{}
		for _, m := range marks(t, srv) {
			f := strings.Fields(m)
			switch {
			case len(f) == 2 && f[0] == "pid":
				server, _ = strconv.Atoi(f[1])
			case len(f) == 3 && f[0] == "leftover":
				leftovers[f[2]], _ = strconv.Atoi(f[1])
			}
		}
		return server != 0 && len(leftovers) == 3
	})
	t.Cleanup(func() { killMarked(t, srv) })
	return server, leftovers
}

// killMarked kills the processes of srv that marked their pid and still
// run, so that a failing test leaves nothing behind.
func killMarked(t *testing.T, srv config.Server) {
	for _, m := range marks(t, srv) {
		if f := strings.Fields(m); len(f) >= 2 && (f[0] == "pid" || f[0] == "leftover") {
			if pid, _ := strconv.Atoi(f[1]); running(srv, pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// startHostProcess runs this test binary as a host in another process,
// with env added to the environment (envMode names the kind of host), and
// waits until it says it is ready. stderr collects what the host writes
// there. A host that does not get ready fails the test.
func startHostProcess(t *testing.T, env ...string) (cmd *exec.Cmd, stderr *strings.Builder) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	stderr = &strings.Builder{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the host did not get ready: %q (%v)\n%s", line, cmd.ProcessState, stderr.String())
	}
	return cmd, stderr
}

// killedHost runs a host in another process, with a server that ignores
// the end of stdin and leaves a child in its group, one that left it and a
// daemon behind; once they all run it kills the host with SIGKILL.
func killedHost(t *testing.T) (srv config.Server, state string, server int, leftovers map[string]int) {
	t.Helper()
	srv = testServer(t, "esc", "escaper")
	srv.Env[envStubborn] = "1"
	state = t.TempDir()
	spec, _ := json.Marshal(map[string]any{"config": newConfig(t, srv), "state": state})
	cmd, _ := startHostProcess(t, envMode+"=host", "AIRLOCK_TEST_HOST="+string(spec))
	server, leftovers = escapees(t, srv)
	cmd.Process.Kill() // SIGKILL: the host runs no code of its own after this
	cmd.Wait()
	return srv, state, server, leftovers
}

func TestKilledHostTakesItsServerAlong(t *testing.T) {
	srv, _, server, _ := killedHost(t)
	waitFor(t, 10*time.Second, "the server to die with its host", func() bool { return !running(srv, server) })
}

func TestOpenStopsWhatAKilledHostLeft(t *testing.T) {
	srv, state, _, leftovers := killedHost(t)
	// The parent-death signal reached the server alone: what it started
	// runs on, and would run for good without the next host.
	for kind, pid := range leftovers {
		if !running(srv, pid) {
			t.Fatalf("the %s leftover is not running; the test proves nothing", kind)
		}
	}
	dead, _ := filepath.Glob(filepath.Join(state, "procs", "*.json"))
	if len(dead) != 1 {
		t.Fatalf("records of the dead host: %v, want one", dead)
	}

	// A process that a record names but which is not that server (its pid
	// was recycled: another start time, no marker) is left alone, and so
	// is everything a live host recorded.
	decoySrv := testServer(t, "decoy", "sleep")
	exe, _ := os.Executable()
	decoy := exec.Command(exe)
	decoy.Env = append(os.Environ(), envMode+"=sleep", envMark+"="+decoySrv.Env[envMark])
	decoy.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a group, as a server has
	if err := decoy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { decoy.Process.Kill(); decoy.Wait() })
	waitFor(t, 10*time.Second, "the decoy to run", func() bool { return running(decoySrv, decoy.Process.Pid) })
	p, _ := readProc(decoy.Process.Pid)
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", decoy.Process.Pid))
	sum := sha256.Sum256(cmdline)
	start, _ := strconv.ParseUint(p.start, 10, 64)
	me, _ := readProc(os.Getpid())
	writeJSON(t, filepath.Join(state, "procs", "1-recycled.json"), fmt.Sprintf(
		`{"pid":%d,"start":1,"servers":[{"server":"decoy","pgid":%d,"start":%d,"command":%q,"marker":"not-its-marker"}]}`,
		os.Getpid()+1_000_000, decoy.Process.Pid, start+1, hex.EncodeToString(sum[:])))
	live := filepath.Join(state, "procs", fmt.Sprintf("%d-live.json", os.Getpid()))
	writeJSON(t, live, fmt.Sprintf(`{"pid":%d,"start":%s,"servers":[{"server":"decoy","pgid":%d,"start":%d,"command":%q}]}`,
		os.Getpid(), me.start, decoy.Process.Pid, start, hex.EncodeToString(sum[:])))

	h, err := airlock.Open(context.Background(), newConfig(t), &airlock.Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for kind, pid := range leftovers {
		if running(srv, pid) {
			t.Errorf("the %s leftover of the dead host still runs", kind)
		}
		// A leftover that the kill reparents to this process (a subreaper)
		// may reach it a moment after Open; it is reaped, not left a zombie.
		deadline := time.Now().Add(5 * time.Second)
		for unreaped(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if unreaped(pid) {
			t.Errorf("the %s leftover is a zombie of this process", kind)
		}
	}
	for _, path := range dead {
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("the dead host's record %s is still there (%v)", path, err)
		}
	}
	if !running(decoySrv, decoy.Process.Pid) {
		t.Error("an unrelated process with a recorded pid was stopped")
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live host's record was removed: %v", err)
	}
}

func writeJSON(t *testing.T, path, content string) {
	t.Helper()
	if !json.Valid([]byte(content)) {
		t.Fatalf("invalid JSON %s", content)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestCloseEndsWhatLeftTheGroup(t *testing.T) {
	srv := testServer(t, "esc", "escaper")
	h := open(t, newConfig(t, srv))
	server, leftovers := escapees(t, srv)
	// The daemon's parent exited: it was reparented to this process, a
	// child subreaper, rather than to init.
	waitFor(t, 10*time.Second, "the daemon to be orphaned", func() bool {
		p, _ := readProc(leftovers["daemon"])
		return p.ppid == os.Getpid()
	})
	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for kind, pid := range map[string]int{"server": server, "group": leftovers["group"], "setsid": leftovers["setsid"], "daemon": leftovers["daemon"]} {
		if running(srv, pid) {
			t.Errorf("after Close, the %s process still runs", kind)
		}
		if unreaped(pid) {
			t.Errorf("after Close, the %s process is a zombie of this process", kind)
		}
	}
}

func TestOrphansThatExitAreReaped(t *testing.T) {
	srv := testServer(t, "esc", "escaper")
	srv.Env["AIRLOCK_TEST_LIFETIME"] = "5s"
	h := open(t, newConfig(t, srv))
	_, leftovers := escapees(t, srv)
	daemon := leftovers["daemon"]
	// The daemon is this process's child (an adopted orphan) until it
	// exits; then the host reaps it, while the server still runs.
	waitFor(t, 4*time.Second, "the daemon to be orphaned", func() bool {
		p, _ := readProc(daemon)
		return p.ppid == os.Getpid()
	})
	waitFor(t, 30*time.Second, "the orphan to exit and be reaped", func() bool {
		return !running(srv, daemon) && !unreaped(daemon)
	})
	wantStatus(t, call(t, h, "esc__echo", `{"text":"still here"}`), airlock.OK)
}

func TestReapingTakesNoOtherChild(t *testing.T) {
	// The host, a child subreaper, reaps the orphans of its servers; a
	// child that another part of the program started is its to wait for.
	srv := testServer(t, "esc", "escaper")
	open(t, newConfig(t, srv))
	escapees(t, srv)
	exe, _ := os.Executable()
	other := exec.Command(exe)
	other.Env = append(os.Environ(), envMode+"=exit")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // the host looks for orphans every 2 s
	err := other.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Errorf("Wait = %v, want exit status 7: the host took the exit status", err)
	}
}
