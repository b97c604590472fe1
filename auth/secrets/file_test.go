package secrets_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/auth/secrets"
	"github.com/airlockhq/airlock/internal/testenv"
)

func noEnv(string) string { return "" }

func open(t *testing.T, dir, keyFile string) *secrets.FileStore {
	t.Helper()
	s, err := secrets.OpenFileStore(dir, &secrets.FileOptions{KeyFile: keyFile, Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	s := open(t, filepath.Join(tmp, "store"), filepath.Join(tmp, "keys", "secret.key"))

	if _, err := s.Get(ctx, "missing"); !errors.Is(err, secrets.ErrNotFound) {
		t.Fatalf("Get(missing) = %v, want ErrNotFound", err)
	}
	values := map[string][]byte{
		"oauth/abc/token":  []byte(`{"access_token":"x"}`),
		"oauth/abc/client": {},
		"../../etc/passwd": []byte("not a path"),
		"":                 []byte("empty key"),
	}
	for k, v := range values {
		if err := s.Put(ctx, k, v); err != nil {
			t.Fatalf("Put(%q): %v", k, err)
		}
	}
	for k, want := range values {
		got, err := s.Get(ctx, k)
		if err != nil {
			t.Fatalf("Get(%q): %v", k, err)
		}
		if diff := cmp.Diff(want, got, cmp.Comparer(bytes.Equal)); diff != "" {
			t.Errorf("Get(%q) mismatch (-want +got):\n%s", k, diff)
		}
	}
	// Overwrite, then delete (twice: deleting a missing key is fine).
	if err := s.Put(ctx, "oauth/abc/token", []byte("v2")); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, "oauth/abc/token"); string(got) != "v2" {
		t.Errorf("after overwrite Get = %q, want v2", got)
	}
	for range 2 {
		if err := s.Delete(ctx, "oauth/abc/token"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
	}
	if _, err := s.Get(ctx, "oauth/abc/token"); !errors.Is(err, secrets.ErrNotFound) {
		t.Errorf("Get after Delete = %v, want ErrNotFound", err)
	}

	// Nothing escaped the directory and no temporary files remain.
	entries, err := os.ReadDir(filepath.Join(tmp, "store"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(entries), len(values)-1; got != want {
		t.Errorf("files in the store = %d, want %d", got, want)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || len(e.Name()) != 64 {
			t.Errorf("unexpected file %q in the store", e.Name())
		}
		info, _ := e.Info()
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("file %s has mode %04o", e.Name(), perm)
		}
	}

	// A second store over the same directory and key reads the values.
	again := open(t, filepath.Join(tmp, "store"), filepath.Join(tmp, "keys", "secret.key"))
	if got, err := again.Get(ctx, "../../etc/passwd"); err != nil || string(got) != "not a path" {
		t.Errorf("reopened Get = %q, %v", got, err)
	}
}

func TestNoPlaintextOnDisk(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "store")
	s := open(t, dir, filepath.Join(tmp, "secret.key"))
	canary := "canary-" + rand.Text()
	key := "oauth/" + canary + "/token"
	if err := s.Put(ctx, key, []byte(`{"refresh_token":"`+canary+`"}`)); err != nil {
		t.Fatal(err)
	}
	testenv.NoFileHolds(t, dir, canary, base64.StdEncoding.EncodeToString([]byte(canary))[:12])
}

func TestWrongKey(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "store")
	s := open(t, dir, filepath.Join(tmp, "a.key"))
	if err := s.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	other := open(t, dir, filepath.Join(tmp, "b.key"))
	if _, err := other.Get(ctx, "k"); !errors.Is(err, secrets.ErrDecrypt) {
		t.Errorf("Get with another key = %v, want ErrDecrypt", err)
	}

	// A file moved to another key's name does not open either.
	if err := s.Put(ctx, "k2", []byte("v2")); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("entries = %d", len(entries))
	}
	a, _ := os.ReadFile(filepath.Join(dir, entries[0].Name()))
	os.WriteFile(filepath.Join(dir, entries[1].Name()), a, 0o600)
	_, err1 := s.Get(ctx, "k")
	_, err2 := s.Get(ctx, "k2")
	if !errors.Is(err1, secrets.ErrDecrypt) && !errors.Is(err2, secrets.ErrDecrypt) {
		t.Errorf("a moved file opened under another key: %v, %v", err1, err2)
	}
}

func TestKeyFileMode(t *testing.T) {
	tmp := t.TempDir()
	keyFile := filepath.Join(tmp, "secret.key")
	open(t, filepath.Join(tmp, "store"), keyFile) // creates the key file
	info, err := os.Stat(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := info.Mode().Perm(), os.FileMode(0o600); got != want {
		t.Errorf("key file mode = %04o, want %04o", got, want)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o660, 0o666, 0o700} {
		if err := os.Chmod(keyFile, mode); err != nil {
			t.Fatal(err)
		}
		_, err := secrets.OpenFileStore(filepath.Join(tmp, "store"), &secrets.FileOptions{KeyFile: keyFile, Getenv: noEnv})
		wantRefusal := mode&0o077 != 0
		if wantRefusal && (err == nil || !strings.Contains(err.Error(), "chmod 600")) {
			t.Errorf("mode %04o: OpenFileStore = %v, want a refusal naming chmod 600", mode, err)
		}
		if !wantRefusal && err != nil {
			t.Errorf("mode %04o: OpenFileStore = %v", mode, err)
		}
		if err != nil && strings.Contains(err.Error(), tmp) {
			t.Errorf("error shows the host path: %v", err)
		}
	}

	// A key file with garbage is refused.
	bad := filepath.Join(tmp, "bad.key")
	os.WriteFile(bad, []byte("short"), 0o600)
	if _, err := secrets.OpenFileStore(filepath.Join(tmp, "s2"), &secrets.FileOptions{KeyFile: bad, Getenv: noEnv}); err == nil {
		t.Error("a malformed key file was accepted")
	}
}

func TestKeyFromEnvironment(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	key := make([]byte, 32)
	rand.Read(key)
	env := map[string]string{"MY_KEY": base64.StdEncoding.EncodeToString(key)}
	opts := &secrets.FileOptions{KeyEnv: "MY_KEY", KeyFile: filepath.Join(tmp, "unused.key"), Getenv: func(k string) string { return env[k] }}
	s, err := secrets.OpenFileStore(filepath.Join(tmp, "store"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "unused.key")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a key file was created although the environment held the key")
	}
	// The same key from the environment opens it again.
	s2, _ := secrets.OpenFileStore(filepath.Join(tmp, "store"), opts)
	if got, err := s2.Get(ctx, "k"); err != nil || string(got) != "v" {
		t.Errorf("Get = %q, %v", got, err)
	}
	for _, bad := range []string{"not base64!", base64.StdEncoding.EncodeToString(key[:16])} {
		env["MY_KEY"] = bad
		_, err := secrets.OpenFileStore(filepath.Join(tmp, "store"), opts)
		if err == nil || strings.Contains(err.Error(), bad) {
			t.Errorf("env %q: OpenFileStore = %v, want a refusal that does not echo the value", bad, err)
		}
	}
}

func TestConcurrentPuts(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	s := open(t, filepath.Join(tmp, "store"), filepath.Join(tmp, "secret.key"))
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			v := []byte(fmt.Sprintf("value-%02d", i))
			if err := s.Put(ctx, "shared", v); err != nil {
				t.Error(err)
			}
			got, err := s.Get(ctx, "shared")
			if err != nil || !bytes.HasPrefix(got, []byte("value-")) || len(got) != 8 {
				t.Errorf("Get = %q, %v: a torn or failed read", got, err)
			}
		})
	}
	wg.Wait()
}

// TestConcurrentKeyCreation: processes starting at once agree on one key.
func TestConcurrentKeyCreation(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	keyFile := filepath.Join(tmp, "secret.key")
	stores := make([]*secrets.FileStore, 8)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() {
			s, err := secrets.OpenFileStore(filepath.Join(tmp, "store"), &secrets.FileOptions{KeyFile: keyFile, Getenv: noEnv})
			if err != nil {
				t.Error(err)
				return
			}
			stores[i] = s
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if err := stores[0].Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	for i, s := range stores {
		if _, err := s.Get(ctx, "k"); err != nil {
			t.Errorf("store %d: %v", i, err)
		}
	}
}

func TestLock(t *testing.T) {
	tmp := t.TempDir()
	key := filepath.Join(tmp, "secret.key")
	a := open(t, filepath.Join(tmp, "store"), key)
	b := open(t, filepath.Join(tmp, "store"), key) // another process's view
	ctx := context.Background()
	unlock, err := a.Lock(ctx, "oauth/p/token")
	if err != nil {
		t.Fatal(err)
	}
	// The same key is held; another key is not.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := b.Lock(short, "oauth/p/token"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Lock of a held key: %v, want it to wait until the context ends", err)
	}
	other, err := b.Lock(ctx, "oauth/q/token")
	if err != nil {
		t.Fatalf("Lock of another key: %v", err)
	}
	other()
	// Released, it can be taken again.
	unlock()
	again, err := b.Lock(ctx, "oauth/p/token")
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	again()
	// Lock files are named by a hash, like the secrets.
	entries, _ := os.ReadDir(filepath.Join(tmp, "store", "locks"))
	for _, e := range entries {
		if strings.Contains(e.Name(), "oauth") {
			t.Errorf("lock file %s names its key", e.Name())
		}
	}
	if len(entries) != 2 {
		t.Errorf("%d lock files, want 2", len(entries))
	}
}
