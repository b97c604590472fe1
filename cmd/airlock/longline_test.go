package main

import (
	"path/filepath"
	"strings"
	"testing"
)

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
