package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// A ptySession is the binary run on a pseudo-terminal of its own, as a
// person's shell runs it: stdin, stdout and stderr are the terminal.
type ptySession struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File // the terminal's other side: what a person types and sees
	done chan struct{}

	mu   sync.Mutex
	out  bytes.Buffer // everything the terminal showed
	seen int          // how much of out expect has gone past
}

// onPTY starts the binary in dir with args on a new 120×40 terminal.
func onPTY(t *testing.T, dir string, args ...string) *ptySession {
	t.Helper()
	cmd := exec.Command(airlockBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TERM=xterm")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatalf("starting airlock on a terminal: %v", err)
	}
	p := &ptySession{t: t, cmd: cmd, tty: tty, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return // EIO once the program has gone
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		tty.Close()
	})
	return p
}

// expect waits until the terminal shows want, after what earlier expects
// saw, and returns what it showed up to and including want.
func (p *ptySession) expect(want string) string {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		p.mu.Lock()
		all := p.out.String()
		if i := strings.Index(all[p.seen:], want); i >= 0 {
			got := all[p.seen : p.seen+i+len(want)]
			p.seen += i + len(want)
			p.mu.Unlock()
			return got
		}
		p.mu.Unlock()
		if time.Now().After(deadline) {
			p.t.Fatalf("the terminal did not show %q; it showed:\n%s", want, all[p.seen:])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// send types keys.
func (p *ptySession) send(keys string) {
	p.t.Helper()
	if _, err := io.WriteString(p.tty, keys); err != nil {
		p.t.Fatalf("typing %q: %v", keys, err)
	}
}

// exit waits for the program to end and returns its exit code and what
// the terminal showed since the last expect.
func (p *ptySession) exit() (int, string) {
	p.t.Helper()
	waited := make(chan error, 1)
	go func() { waited <- p.cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-time.After(30 * time.Second):
		p.t.Fatalf("airlock did not exit; the terminal showed:\n%s", p.rest())
	}
	<-p.done
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		p.t.Fatalf("waiting for airlock: %v", err)
	}
	return p.cmd.ProcessState.ExitCode(), p.rest()
}

func (p *ptySession) rest() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()[p.seen:]
}

// greetDir is a directory whose airlock.yaml runs the test server w with
// its greet and progress tools; progress is a read, which policy allows.
func greetDir(t *testing.T) string {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "airlock.yaml"), testServerYAML(t, "[greet, progress]")+`policy:
  tools:
    - {server: w, tool: progress, effect: read}
`)
	return dir
}

// TestCallAsksOnTerminal: on a terminal, a call that needs approval asks
// there: y runs it once, n denies it (and the same call stays denied),
// and always runs it and every later call of the tool without asking,
// until the remembered rule is forgotten.
func TestCallAsksOnTerminal(t *testing.T) {
	dir := greetDir(t)
	greet := func(name string) []string { return []string{"call", "w__greet", "--args", `{"name":"` + name + `"}`} }

	// y: once.
	p := onPTY(t, dir, greet("ada")...)
	p.expect("w__greet needs your approval (apr_")
	p.expect(`"name": "ada"`)
	p.expect("always: don't ask again about w__greet")
	p.expect("Approve this call? [y/N/always] ")
	p.send("y\r")
	if code, out := p.exit(); code != 0 || !strings.Contains(out, "hello ada") {
		t.Fatalf("answered y: exit %d, terminal:\n%s", code, out)
	}
	runCLI(t, dir, "", append(greet("ada"), "--json")...).want(t, 5) // the grant ran one call

	// n: denied, and the same call is denied without asking.
	p = onPTY(t, dir, greet("eve")...)
	p.expect("Approve this call? [y/N/always] ")
	p.send("n\r")
	if code, out := p.exit(); code != 1 || !strings.Contains(out, "denied: w__greet refused: a person denied approval apr_") {
		t.Fatalf("answered n: exit %d, terminal:\n%s", code, out)
	}
	p = onPTY(t, dir, greet("eve")...)
	if code, out := p.exit(); code != 1 || !regexp.MustCompile(`denied: w__greet refused: \S+ denied this call at \S+ \(approval apr_\w+\)`).MatchString(out) ||
		strings.Contains(out, "Approve this call") {
		t.Fatalf("the denied call again: exit %d, terminal:\n%s", code, out)
	}

	// always: remembered for the tool, whatever the arguments.
	p = onPTY(t, dir, greet("bob")...)
	p.expect("Approve this call? [y/N/always] ")
	p.send("always\r")
	if code, out := p.exit(); code != 0 || !strings.Contains(out, "hello bob") {
		t.Fatalf("answered always: exit %d, terminal:\n%s", code, out)
	}
	r := runCLI(t, dir, "", greet("carol")...).want(t, 0)
	if !strings.Contains(r.stdout, "hello carol") {
		t.Errorf("a call after always = %q", r.stdout)
	}
	r = runCLI(t, dir, "", "approvals", "rules", "--json").want(t, 0)
	rules, _ := decode(t, r.stdout)["rules"].([]any)
	if len(rules) != 1 {
		t.Fatalf("approvals rules --json = %s, want one rule", r.stdout)
	}
	rule := rules[0].(map[string]any)
	if rule["server"] != "w" || rule["tool"] != "w__greet" || !strings.HasPrefix(rule["id"].(string), "rule_") {
		t.Errorf("the rule = %v", rule)
	}
	// A denial of one call still holds: it is more specific.
	runCLI(t, dir, "", greet("eve")...).want(t, 1)

	runCLI(t, dir, "", "approvals", "forget", rule["id"].(string)).want(t, 0)
	runCLI(t, dir, "", greet("carol")...).want(t, 5)
}

// TestShellLineEditing: the text shell on a terminal shows a prompt, edits
// the line (backspace, Ctrl-A to the start), recalls earlier commands
// (up), keeps answers out of the history, asks y/N/always, shows a long
// call's progress, and leaves on Ctrl-C with exit 130.
func TestShellLineEditing(t *testing.T) {
	dir := greetDir(t)
	p := onPTY(t, dir, "shell")
	p.expect("airlock> ")
	p.send("statux\x7fs\r") // a typo, taken back
	p.expect("ready")
	p.expect("airlock> ")
	p.send(`tatus` + "\x01" + "s\r") // the missing first letter, typed at the start
	p.expect("ready")
	p.expect("airlock> ")
	p.send(`call w__greet {"name":"ada"}` + "\r")
	p.expect("Approve this call? [y/N/always] ")
	p.send("y\r")
	p.expect("hello ada")
	p.expect("airlock> ")
	// Up recalls the call, not the answer; the grant was used, so it asks.
	p.send("\x1b[A")
	p.expect(`call w__greet {"name":"ada"}`)
	p.send("\r")
	p.expect("Approve this call? [y/N/always] ")
	p.send("always\r")
	p.expect("hello ada")
	p.expect("airlock> ")
	p.send(`call w__greet {"name":"bob"}` + "\r")
	if got := p.expect("hello bob"); strings.Contains(got, "Approve") {
		t.Errorf("a call after always asked again:\n%s", got)
	}
	p.expect("airlock> ")
	p.send(`call w__progress {"steps":2}` + "\r") // a long call draws its progress
	p.expect("\r\x1b[Kw__progress [")
	p.expect("] 1/2 (50%) step 1")
	p.expect("done")
	p.expect("airlock> ")
	p.send("\x03")
	if code, out := p.exit(); code != 130 || !strings.Contains(out, "interrupted") {
		t.Errorf("Ctrl-C at the prompt: exit %d, terminal:\n%s", code, out)
	}

	p = onPTY(t, dir, "shell")
	p.expect("airlock> ")
	p.send("\x04") // Ctrl-D on an empty line: the end of the input
	if code, out := p.exit(); code != 0 {
		t.Errorf("Ctrl-D at the prompt: exit %d, terminal:\n%s", code, out)
	}
}

// TestProgressOnTerminal: a long call draws a progress bar on the
// terminal, redrawn in place and cleared before the result; the server's
// text is shown without the characters nobody sees.
func TestProgressOnTerminal(t *testing.T) {
	dir := greetDir(t)
	p := onPTY(t, dir, "call", "w__progress", "--args", `{"steps":3}`)
	p.expect("\r\x1b[Kw__progress [")
	p.expect("] 1/3 (33%) step 1")
	p.expect("] 2/3 (66%) step 2")
	p.expect("\r\x1b[K")
	code, out := p.exit()
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("exit %d, terminal:\n%s", code, out)
	}
	if all := p.out.String(); strings.Contains(all, "\u202e") || strings.Contains(all, "\x1b[31m") {
		t.Errorf("the server's hidden or control characters reached the terminal:\n%q", all)
	}
}

// TestProgressLines: with --progress and no terminal, each progress
// notification is one line on stderr; without it, none.
func TestProgressLines(t *testing.T) {
	dir := greetDir(t)
	args := []string{"call", "w__progress", "--args", `{"steps":3}`}
	r := runCLI(t, dir, "", append(args, "--progress")...).want(t, 0)
	for _, want := range []string{"airlock: w__progress progress 1/3 (33%): step 1[31m\n", "airlock: w__progress progress 2/3 (66%): step 2[31m\n"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%q", want, r.stderr)
		}
	}
	if r.stdout != "done\n" || strings.Contains(r.stderr, "\u202e") || strings.Contains(r.stderr, "\x1b") {
		t.Errorf("stdout %q, stderr %q: want the result alone on stdout, no hidden or control characters", r.stdout, r.stderr)
	}
	r = runCLI(t, dir, "", append(args, "--json", "--progress")...).want(t, 0)
	if !strings.Contains(r.stderr, "progress 1/3") || decode(t, r.stdout)["status"] != "ok" {
		t.Errorf("--json --progress: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	r = runCLI(t, dir, "", args...).want(t, 0)
	if strings.Contains(r.stderr, "progress") {
		t.Errorf("without --progress, stderr = %q", r.stderr)
	}
}

// TestTraceFile: --trace writes every message, one JSON object a line,
// redacted, to a file only its owner may read; it refuses a directory.
func TestTraceFile(t *testing.T) {
	dir := greetDir(t)
	const token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	runCLI(t, dir, "", "call", "w__progress", "--args", `{"steps":1,"pause_ms":10,"note":"`+token+`"}`, "--trace", "trace.jsonl").want(t, 0)
	fi, err := os.Stat(filepath.Join(dir, "trace.jsonl"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("trace file: %v, %v; want mode 0600", fi, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
	if strings.Contains(string(b), token) || !strings.Contains(string(b), `"note":"[REDACTED:github_token]"`) {
		t.Errorf("the trace does not redact the token:\n%s", b)
	}
	var directions []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		m := decode(t, l)
		msg, _ := m["message"].(map[string]any)
		if m["server"] != "w" || m["time"] == nil || msg["jsonrpc"] != "2.0" {
			t.Errorf("trace line %s", l)
		}
		if method, _ := msg["method"].(string); method != "" {
			directions = append(directions, m["direction"].(string)+" "+method)
		}
	}
	got := strings.Join(directions, ", ")
	for _, want := range []string{"sent tools/list", "sent tools/call", "received notifications/progress"} {
		if !strings.Contains(got, want) {
			t.Errorf("the trace lacks %q: %s", want, got)
		}
	}

	r := runCLI(t, dir, "", "tools", "--trace", dir).want(t, 2)
	if !strings.Contains(r.stderr, "--trace "+dir+": not a regular file") {
		t.Errorf("--trace DIR: stderr = %q", r.stderr)
	}
}
