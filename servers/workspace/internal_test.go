//go:build unix

package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
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
		f, _, err := s.openRegular("fifo", "fifo")
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

func TestPageLines(t *testing.T) {
	tests := []struct {
		text      string
		offset    int
		limit     int
		want      string
		wantTotal int
	}{
		{"", 0, 1, "", 0},
		{"", 1, 1, "", 0},
		{"a", 0, 1, "a", 1},
		{"a\n", 0, 1, "a", 1},
		{"a\nb", 0, 1, "a", 2},
		{"a\r\nb\r\n", 0, 2, "a\nb", 2},
		{"a\r\nb\r\n", 0, 5, "a\nb", 2},
		{"a\n\nb", 0, 2, "a\n", 3},
		{"\n", 0, 1, "", 1},
		{"a\rb\n", 0, 1, "a\rb", 1},
		{"a\n\r\n", 0, 2, "a\n", 2},
		{"1\n2\n3\n4\n5", 1, 2, "2\n3", 5},
		{"1\n2\n3\n4\n5", 4, 2, "5", 5},
		{"1\n2\n3\n4\n5", 5, 2, "", 5},
		{"1\n2\n3\n4\n5", 9, 2, "", 5},
		{"1\n\n3\n", 1, 1, "", 3},
	}
	for _, tt := range tests {
		got, total := pageLines(tt.text, tt.offset, tt.limit)
		if got != tt.want || total != tt.wantTotal {
			t.Errorf("pageLines(%q, %d, %d) = %q, %d; want %q, %d", tt.text, tt.offset, tt.limit, got, total, tt.want, tt.wantTotal)
		}
	}
}

func TestIsBinary(t *testing.T) {
	tests := []struct {
		data []byte
		want bool
	}{
		{nil, false},
		{[]byte("text\n"), false},
		{[]byte("a\x00b"), true},
		{append(bytes.Repeat([]byte("a"), binarySniffBytes-1), 0), true},
		{append(bytes.Repeat([]byte("a"), binarySniffBytes), 0), false},
		{[]byte("\xff\xfe"), false},
	}
	for _, tt := range tests {
		if got := isBinary(tt.data); got != tt.want {
			t.Errorf("isBinary(%d bytes ending %q) = %v, want %v", len(tt.data), tt.data[max(0, len(tt.data)-3):], got, tt.want)
		}
	}
}

func TestExcerpt(t *testing.T) {
	long := strings.Repeat("a", 1000)
	tests := []struct {
		name  string
		line  string
		start int
		want  string
	}{
		{"short", "hello world", 6, "hello world"},
		{"exactly the bound", strings.Repeat("x", maxMatchText), 0, strings.Repeat("x", maxMatchText)},
		{"invalid UTF-8 replaced", "caf\xe9", 0, "caf\uFFFD"},
		{"long, match at start", "MATCH" + long, 0, "MATCH" + strings.Repeat("a", maxMatchText-5) + "…"},
		{"long, match in the middle", long[:500] + "MATCH" + long[:500], 500, "…" + long[:maxMatchText/4] + "MATCH" + long[:maxMatchText-maxMatchText/4-5] + "…"},
		{"long, match at the end", long + "MATCH", 1000, "…" + long[:maxMatchText-5] + "MATCH"},
	}
	for _, tt := range tests {
		if got := excerpt([]byte(tt.line), tt.start); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// FuzzExcerpt checks that an excerpt of any line is valid UTF-8 within the
// bound and shows the start of the match.
func FuzzExcerpt(f *testing.F) {
	f.Add(strings.Repeat("é", 400), 300)
	f.Add("short", 0)
	f.Add(strings.Repeat("\xff", 700), 350)
	f.Add(strings.Repeat("✓", 200)+"needle"+strings.Repeat("✓", 200), 600)
	f.Fuzz(func(t *testing.T, line string, start int) {
		if start < 0 || start >= len(line) {
			return
		}
		got := excerpt([]byte(line), start)
		if !utf8.ValidString(got) {
			t.Errorf("excerpt(%q, %d) = %q: not valid UTF-8", line, start, got)
		}
		inner := strings.TrimSuffix(strings.TrimPrefix(got, "…"), "…")
		// Each invalid byte may grow into a three-byte U+FFFD.
		if len(inner) > 3*maxMatchText {
			t.Errorf("excerpt(%q, %d) has %d bytes, want at most %d", line, start, len(inner), 3*maxMatchText)
		}
		if len(line) <= maxMatchText || !utf8.ValidString(line) {
			return
		}
		// Enough of the match is shown to recognise it.
		r, _ := utf8.DecodeRuneInString(line[start:])
		if utf8.RuneStart(line[start]) && start+maxMatchText/2 < len(line) && !strings.Contains(got, line[start:start+utf8.RuneLen(r)]) {
			t.Errorf("excerpt(%q, %d) = %q: the match is not shown", line, start, got)
		}
	})
}

func TestMatcher(t *testing.T) {
	tests := []struct {
		pattern string
		regex   bool
		line    string
		want    int
		wantErr string
	}{
		{pattern: "b.d", line: "abcd", want: -1},
		{pattern: "b.d", line: "ab.d", want: 1},
		{pattern: "b.d", regex: true, line: "abcd", want: 1},
		{pattern: "^a", regex: true, line: "ba", want: -1},
		{pattern: "(?i)TODO", regex: true, line: "x todo", want: 2},
		{pattern: "é", line: "café", want: 3},
		{pattern: "(", regex: true, wantErr: "pattern is not a valid RE2 regular expression: missing closing ) in \"(\""},
		{pattern: `a(?=b)`, regex: true, wantErr: "pattern is not a valid RE2 regular expression: invalid or unsupported Perl syntax in \"(?=\""},
		{pattern: "a\nb", wantErr: errPatternNewline.Error()},
	}
	for _, tt := range tests {
		match, err := matcher(tt.pattern, tt.regex)
		if tt.wantErr != "" {
			if got := errorText(err); got != tt.wantErr {
				t.Errorf("matcher(%q, %v): got error %q, want %q", tt.pattern, tt.regex, got, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("matcher(%q, %v): %v", tt.pattern, tt.regex, err)
			continue
		}
		if got := match([]byte(tt.line)); got != tt.want {
			t.Errorf("matcher(%q, %v) on %q = %d, want %d", tt.pattern, tt.regex, tt.line, got, tt.want)
		}
	}
}

func TestInGit(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{".git", true},
		{".git/hooks/pre-commit", true},
		{"sub/.GIT/config", true},
		{".git./hooks", true},
		{"\u200d.git/config", true},
		{".gitignore", false},
		{"a.git/x", false},
		{"src/git/x", false},
	}
	for _, tt := range tests {
		if got := inGit(filepath.FromSlash(tt.name)); got != tt.want {
			t.Errorf("inGit(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestFoldName checks the spellings under which a file system may open a
// protected name.
func TestFoldName(t *testing.T) {
	tests := []struct{ in, want string }{
		{".airlock", ".airlock"},
		{".AirLock", ".airlock"},
		{"AIRLOCK.YAML", "airlock.yaml"},
		{"airlock.yaml.", "airlock.yaml"},
		{"airlock.yaml . ", "airlock.yaml"},
		{"airlock.yaml:stream", "airlock.yaml"},
		{"airlock.yaml::$DATA", "airlock.yaml"},
		{"\u200c.air\u200flock\ufeff", ".airlock"},
		{"\u202e.airlock", ".airlock"},
		{".airloc\u212a", ".airlock"},
		{"e\u0301tat", "\u00e9tat"},
		{"\u00c9TAT", "\u00e9tat"},
		{"\u017ftate", "state"},
		{"", ""},
		{"...", ""},
	}
	for _, tt := range tests {
		if got := foldName(tt.in); got != tt.want {
			t.Errorf("foldName(%+q) = %+q, want %+q", tt.in, got, tt.want)
		}
	}
	// The shortcut for plain ASCII agrees with the full folding.
	for _, in := range []string{"a.txt", "Makefile", "AIRLOCK.YML", "x_Y-z"} {
		if got, want := foldName(in), cases.Fold().String(norm.NFC.String(in)); got != want {
			t.Errorf("foldName(%q) = %q, want %q", in, got, want)
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

// FuzzPageLines checks pageLines against a plain split of the text.
func FuzzPageLines(f *testing.F) {
	f.Add("a\nb\r\nc", 0, 2)
	f.Add("a\nb\r\nc", 1, 2)
	f.Add("", 0, 1)
	f.Add("\n\n\n", 2, 3)
	f.Add("x\r", 0, 1)
	f.Fuzz(func(t *testing.T, text string, offset, limit int) {
		if limit < 1 || limit > maxLineLimit || offset < 0 || offset > 1<<20 {
			return
		}
		lines := strings.SplitAfter(text, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		wantTotal := len(lines)
		lines = lines[min(offset, len(lines)):min(offset+limit, len(lines))]
		for i, l := range lines {
			lines[i] = strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
		}
		want := strings.Join(lines, "\n")
		got, total := pageLines(text, offset, limit)
		if got != want || total != wantTotal {
			t.Errorf("pageLines(%q, %d, %d) = %q, %d; want %q, %d", text, offset, limit, got, total, want, wantTotal)
		}
	})
}

func TestSearchEntryBudget(t *testing.T) {
	root := t.TempDir()
	for i := range 5 {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("f%d", i)), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := New(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var all []searchMatch
	for i := range 5 {
		all = append(all, searchMatch{Path: fmt.Sprintf("f%d", i), Line: 1, Text: "x"})
	}
	tests := []struct {
		entries int
		want    searchTextOutput
	}{
		{5, searchTextOutput{Matches: all, FilesSearched: 5}},
		{4, searchTextOutput{
			Matches:   []searchMatch{},
			Truncated: true,
			Note:      "stopped after visiting 4 directory entries, the limit for one search; search a narrower path to see the rest",
		}},
	}
	for _, tt := range tests {
		s.maxEntries = tt.entries
		_, got, err := s.searchText(context.Background(), nil, searchTextInput{Pattern: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("maxEntries %d (-want +got):\n%s", tt.entries, diff)
		}
	}
}

// TestSearchReplacedDirectory checks that a directory whose name now leads
// somewhere other than what its parent listed, as after a swap for a link,
// is not searched.
func TestSearchReplacedDirectory(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"listed", "other"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, d, "f.txt"), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := New(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	listed, err := s.root.Lstat("listed")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		dir  string
		want int
	}{{"listed", 1}, {"other", 0}} {
		sr := &search{s: s, g: s.newGuard(), from: tt.dir, fromReal: tt.dir, match: func([]byte) int { return 0 }, out: searchTextOutput{Matches: []searchMatch{}}}
		if err := sr.dir(context.Background(), tt.dir, tt.dir, listed); err != nil {
			t.Fatal(err)
		}
		if got := sr.out.FilesSearched; got != tt.want {
			t.Errorf("%s searched as listed: got %d files searched, want %d", tt.dir, got, tt.want)
		}
	}
}

func TestSearchCancelled(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := New(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, p := range []string{".", "a.txt"} {
		if _, _, err := s.searchText(ctx, nil, searchTextInput{Pattern: "x", Path: p}); !errors.Is(err, context.Canceled) {
			t.Errorf("search %s after cancel: got %v, want context.Canceled", p, err)
		}
	}
}
