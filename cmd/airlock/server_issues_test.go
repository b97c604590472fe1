package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/auth/bearer/bearertest"
)

// issuesProcess is a running `airlock server issues`.
type issuesProcess struct {
	cmd  *exec.Cmd
	addr string
	mu   sync.Mutex
	log  strings.Builder
	done chan struct{} // closed when the process has exited
	err  error         // its exit error, set before done is closed
}

func (p *issuesProcess) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// startIssues starts the server and waits for the address it logs.
func startIssues(t *testing.T, args ...string) *issuesProcess {
	t.Helper()
	cmd := exec.Command(airlockBin, append([]string{"server", "issues", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Dir = t.TempDir()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &issuesProcess{cmd: cmd, done: make(chan struct{})}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			p.mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
				addrc <- rec.Addr
			}
		}
		io.Copy(io.Discard, stderr)
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		select {
		case <-p.done:
		case <-time.After(time.Minute):
		}
	})
	select {
	case p.addr = <-addrc:
	case <-p.done:
		t.Fatalf("airlock server issues exited early: %v\n%s", p.err, p.stderr())
	case <-time.After(time.Minute):
		t.Fatalf("airlock server issues logged no address\n%s", p.stderr())
	}
	return p
}

func TestServerIssues(t *testing.T) {
	iss := bearertest.New(t, nil)
	const resource = "https://issues.example.com"
	p := startIssues(t, "--issuer", iss.URL, "--resource", resource, "--data", "issues.db")
	base := "http://" + p.addr

	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok\n" {
		t.Fatalf("/healthz: %d %q", resp.StatusCode, body)
	}

	// A real MCP client with a token works end to end.
	token := iss.Mint(t, iss.Claims(resource, "acme", "alice", "mcp:issues.read", "mcp:issues.write"), nil)
	client := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:   base + "/mcp",
		HTTPClient: &http.Client{Transport: bearertest.Transport(token, nil)},
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, p.stderr())
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_issue",
		Arguments: map[string]any{"project": "cli", "title": "From the CLI test", "idempotency_key": "cli-1"}})
	if err != nil || res.IsError {
		t.Fatalf("create_issue: %v %+v", err, res)
	}
	cs.Close()

	// Unauthenticated requests get the challenge.
	resp, err = http.Post(base+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := `Bearer resource_metadata="` + resource + `/.well-known/oauth-protected-resource", scope="mcp:issues.read"`; resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != want {
		t.Errorf("unauthenticated: %d %q, want 401 %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
	}

	// SIGTERM shuts it down cleanly.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", p.err, p.stderr())
		}
	case <-time.After(time.Minute):
		t.Fatal("airlock server issues did not stop after SIGTERM")
	}
	log := p.stderr()
	if !strings.Contains(log, `"msg":"shutting down"`) {
		t.Errorf("log has no shutdown line:\n%s", log)
	}
	if strings.Contains(log, token) {
		t.Error("the log contains the token")
	}
}

func TestServerIssuesInsecureHTTPAllowedExplicitly(t *testing.T) {
	iss := bearertest.New(t, nil)
	// The issuer is never contacted: the keys come from the loopback JWKS.
	p := startIssues(t, "--issuer", "http://auth.internal.example", "--resource", "http://issues.internal.example",
		"--jwks-url", iss.JWKSURL, "--allow-insecure-http")
	if !strings.Contains(p.stderr(), "allow-insecure-http") {
		t.Errorf("no warning about --allow-insecure-http in the log:\n%s", p.stderr())
	}
}

func TestServerIssuesUsageErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no issuer", []string{"--resource", "https://r.example.com"}, "needs --issuer"},
		{"no resource", []string{"--issuer", "https://a.example.com"}, "needs --resource"},
		{"plain http issuer", []string{"--issuer", "http://auth.example.com", "--resource", "https://r.example.com"}, "plain http"},
		{"plain http resource", []string{"--issuer", "https://auth.example.com", "--resource", "http://r.example.com"}, "plain http"},
		{"plain http JWKS", []string{"--issuer", "https://auth.example.com", "--resource", "https://r.example.com", "--jwks-url", "http://auth.example.com/jwks"}, "plain http"},
		{"HMAC algorithm", []string{"--issuer", "https://auth.example.com", "--resource", "https://r.example.com", "--algorithms", "HS256"}, "not accepted"},
		{"wildcard origin", []string{"--issuer", "https://auth.example.com", "--resource", "https://r.example.com", "--allowed-origins", "*"}, "allowed origin"},
		{"bad address", []string{"--issuer", "https://auth.example.com", "--resource", "https://r.example.com", "--addr", "8080"}, "HOST:PORT"},
		{"skew too large", []string{"--issuer", "https://auth.example.com", "--resource", "https://r.example.com", "--clock-skew", "1h"}, "clock skew"},
		{"unknown flag", []string{"--issuer", "https://auth.example.com", "--nope"}, "nope"},
		{"positional", []string{"extra", "--issuer", "https://auth.example.com", "--resource", "https://r.example.com"}, "takes no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, dir, "", append([]string{"server", "issues"}, tt.args...)...).want(t, exitUsage)
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr = %q, want it to mention %q", r.stderr, tt.want)
			}
		})
	}
	if r := runCLI(t, dir, "", "server", "nope").want(t, exitUsage); !strings.Contains(r.stderr, "workspace, issues") {
		t.Errorf("unknown server: %q", r.stderr)
	}
}
