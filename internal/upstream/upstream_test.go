package upstream

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/config"
)

func TestTail(t *testing.T) {
	tl := newTail(16)
	tl.Write([]byte("first line\n"))
	tl.Write([]byte("second\nthird\n"))
	if got := tl.String(); got != "second\nthird" {
		t.Errorf("tail = %q, want the last whole lines", got)
	}
	tl.Write([]byte(strings.Repeat("x", 40)))
	if got := tl.String(); len(got) > 16 {
		t.Errorf("tail holds %d bytes, want at most 16", len(got))
	}
	tl = newTail(100)
	tl.Write([]byte("a\nb\nc\nd\n"))
	if got := tl.lastLines(2); got != "c\nd" {
		t.Errorf("lastLines(2) = %q", got)
	}
	tl = newTail(64)
	for i := range 1000 {
		fmt.Fprintf(tl, "line %d\n", i)
	}
	if got, s := tl.lastLines(2), tl.String(); got != "line 998\nline 999" || len(s) > 64 {
		t.Errorf("after many writes: lastLines(2) = %q, String() = %q (%d bytes, want at most 64)", got, s, len(s))
	}
}

func TestResolveCommand(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "srv"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "local"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "plain"), []byte("data"), 0o644)
	env := []string{"PATH=relative:" + bin}
	self, _ := os.Executable()
	tests := []struct {
		command, want, err string
	}{
		{"srv", filepath.Join(bin, "srv"), ""},
		{"./local", filepath.Join(dir, "local"), ""},
		{"./plain", "", "is not executable"},
		{"./bin", "", "is a directory"},
		{"nope", "", `"nope" not found in PATH`},
		{"airlock", self, ""},
	}
	for _, tt := range tests {
		got, err := resolveCommand(tt.command, dir, env)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("resolveCommand(%q) = %q, %v; want error %q", tt.command, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("resolveCommand(%q) = %q, %v; want %q", tt.command, got, err, tt.want)
		}
	}
}

func TestEnvironment(t *testing.T) {
	t.Setenv("AIRLOCK_TOKEN", "canary")
	t.Setenv("LANG", "C.UTF-8")
	state := t.TempDir()
	c := newConn(&config.Server{ID: "s", Env: map[string]string{"LOG_LEVEL": "debug", "LANG": "fr_FR.UTF-8"}}, &Options{})
	env, err := c.environment(state, map[string]string{"API_KEY": "s3cr3t-value"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"HOME=" + filepath.Join(state, "run", "s", "home"), "TMPDIR=" + filepath.Join(state, "run", "s", "tmp"), "LOG_LEVEL=debug", "LANG=fr_FR.UTF-8", "API_KEY=s3cr3t-value"} {
		if !slices.Contains(env, want) {
			t.Errorf("environment %v lacks %s", env, want)
		}
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "AIRLOCK_TOKEN=") {
			t.Errorf("the host's variable leaked: %s", kv)
		}
	}
	if fi, err := os.Stat(filepath.Join(state, "run", "s", "home")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("runtime home: %v, %v; want a private directory", fi, err)
	}
}

func TestFirstVersion(t *testing.T) {
	for _, tt := range []struct {
		allowed []string
		want    string
	}{
		{[]string{"2025-11-25", "2026-07-28"}, "2026-07-28"},
		{[]string{"2025-06-18", "2025-11-25"}, "2025-11-25"},
		{[]string{"2024-11-05"}, "2024-11-05"},
	} {
		if got := firstVersion(tt.allowed); got != tt.want {
			t.Errorf("firstVersion(%v) = %s, want %s", tt.allowed, got, tt.want)
		}
	}
}

// TestPackageCaches: a server's package managers use the caches of the user
// running Airlock (the host's own setting, else the usual place in the
// user's home), never a relative path, and nothing else of the user's.
func TestPackageCaches(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want map[string]string
	}{
		{"the usual places", map[string]string{"HOME": "/home/u"}, map[string]string{
			"npm_config_cache":      "/home/u/.npm",
			"UV_CACHE_DIR":          "/home/u/.cache/uv",
			"UV_PYTHON_INSTALL_DIR": "/home/u/.local/share/uv/python",
			"PIP_CACHE_DIR":         "/home/u/.cache/pip",
			"GOCACHE":               "/home/u/.cache/go-build",
			"GOMODCACHE":            "/home/u/go/pkg/mod",
		}},
		{"XDG and GOPATH", map[string]string{"HOME": "/home/u", "XDG_CACHE_HOME": "/c", "XDG_DATA_HOME": "/d", "GOPATH": "/g1:/g2"}, map[string]string{
			"npm_config_cache":      "/home/u/.npm",
			"UV_CACHE_DIR":          "/c/uv",
			"UV_PYTHON_INSTALL_DIR": "/d/uv/python",
			"PIP_CACHE_DIR":         "/c/pip",
			"GOCACHE":               "/c/go-build",
			"GOMODCACHE":            "/g1/pkg/mod",
		}},
		{"the host's settings", map[string]string{"HOME": "/home/u", "NPM_CONFIG_CACHE": "/n", "UV_CACHE_DIR": "/uv/", "UV_PYTHON_INSTALL_DIR": "/py",
			"PIP_CACHE_DIR": "/pip", "GOCACHE": "/gc", "GOMODCACHE": "/gm"}, map[string]string{
			"npm_config_cache":      "/n",
			"UV_CACHE_DIR":          "/uv",
			"UV_PYTHON_INSTALL_DIR": "/py",
			"PIP_CACHE_DIR":         "/pip",
			"GOCACHE":               "/gc",
			"GOMODCACHE":            "/gm",
		}},
		{"relative paths are not used", map[string]string{"HOME": "home", "npm_config_cache": "cache", "XDG_CACHE_HOME": "c", "UV_CACHE_DIR": "/uv"},
			map[string]string{"UV_CACHE_DIR": "/uv"}},
		{"nothing known", nil, map[string]string{}},
	}
	for _, tt := range tests {
		got := packageCaches(func(k string) string { return tt.env[k] })
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: packageCaches mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestEnvironmentSharesCachesNotConfiguration: the server's environment
// points at the user's package caches, while its HOME stays private: the
// user's ~/.npmrc (registry tokens), npm's other settings and proxies stay
// with the host.
func TestEnvironmentSharesCachesNotConfiguration(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("npm_config_cache", "")
	t.Setenv("NPM_CONFIG_USERCONFIG", filepath.Join(home, ".npmrc"))
	t.Setenv("npm_config_registry", "https://registry.example.com/")
	t.Setenv("HTTPS_PROXY", "http://user:canary@proxy.example.com:3128")
	state := t.TempDir()
	c := newConn(&config.Server{ID: "s", Env: map[string]string{"PIP_CACHE_DIR": "/configured"}}, &Options{})
	env, err := c.environment(state, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"HOME=" + filepath.Join(state, "run", "s", "home"), "npm_config_cache=" + filepath.Join(home, ".npm"),
		"UV_CACHE_DIR=" + filepath.Join(home, ".cache", "uv"), "PIP_CACHE_DIR=/configured"} {
		if !slices.Contains(env, want) {
			t.Errorf("environment %v lacks %s", env, want)
		}
	}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.EqualFold(name, "npm_config_userconfig") || strings.EqualFold(name, "npm_config_registry") || strings.EqualFold(name, "https_proxy") {
			t.Errorf("the host's %s reached the server", kv)
		}
	}
}
