//go:build unix

package workspace

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// TestOpenRegularFIFO opens a FIFO the way a call would if the file were
// swapped for one after the first check: the open must not wait for a
// writer, and the opened file must be refused.
func TestOpenRegularFIFO(t *testing.T) {
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := New(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	done := make(chan error, 1)
	go func() {
		f, err := s.openRegular("fifo", "fifo")
		if f != nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if got, want := errorText(err), `path "fifo": not a regular file`; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	case <-time.After(20 * time.Second):
		// Unblock the open so the goroutine can finish.
		if w, err := os.OpenFile(filepath.Join(root, "fifo"), os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		t.Fatal("opening a FIFO blocked")
	}
}

func errorText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestEscapeError(t *testing.T) {
	s, err := New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.escapeErr == nil {
		t.Fatal("escapeErr: got nil, want the error os.Root reports for escaping paths")
	}
	_, err = s.root.Open("../x")
	if !errors.Is(err, s.escapeErr) {
		t.Errorf("Open(../x): got %v, want it to match escapeErr", err)
	}
	_, err = s.root.Open("missing")
	if errors.Is(err, s.escapeErr) {
		t.Errorf("Open(missing): got %v matching escapeErr, want a different error", err)
	}
}

func TestResolveErrorLogs(t *testing.T) {
	var log strings.Builder
	root := t.TempDir()
	s, err := New(root, &Options{Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.readText("missing", "missing")
	if got, want := errorText(err), `path "missing": no such file`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// The operator's log keeps the detail the model does not see.
	if !strings.Contains(log.String(), "no such file or directory") {
		t.Errorf("log %q: want the underlying error", log.String())
	}
}

func TestFirstLines(t *testing.T) {
	tests := []struct {
		text          string
		limit         int
		want          string
		wantTruncated bool
	}{
		{"", 1, "", false},
		{"a", 1, "a", false},
		{"a\n", 1, "a", false},
		{"a\nb", 1, "a", true},
		{"a\r\nb\r\n", 2, "a\nb", false},
		{"a\r\nb\r\n", 5, "a\nb", false},
		{"a\n\nb", 2, "a\n", true},
		{"\n", 1, "", false},
		{"a\rb\n", 1, "a\rb", false},
		{"a\n\r\n", 2, "a\n", false},
	}
	for _, tt := range tests {
		got, truncated := firstLines(tt.text, tt.limit)
		if got != tt.want || truncated != tt.wantTruncated {
			t.Errorf("firstLines(%q, %d) = %q, %v; want %q, %v", tt.text, tt.limit, got, truncated, tt.want, tt.wantTruncated)
		}
	}
}

func TestLocalPath(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr string
	}{
		{in: "a.txt", want: "a.txt"},
		{in: "./a/./b/", want: "a/b"},
		{in: "a//b", want: "a/b"},
		{in: "..a", want: "..a"},
		{in: "a..", want: "a.."},
		{in: `a\..\b`, want: `a\..\b`},
		{in: "/", wantErr: errAbsolute.Error()},
		{in: "//x", wantErr: errAbsolute.Error()},
		{in: "../a", wantErr: `path "../a": outside the workspace`},
		{in: "a/../../b", wantErr: `path "a/../../b": outside the workspace`},
		{in: "a/..", wantErr: `path "a/..": ".." elements are not allowed; give a path without them`},
		{in: "", wantErr: errEmpty.Error()},
	}
	for _, tt := range tests {
		got, err := localPath(tt.in)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("localPath(%q): got %q, %v; want error %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("localPath(%q): got %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// FuzzLocalPath checks that every path localPath accepts stays inside the
// root lexically, and that its messages stay short and printable.
func FuzzLocalPath(f *testing.F) {
	for _, s := range []string{"a.txt", "../x", "/etc/passwd", "a/../b", "./a//b/", "..", ".", "", "a\x00b", `..\x`, "\xff/..", strings.Repeat("é", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		name, err := localPath(p)
		if err != nil {
			msg := err.Error()
			if !utf8.ValidString(msg) || len(msg) > 4*maxShownPath+200 {
				t.Errorf("localPath(%q): message %q is not short valid UTF-8", p, msg)
			}
			return
		}
		if !filepath.IsLocal(name) || filepath.IsAbs(name) {
			t.Errorf("localPath(%q) = %q: not local", p, name)
		}
		if name != filepath.Clean(name) {
			t.Errorf("localPath(%q) = %q: not clean", p, name)
		}
		for elem := range strings.SplitSeq(filepath.ToSlash(name), "/") {
			if elem == ".." {
				t.Errorf("localPath(%q) = %q: has a .. element", p, name)
			}
		}
	})
}

// FuzzFirstLines checks firstLines against a plain split of the text.
func FuzzFirstLines(f *testing.F) {
	f.Add("a\nb\r\nc", 2)
	f.Add("", 1)
	f.Add("\n\n\n", 3)
	f.Add("x\r", 1)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if limit < 1 || limit > maxLineLimit {
			return
		}
		lines := strings.SplitAfter(text, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		wantTruncated := len(lines) > limit
		if wantTruncated {
			lines = lines[:limit]
		}
		for i, l := range lines {
			lines[i] = strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
		}
		want := strings.Join(lines, "\n")
		got, truncated := firstLines(text, limit)
		if got != want || truncated != wantTruncated {
			t.Errorf("firstLines(%q, %d) = %q, %v; want %q, %v", text, limit, got, truncated, want, wantTruncated)
		}
	})
}
