package testenv

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// NoFileHolds fails the test for each file or directory under dir whose
// name, or whose content for a regular file, holds one of secrets byte
// for byte: a token, a key or a canary written down where it outlives the
// process. The failure names the file, never the secret. It returns how
// many files it read, so that a caller that expects files there can tell
// a scan of nothing, which proves nothing.
func NoFileHolds(t testing.TB, dir string, secrets ...string) (files int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if holdsAny(rel, secrets) {
			t.Errorf("the name %s holds a secret", rel)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if holdsAny(string(b), secrets) {
			t.Errorf("%s holds a secret in the clear", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// holdsAny reports whether s holds one of secrets.
func holdsAny(s string, secrets []string) bool {
	for _, secret := range secrets {
		if strings.Contains(s, secret) {
			return true
		}
	}
	return false
}
