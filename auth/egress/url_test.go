package egress_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/auth/egress"
)

func TestValidateURL(t *testing.T) {
	hosts := []string{"mcp.example.com", "127.0.0.1", "localhost", "::1"}
	prod := &egress.URLOptions{AllowedHosts: hosts}
	dev := &egress.URLOptions{AllowedHosts: hosts, Development: true}
	tests := []struct {
		url  string
		opts *egress.URLOptions
		want string // substring of the error; "" for success
	}{
		{"https://mcp.example.com/mcp", prod, ""},
		{"https://MCP.example.com/mcp", prod, ""},
		{"https://mcp.example.com:8443/mcp", prod, ""},
		{"https://mcp.example.com", prod, ""},
		{"http://127.0.0.1:8765/callback", dev, ""},
		{"http://localhost:8080/mcp", dev, ""},
		{"http://[::1]:8080/mcp", dev, ""},

		{"http://127.0.0.1:8765/callback", prod, "must use https"},
		{"http://127.0.0.1/callback", dev, "must use https"},
		{"http://mcp.example.com:80/mcp", dev, "must use https"},
		{"ftp://mcp.example.com/x", prod, "must use https"},
		{"https://user:hunter2@mcp.example.com/mcp", prod, "user information"},
		{"https://mcp.example.com/mcp?token=x", prod, "query"},
		{"https://mcp.example.com/mcp?", prod, "query"},
		{"https://mcp.example.com/mcp#frag", prod, "fragment"},
		{"https://mcp.example.com/mcp#", prod, "fragment"},
		{"https://evil.example.com/mcp", prod, "not in allowed_hosts"},
		{"https://mcp.example.com.evil.net/mcp", prod, "not in allowed_hosts"},
		{"https://mcp.example.com:0/mcp", prod, "invalid port"},
		{"https://mcp.example.com:99999/mcp", prod, "invalid port"},
		{"https://mcp.example.com:/mcp", prod, "empty port"},
		{"https:mcp.example.com", prod, "absolute"},
		{"/mcp", prod, "must use https"},
		{"https://mcp.example.com/mcp", &egress.URLOptions{}, "allowed_hosts is empty"},
		{"https://mcp.example.com/%zz", prod, "cannot be parsed"},
	}
	for _, tt := range tests {
		err := egress.ValidateURL(tt.url, tt.opts)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("ValidateURL(%q) = %v, want nil", tt.url, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("ValidateURL(%q) = %v, want an error containing %q", tt.url, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ValidateURL(%q) leaks the password: %v", tt.url, err)
		}
	}
}

func TestIsLoopbackHost(t *testing.T) {
	tests := []struct {
		host string
		want bool
	}{
		{"localhost", true},
		{"LocalHost", true},
		{"127.0.0.1", true},
		{"127.1.2.3", true},
		{"::1", true},
		{"[::1]", true},
		{"::ffff:127.0.0.1", true},
		{"", false},
		{"localhost.example.com", false},
		{"10.0.0.1", false},
		{"::", false},
		{"127.0.0.1:80", false},
		{"mcp.example.com", false},
	}
	for _, tt := range tests {
		if got := egress.IsLoopbackHost(tt.host); got != tt.want {
			t.Errorf("IsLoopbackHost(%q) = %v, want %v", tt.host, got, tt.want)
		}
	}
}

// FuzzValidateURL: whatever ValidateURL accepts has the properties it
// promises.
func FuzzValidateURL(f *testing.F) {
	for _, s := range []string{
		"https://mcp.example.com/mcp", "http://127.0.0.1:8765/callback", "https://u:p@mcp.example.com/",
		"https://mcp.example.com/?", "http://localhost:1/", "https://mcp.example.com#", "https://[::1]:1/",
		"HTTPS://mcp.example.com/", "https://mcp.example.com\\@evil.com/",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	hosts := []string{"mcp.example.com", "127.0.0.1", "localhost", "::1"}
	f.Fuzz(func(t *testing.T, raw string, dev bool) {
		if egress.ValidateURL(raw, &egress.URLOptions{AllowedHosts: hosts, Development: dev}) != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("accepted an unparsable URL %q", raw)
		}
		if u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.Contains(raw, "#") {
			t.Fatalf("accepted %q with user information, a query or a fragment", raw)
		}
		allowed := false
		for _, h := range hosts {
			allowed = allowed || strings.EqualFold(h, u.Hostname())
		}
		if !allowed {
			t.Fatalf("accepted %q with host %q", raw, u.Hostname())
		}
		switch u.Scheme {
		case "https":
		case "http":
			if !dev || u.Port() == "" || !egress.IsLoopbackHost(u.Hostname()) {
				t.Fatalf("accepted plain http %q", raw)
			}
		default:
			t.Fatalf("accepted scheme %q", u.Scheme)
		}
	})
}
