package main

import (
	"bufio"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReadLine: lines come without their ends (\n or \r\n), the last one
// without an end too; a line longer than the bound is read to its end and
// passed over, and the next line is read as usual.
func TestReadLine(t *testing.T) {
	type got struct {
		Text string
		Long bool
	}
	for _, tt := range []struct {
		in   string
		want []got
	}{
		{"a\nbb\r\n\nlast", []got{{"a", false}, {"bb", false}, {"", false}, {"last", false}}},
		{"12345\n123456\r\n1234567\nok\n", []got{{"12345", false}, {"123456", false}, {"", true}, {"ok", false}}},
		{strings.Repeat("x", 100) + "\nok", []got{{"", true}, {"ok", false}}},
		{strings.Repeat("x", 100), []got{{"", true}}},
		{"", nil},
		{"\r\n", []got{{"", false}}},
	} {
		br := bufio.NewReaderSize(strings.NewReader(tt.in), 16)
		var lines []got
		for {
			text, long, err := readLine(br, 6)
			if long || text != nil {
				lines = append(lines, got{string(text), long})
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%q: %v", tt.in, err)
			}
		}
		if diff := cmp.Diff(tt.want, lines); diff != "" {
			t.Errorf("%q: lines (-want +got):\n%s", tt.in, diff)
		}
	}
}

// TestShellLineTooLong: a line longer than 64 MiB gets an error line that
// says so, and the shell goes on with the next one.
func TestShellLineTooLong(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "airlock.yaml"), testServerYAML(t, `["*"]`))
	input := `{"id":"huge","cmd":"call","name":"w__greet","args":{"name":"` + strings.Repeat("x", maxShellLine) + "\"}}\n" +
		`{"id":"after","cmd":"turn"}` + "\n"
	r := runCLI(t, dir, input, "shell", "--json").want(t, 0)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("stdout has %d lines, want 2:\n%.2000s", len(lines), r.stdout)
	}
	if first := decode(t, lines[0]); first["id"] != nil || !strings.Contains(first["error"].(string), "more than 64 MiB") {
		t.Errorf("the long line's answer: %v, want an error that says the bound", first)
	}
	if second := decode(t, lines[1]); second["id"] != "after" || second["snapshot"] == nil {
		t.Errorf("the next line's answer: %v, want the turn", second)
	}
}
