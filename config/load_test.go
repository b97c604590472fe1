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
		{"none", map[string]string{"other.yaml": ""}, "", "no airlock.yaml in DIR; pass --config FILE"},
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
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(dir, tt.want); got != want {
				t.Errorf("Find = %q, want %q", got, want)
			}
		})
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
