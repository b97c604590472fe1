package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The memory benchmark: airlock shell --json (the built binary) with a
// configuration of n bundled workspace servers, each over stdio; once
// every server is ready, the host process's resident set (VmRSS) and its
// peak (VmHWM), from /proc. The servers' own processes are not counted.

// rssResult is what the memory benchmark measured, in bytes.
type rssResult struct {
	servers  int
	rss, hwm int64
}

// hostRSS starts the shell with servers workspace servers, built from
// airlock (empty: build it), and measures it.
func hostRSS(servers int, airlock string) (*rssResult, error) {
	dir, err := os.MkdirTemp("", "callbench-rss")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if airlock == "" {
		if airlock, err = buildAirlock(dir); err != nil {
			return nil, err
		}
	}
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	var yaml strings.Builder
	yaml.WriteString("servers:\n")
	for i := range servers {
		fmt.Fprintf(&yaml, "  - id: ws%d\n    command: airlock\n    args: [server, workspace, --root, %q]\n    allowed_tools: [\"*\"]\n", i, root)
	}
	cfg := filepath.Join(dir, "airlock.yaml")
	if err := os.WriteFile(cfg, []byte(yaml.String()), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(airlock, "shell", "--json", "--config", cfg, "--state", filepath.Join(dir, "state"))
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr tail
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	lines := bufio.NewReader(stdout)
	// The shell answers status once Open has returned: every server has
	// been started and discovered, or has failed.
	if _, err := io.WriteString(stdin, `{"id":1,"cmd":"status"}`+"\n"); err != nil {
		return nil, err
	}
	var reply struct {
		ID      any `json:"id"`
		Servers []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"servers"`
	}
	for {
		line, err := lines.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("airlock shell: %v\n%s", err, stderr.String())
		}
		reply.ID = nil
		if json.Unmarshal(line, &reply) == nil && reply.ID != nil {
			break
		}
	}
	if n := len(reply.Servers); n != servers {
		return nil, fmt.Errorf("airlock shell: status shows %d servers, want %d", n, servers)
	}
	for _, s := range reply.Servers {
		if s.Status != "ready" {
			return nil, fmt.Errorf("airlock shell: server %s is %s\n%s", s.ID, s.Status, stderr.String())
		}
	}
	res := &rssResult{servers: servers}
	if res.rss, res.hwm, err = procMemory(cmd.Process.Pid); err != nil {
		return nil, err
	}
	return res, nil
}

// procMemory reads a process's VmRSS and VmHWM from /proc, in bytes.
func procMemory(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status: %s: %v", pid, line, err)
		}
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	if rss == 0 || hwm == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status: no VmRSS or VmHWM", pid)
	}
	return rss, hwm, nil
}

// renderRSS writes the memory section of the report.
func renderRSS(w func(string, ...any), r *rssResult) {
	mb := func(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }
	w("## Host memory with %d stdio servers\n\n", r.servers)
	w("`airlock shell --json` with a configuration of %d bundled workspace servers (`airlock server workspace`),\n", r.servers)
	w("measured once every server is ready (the shell has answered `status`): the host process only, not the\n")
	w("servers' processes.\n\n")
	w("| | host |\n|---|---|\n")
	w("| VmRSS | %s |\n| VmHWM (peak) | %s |\n\n", mb(r.rss), mb(r.hwm))
	w("Target: VmRSS ≤ 40 MB.\n\n")
}
