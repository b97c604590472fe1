package config

import (
	"regexp"
	"testing"
	"time"
)

func TestLaunchFingerprint(t *testing.T) {
	base := func() Server {
		return Server{
			ID: "fs", Transport: "stdio", Scope: "host", Command: "/usr/local/bin/fs-server",
			Args: []string{"--root", "/srv"}, Cwd: "/srv", Env: map[string]string{"LOG_LEVEL": "info"},
			SecretEnv: map[string]string{"API_KEY": "FS_API_KEY"}, AllowedTools: []string{"read_file"},
			RequestTimeout: 30 * time.Second,
		}
	}
	b := base()
	f0 := b.LaunchFingerprint()
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(f0) {
		t.Fatalf("LaunchFingerprint = %q, want sha256: and 64 hex digits", f0)
	}
	remote := func(s *Server) {
		s.Transport, s.Command, s.Args, s.Cwd, s.Env, s.SecretEnv = "http", "", nil, "", nil, nil
		s.URL, s.Resource = "https://mcp.example.com/mcp", "https://mcp.example.com"
	}
	for _, tt := range []struct {
		name   string
		change func(*Server)
		same   bool
	}{
		{"the command", func(s *Server) { s.Command = "/tmp/evil-server" }, false},
		{"an argument", func(s *Server) { s.Args[1] = "/" }, false},
		{"an added argument", func(s *Server) { s.Args = append(s.Args, "--allow-write") }, false},
		{"arguments split differently", func(s *Server) { s.Args = []string{"--root /srv"} }, false},
		{"the working directory", func(s *Server) { s.Cwd = "/srv/other" }, false},
		{"an env value", func(s *Server) { s.Env["LOG_LEVEL"] = "debug" }, false},
		{"an env name", func(s *Server) { s.Env["NODE_OPTIONS"] = "--require /tmp/x.js" }, false},
		{"a secret_env name", func(s *Server) { s.SecretEnv["TOKEN"] = "FS_TOKEN" }, false},
		{"a secret_env source", func(s *Server) { s.SecretEnv["API_KEY"] = "OTHER_KEY" }, false},
		{"the transport", func(s *Server) { s.Transport = "http" }, false},
		{"the CA file", func(s *Server) { s.CAFile = "/etc/evil-ca.pem" }, false},
		{"text moved between command and args", func(s *Server) { s.Command, s.Args = "/usr/local/bin/fs-server --root", []string{"/srv"} }, false},
		{"the allowed tools", func(s *Server) { s.AllowedTools = []string{"*"} }, true},
		{"a timeout", func(s *Server) { s.RequestTimeout = time.Minute }, true},
		{"the id", func(s *Server) { s.ID = "fs2" }, true}, // the digest has the server id on its own
		// What the host adds for where it runs (a replica's state
		// directory) is the same launch.
		{"the host's own env", func(s *Server) { s.HostEnv = map[string]string{"AIRLOCK_WORKSPACE_PROTECT": `["/var/lib/airlock-2"]`} }, true},
		{"no arguments", func(s *Server) { s.Args = nil }, false},
	} {
		s := base()
		tt.change(&s)
		if got := s.LaunchFingerprint(); (got == f0) != tt.same {
			t.Errorf("changing %s: fingerprint same = %t, want %t", tt.name, got == f0, tt.same)
		}
	}

	// Absent and empty lists and maps are the same launch.
	empty, absent := base(), base()
	empty.Args, empty.Env, empty.SecretEnv = []string{}, map[string]string{}, map[string]string{}
	absent.Args, absent.Env, absent.SecretEnv = nil, nil, nil
	if empty.LaunchFingerprint() != absent.LaunchFingerprint() {
		t.Error("empty and absent args and env give different fingerprints")
	}

	r1, r2 := base(), base()
	remote(&r1)
	remote(&r2)
	r2.URL = "https://mcp.example.com/other"
	if r1.LaunchFingerprint() == r2.LaunchFingerprint() {
		t.Error("two URLs give one fingerprint")
	}
	r2 = r1
	r2.Resource = "https://other.example.com"
	if r1.LaunchFingerprint() == r2.LaunchFingerprint() {
		t.Error("two resources give one fingerprint")
	}
}

func TestTarget(t *testing.T) {
	for _, tt := range []struct {
		srv  Server
		want string
	}{
		{Server{Command: "airlock", Args: []string{"server", "workspace", "--root", "."}}, "airlock server workspace --root ."},
		{Server{Command: "/opt/my server/bin", Args: []string{"--name", "", `a"b`, "x\u202ey"}},
			`"/opt/my server/bin" --name "" "a\"b" "x\u202ey"`},
		{Server{Command: "npx", Args: []string{"-y", "pkg@1.2.3"}, Env: map[string]string{"TOKEN": "s3cret"}}, "npx -y pkg@1.2.3"},
		{Server{Transport: "http", URL: "https://mcp.example.com/mcp?tenant=a&x=1"}, "https://mcp.example.com/mcp?tenant=a&x=1"},
	} {
		if got := tt.srv.Target(); got != tt.want {
			t.Errorf("Target() = %s, want %s", got, tt.want)
		}
	}
}
