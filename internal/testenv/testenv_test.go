package testenv

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseNodeVersion(t *testing.T) {
	tests := []struct {
		out     string
		want    int
		wantErr bool
	}{
		{out: "v22.23.5\n", want: 22},
		{out: "v20.20.2", want: 20},
		{out: "v100.0.0", want: 100},
		{out: "22.1.0", wantErr: true},
		{out: "vx.1.0", wantErr: true},
		{out: "v-1.0.0", wantErr: true},
		{out: "", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseNodeVersion(tt.out)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseNodeVersion(%q) error = %v, want error: %t", tt.out, err, tt.wantErr)
			continue
		}
		if got != tt.want {
			t.Errorf("parseNodeVersion(%q) = %d, want %d", tt.out, got, tt.want)
		}
	}
}

func TestUnderCI(t *testing.T) {
	tests := []struct {
		ci   string
		want bool
	}{
		{ci: "", want: false},
		{ci: "false", want: false},
		{ci: "0", want: false},
		{ci: "true", want: true},
		{ci: "1", want: true},
		{ci: "yes", want: true},
	}
	for _, tt := range tests {
		getenv := func(string) string { return tt.ci }
		if got := underCI(getenv); got != tt.want {
			t.Errorf("underCI with CI=%q = %t, want %t", tt.ci, got, tt.want)
		}
	}
}

// writeExecutable writes a shell script standing in for a Node.js binary.
func writeExecutable(t *testing.T, path, script string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestFindNode(t *testing.T) {
	dir := t.TempDir()
	node22 := filepath.Join(dir, "node22")
	writeExecutable(t, node22, "echo v22.23.5")
	node20 := filepath.Join(dir, "node20")
	writeExecutable(t, node20, "echo v20.20.2")
	broken := filepath.Join(dir, "broken")
	writeExecutable(t, broken, "exit 1")
	installed := t.TempDir()
	writeExecutable(t, filepath.Join(installed, defaultNode), "echo v22.0.0")

	testFind(t, "AIRLOCK_TEST_NODE", findNode, []findCase{
		{name: "env node 22", env: node22, want: node22},
		{name: "env wins over install", env: node22, root: installed, want: node22},
		{name: "env too old", env: node20, wantErr: "is Node.js 20, want 22 or newer"},
		{name: "env does not run", env: broken, wantErr: "--version"},
		{name: "env names nothing", env: filepath.Join(dir, "absent"), wantErr: "AIRLOCK_TEST_NODE="},
		{name: "installed", root: installed, want: filepath.Join(installed, defaultNode)},
		{name: "not installed", root: t.TempDir(), wantErr: "does not exist", wantMissing: true},
		{name: "no module root", wantErr: "outside the module", wantMissing: true},
	})
}

// findCase is a case of a find function's table test.
type findCase struct {
	name        string
	env         string // the variable the function reads
	root        string
	want        string
	wantErr     string // substring of the error
	wantMissing bool   // errors.Is(err, errMissing): skip rather than fail outside CI
}

// testFind runs find, which reads the variable env, on each case.
func testFind(t *testing.T, env string, find func(getenv func(string) string, root string) (string, error), tests []findCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(name string) string {
				if name == env {
					return tt.env
				}
				return ""
			}
			got, err := find(getenv, tt.root)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("find: %v", err)
				}
				if got != tt.want {
					t.Errorf("find = %q, want %q", got, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("find error = %v, want one containing %q", err, tt.wantErr)
			}
			if got := errors.Is(err, errMissing); got != tt.wantMissing {
				t.Errorf("errors.Is(%v, errMissing) = %t, want %t", err, got, tt.wantMissing)
			}
		})
	}
}

func TestFindEverythingRelativeEnv(t *testing.T) {
	// A relative AIRLOCK_TEST_EVERYTHING is resolved against the working
	// directory, so that the path still works once a test changes directory
	// or hands it to a process started elsewhere.
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("index.js", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	getenv := func(string) string { return "index.js" }
	got, err := findEverything(getenv, "")
	if err != nil {
		t.Fatalf("findEverything: %v", err)
	}
	if want := filepath.Join(dir, "index.js"); got != want {
		t.Errorf("findEverything = %q, want %q", got, want)
	}
}

func TestNodeRuns(t *testing.T) {
	node := Node(t)
	if !filepath.IsAbs(node) {
		t.Errorf("Node = %q, want an absolute path", node)
	}
	major, err := nodeMajor(node)
	if err != nil {
		t.Fatal(err)
	}
	if major < MinNodeMajor {
		t.Errorf("Node is version %d, want %d or newer", major, MinNodeMajor)
	}
}

func TestFindInspector(t *testing.T) {
	dir := t.TempDir()
	launcher := filepath.Join(dir, "index.js")
	if err := os.WriteFile(launcher, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	installed := t.TempDir()
	writeExecutable(t, filepath.Join(installed, defaultInspector), "")

	testFind(t, "AIRLOCK_TEST_INSPECTOR", findInspector, []findCase{
		{name: "env", env: launcher, want: launcher},
		{name: "env wins over install", env: launcher, root: installed, want: launcher},
		{name: "env names nothing", env: filepath.Join(dir, "absent.js"), wantErr: "AIRLOCK_TEST_INSPECTOR="},
		{name: "installed", root: installed, want: filepath.Join(installed, defaultInspector)},
		{name: "not installed", root: t.TempDir(), wantErr: "AIRLOCK_TEST_INSPECTOR is unset", wantMissing: true},
	})
}
