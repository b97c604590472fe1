package secrets

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// DefaultKeyEnv is the environment variable that holds the store's key
// (32 bytes, base64) when [FileOptions.KeyEnv] is empty.
const DefaultKeyEnv = "AIRLOCK_SECRET_KEY"

// FileOptions configures [OpenFileStore]. A nil *FileOptions, and the zero
// value of every field, give the defaults.
type FileOptions struct {
	// KeyEnv names the environment variable that may hold the key, base64
	// encoded. When it is set and not empty, the key file is not used.
	// Empty means DefaultKeyEnv.
	KeyEnv string

	// KeyFile is the file that holds the key (base64), created with mode
	// 0600 if it does not exist. A key file that group or others may read
	// or write is refused. Empty means "airlock/secret.key" in the user's
	// configuration directory, so that the key does not sit beside the
	// secrets it protects.
	KeyFile string

	// Getenv reads the environment. Nil means os.Getenv.
	Getenv func(string) string
}

// FileStore is the default [Store]: one AES-256-GCM sealed file per key in a
// directory. It is safe for concurrent use, also by several processes.
type FileStore struct {
	dir  string
	aead cipher.AEAD
}

var _ Store = (*FileStore)(nil)

// ErrDecrypt is returned by Get for a file that does not open with the
// store's key: the key is wrong, or the file was altered or moved.
var ErrDecrypt = errors.New("secret cannot be decrypted: the secret key is not the one it was stored with, or the file was altered")

const (
	keySize    = 32
	fileMagic  = "ALS1"
	nameDomain = "airlock-secret-name-v1\x00"
)

// OpenFileStore opens (creating it, mode 0700, if needed) the store in dir
// with the key from the environment or the key file.
func OpenFileStore(dir string, opts *FileOptions) (*FileStore, error) {
	if dir == "" {
		return nil, errors.New("the secret store needs a directory")
	}
	aead, err := openAEAD(opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the secret store directory: %w", err)
	}
	return &FileStore{dir: dir, aead: aead}, nil
}

func loadKey(o FileOptions) ([]byte, error) {
	if v := o.Getenv(o.KeyEnv); v != "" {
		key, err := decodeKey(v)
		if err != nil {
			return nil, fmt.Errorf("environment variable %s must hold %d random bytes in base64", o.KeyEnv, keySize)
		}
		return key, nil
	}
	path := o.KeyFile
	if path == "" {
		cfg, err := os.UserConfigDir()
		if err != nil {
			return nil, fmt.Errorf("no secret key: set %s or a key file (%w)", o.KeyEnv, err)
		}
		path = filepath.Join(cfg, "airlock", "secret.key")
	}
	return keyFromFile(path)
}

func decodeKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(s); err == nil {
			if len(key) != keySize {
				return nil, errors.New("wrong key size")
			}
			return key, nil
		}
	}
	return nil, errors.New("not base64")
}

// keyFromFile reads the key file, creating it if it does not exist. Its name
// appears in errors without its directory.
func keyFromFile(path string) ([]byte, error) {
	name := filepath.Base(path)
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := createKeyFile(path); err != nil {
			return nil, fmt.Errorf("create the secret key file %s: %w", name, pathless(err))
		}
		info, err = os.Stat(path)
	}
	if err != nil {
		return nil, fmt.Errorf("secret key file %s: %w", name, pathless(err))
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("secret key file %s is not a regular file", name)
	}
	if runtime.GOOS != "windows" && info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("secret key file %s may be read or written by others (mode %04o); make it readable only by its owner (chmod 600)", name, info.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the secret key file %s: %w", name, pathless(err))
	}
	key, err := decodeKey(string(data))
	if err != nil {
		return nil, fmt.Errorf("secret key file %s must hold %d random bytes in base64", name, keySize)
	}
	return key, nil
}

// createKeyFile writes a new random key. The file appears complete or not
// at all (a hard link from a finished temporary file), and an existing key
// file is never replaced, so two processes starting at once agree.
func createKeyFile(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	key := make([]byte, keySize)
	rand.Read(key)
	tmp, err := os.CreateTemp(dir, ".secret-key-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.WriteString(base64.StdEncoding.EncodeToString(key) + "\n"); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(dir)
}

// fileName is the file that holds key: a hash, so that key names (which
// carry partition hashes, never identities, but still) neither appear on
// disk nor can climb out of the directory.
func (s *FileStore) fileName(key string) string { return secretName(key) }

// secretName is the name a secret is kept under, in a file store's
// directory or a vault: a hash of its key.
func secretName(key string) string {
	sum := sha256.Sum256([]byte(nameDomain + key))
	return hex.EncodeToString(sum[:])
}

// osGetenv reads the process's environment.
var osGetenv = os.Getenv

// Get returns the value under key.
func (s *FileStore) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name := s.fileName(key)
	data, err := os.ReadFile(filepath.Join(s.dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read a secret: %w", pathless(err))
	}
	return unseal(s.aead, name, data)
}

// Put stores value under key atomically: a new file is written and synced
// beside the old one, then renamed over it.
func (s *FileStore) Put(ctx context.Context, key string, value []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name := s.fileName(key)
	// The file name is authenticated, so a sealed value cannot be moved to
	// another key's file.
	sealed := seal(s.aead, name, value)
	tmp, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("write a secret: %w", pathless(err))
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(sealed)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(s.dir, name))
	}
	if err == nil {
		err = syncDir(s.dir)
	}
	if err != nil {
		return fmt.Errorf("write a secret: %w", pathless(err))
	}
	return nil
}

// pathless drops the file names from an error, so that messages do not
// show the host's paths.
func pathless(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
}

// Delete removes key.
func (s *FileStore) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := os.Remove(filepath.Join(s.dir, s.fileName(key)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete a secret: %w", pathless(err))
	}
	return syncDir(s.dir)
}

func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
