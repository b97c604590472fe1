package oauth_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/auth/oauth"
)

func TestCheckBrowserURL(t *testing.T) {
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://auth.example.com/authorize?client_id=a&state=b", true},
		{"http://127.0.0.1:9000/authorize?x=1", true},
		{"http://localhost:9000/authorize", true},
		{"http://auth.example.com/authorize", false},
		{"javascript:alert(1)", false},
		{"file:///etc/passwd", false},
		{"https://user:pw@auth.example.com/", false},
		{"--new-window=https://auth.example.com", false},
		{"https:///nohost", false},
	}
	for _, tt := range tests {
		if err := oauth.CheckBrowserURL(tt.url); (err == nil) != tt.ok {
			t.Errorf("CheckBrowserURL(%q) = %v, want ok=%v", tt.url, err, tt.ok)
		}
	}
}

// TestOpenerNoShell: the URL reaches the browser as one argument, and shell
// syntax in it is not run.
func TestOpenerNoShell(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "args")
	pwned := filepath.Join(dir, "pwned")
	script := filepath.Join(dir, "browser")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > "+out+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BROWSER", script+" --flag:other-browser")
	authURL := "https://auth.example.com/authorize?state=$(touch%20" + pwned + ")&x=`touch " + pwned + "`;touch " + pwned
	var printed strings.Builder
	if err := oauth.Opener(&printed, false)(context.Background(), authURL); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(printed.String(), authURL) {
		t.Errorf("printed %q, want the URL", printed.String())
	}
	var got []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got, _ = os.ReadFile(out); len(got) > 0 {
			break
		}
	}
	if want := "--flag\n" + authURL + "\n"; string(got) != want {
		t.Errorf("browser got arguments %q, want %q", got, want)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Error("shell syntax in the URL was run")
	}

	// A URL that is not https is neither printed nor opened.
	printed.Reset()
	if err := oauth.Opener(&printed, true)(context.Background(), "file:///etc/passwd"); err == nil || printed.Len() != 0 {
		t.Errorf("Opener(file URL) = %v, printed %q", err, printed.String())
	}
}
