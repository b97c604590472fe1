package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFind(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		want    string // file name found, or ""
		wantErr string
	}{
		{"yaml", map[string]string{"airlock.yaml": ""}, "airlock.yaml", ""},
		{"yml", map[string]string{"airlock.yml": ""}, "airlock.yml", ""},
		{"both", map[string]string{"airlock.yaml": "", "airlock.yml": ""}, "", "both airlock.yaml and airlock.yml are in DIR: keep one"},
		{"directory", map[string]string{"airlock.yaml/x": ""}, "", "DIR/airlock.yaml is a directory, not a configuration file"},
		{"none", map[string]string{"other.yaml": "", ".git/HEAD": ""}, "", "no airlock.yaml in DIR or above it; pass --config FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tt.files)
			got, err := Find(dir)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("Find = %q, want error %q", got, tt.wantErr)
				}
				if msg := strings.ReplaceAll(err.Error(), dir, "DIR"); msg != tt.wantErr {
					t.Errorf("Find error = %q, want %q", msg, tt.wantErr)
				}
				return
			}
			wantFound(t, got, err, filepath.Join(dir, tt.want))
		})
	}
}

// wantFound checks that Find found want: got, err are what it returned.
func wantFound(t *testing.T, got string, err error, want string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Find = %q, want %q", got, want)
	}
}

// TestFindAbove: run in a subdirectory, Airlock uses the project's
// configuration, as git finds its repository: the nearest airlock.yaml at or
// above the directory, up to the repository's root.
func TestFindAbove(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		from  string // the directory searched from
		want  string // the file found, or "" for none
	}{
		{"in a subdirectory", map[string]string{"p/airlock.yaml": "", "p/a/b/x": ""}, "p/a/b", "p/airlock.yaml"},
		{"yml above", map[string]string{"p/airlock.yml": "", "p/a/x": ""}, "p/a", "p/airlock.yml"},
		{"the nearest", map[string]string{"p/airlock.yaml": "", "p/a/airlock.yaml": "", "p/a/b/x": ""}, "p/a/b", "p/a/airlock.yaml"},
		{"at the repository root", map[string]string{"p/.git/HEAD": "", "p/airlock.yaml": "", "p/a/x": ""}, "p/a", "p/airlock.yaml"},
		{"a worktree's .git file", map[string]string{"p/.git": "gitdir: x", "p/airlock.yaml": "", "p/a/x": ""}, "p/a", "p/airlock.yaml"},
		{"not past the repository root", map[string]string{"airlock.yaml": "", "p/.git/HEAD": "", "p/a/x": ""}, "p/a", ""},
		{"not past a nested repository", map[string]string{"airlock.yaml": "", "p/.git": "gitdir: x", "p/x": ""}, "p", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tt.files)
			got, err := Find(filepath.Join(dir, tt.from))
			if tt.want == "" {
				if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("Find = %q, %v; want nothing found", got, err)
				}
				return
			}
			wantFound(t, got, err, filepath.Join(dir, tt.want))
		})
	}
}

// TestFindAboveRefusesOthersFiles: a configuration found above the working
// directory that another user owns (as anyone can leave one in /tmp) is
// refused, not run; one in the working directory itself is as before.
func TestFindAboveRefusesOthersFiles(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"airlock.yaml": "", "a/x": ""})
	if err := os.Chown(filepath.Join(dir, "airlock.yaml"), 12345, 12345); err != nil {
		t.Fatal(err)
	}
	_, err := Find(filepath.Join(dir, "a"))
	if err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "belongs to another user (uid 12345)") ||
		!strings.Contains(err.Error(), "--config") {
		t.Errorf("Find = %v, want a refusal that names the owner and --config", err)
	}
	if got, err := Find(dir); err != nil || got != filepath.Join(dir, "airlock.yaml") {
		t.Errorf("Find in its own directory = %q, %v; want the file", got, err)
	}
}

func TestFindNotExist(t *testing.T) {
	_, err := Find(t.TempDir())
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Find error %v does not wrap fs.ErrNotExist", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"conf/airlock.yaml": "servers:\n  - {id: a, command: x, allowed_tools: [\"*\"]}\n",
		"conf/mcp.JSON":     `{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}`,
		"conf/bad.yaml":     "servers:\n  - {id: a, command: x}\n",
	})
	t.Chdir(dir)

	cfg, err := Load("conf/airlock.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	confDir := filepath.Join(dir, "conf")
	if got, want := cfg.Path, filepath.Join(confDir, "airlock.yaml"); got != want {
		t.Errorf("Path = %q, want %q", got, want)
	}
	if cfg.Dir != confDir || cfg.Servers[0].Cwd != confDir {
		t.Errorf("Dir = %q, Cwd = %q; want both %q", cfg.Dir, cfg.Servers[0].Cwd, confDir)
	}
	if got, want := cfg.Servers[0].Source, "conf/airlock.yaml:2"; got != want {
		t.Errorf("Source = %q, want %q", got, want)
	}

	cfg, err = Load("conf/mcp.JSON", &LoadOptions{Allow: []string{"a:read"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Path, filepath.Join(confDir, "mcp.JSON"); got != want {
		t.Errorf("Path = %q, want %q", got, want)
	}
	got := [][]string{cfg.Servers[0].AllowedTools, cfg.Servers[1].AllowedTools}
	if diff := cmp.Diff([][]string{{"read"}, nil}, got); diff != "" {
		t.Errorf("allowed tools mismatch (-want +got):\n%s", diff)
	}
	wantNotices := []string{`server "b" exposes no tools: pass --allow b:TOOL,... or import it from an airlock.yaml with allowed_tools`}
	if diff := cmp.Diff(wantNotices, cfg.Notices()); diff != "" {
		t.Errorf("Notices() mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"airlock.yaml": "servers:\n  - {id: a, command: x, allowed_tools: [\"*\"]}\n",
		"bad.yaml":     "servers:\n  - {id: a, command: x}\n",
		"big.yaml":     strings.Repeat("#", maxFileBytes+1),
	})
	t.Chdir(dir)
	tests := []struct {
		path  string
		allow []string
		want  string
	}{
		{"bad.yaml", nil, `bad.yaml:2: servers[0].allowed_tools: is required: list the tools to expose, or ["*"] for every tool`},
		{"airlock.yaml", []string{"a:t"}, "--allow applies to an mcpServers JSON file; airlock.yaml lists its tools under allowed_tools"},
		{"big.yaml", nil, "big.yaml: is larger than 4 MiB; a configuration file is a few kilobytes"},
		{"missing.yaml", nil, "read configuration: open missing.yaml: no such file or directory"},
	}
	for _, tt := range tests {
		_, err := Load(tt.path, &LoadOptions{Allow: tt.allow})
		if err == nil || err.Error() != tt.want {
			t.Errorf("Load(%q) error = %v, want %q", tt.path, err, tt.want)
		}
	}
	if _, err := Load("missing.yaml", nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of a missing file: %v does not wrap fs.ErrNotExist", err)
	}
}

func TestLoadPipe(t *testing.T) {
	// --config <(command) hands Load a pipe rather than a file.
	if _, err := os.Stat("/dev/fd"); err != nil {
		t.Skipf("no /dev/fd on this system: %v", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		w.WriteString("servers:\n  - {id: a, command: x, allowed_tools: []}\n")
		w.Close()
	}()
	cfg, err := Load("/dev/fd/"+strconv.Itoa(int(r.Fd())), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 1 {
		t.Errorf("got %d servers, want 1", len(cfg.Servers))
	}
}
