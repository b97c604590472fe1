package sqlite

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/airlockhq/airlock/store"
)

// keyFile is the name of the file, in the database's directory, that holds
// the audit trail's key: beside the database rather than in it, so that a
// copy of the database alone cannot be re-chained, and whoever can edit
// the database without the key cannot forge links.
const keyFile = "audit.key"

// keyLen is the key's length in bytes, that of an HMAC-SHA256 sum.
const keyLen = 32

// auditKey returns the audit trail's key, read from its file the first
// time. If there is no file, create makes one (mode 0600), and otherwise
// auditKey returns nil.
func (db *DB) auditKey(create bool) (store.ChainKey, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.key != nil {
		return db.key, nil
	}
	path := filepath.Join(filepath.Dir(db.path), keyFile)
	key, err := readKey(path)
	if errors.Is(err, fs.ErrNotExist) {
		if !create {
			return nil, nil
		}
		key, err = createKey(path)
	}
	if err != nil {
		return nil, err
	}
	db.key = key
	return key, nil
}

// readKey reads the key file. A key that others may read or write is
// refused: whoever reads it can forge the chain.
func readKey(path string) (store.ChainKey, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, keyError("cannot read", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("the audit key %s is not a regular file", keyFile)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("the audit key %s may be read or written by others (mode %04o): make it readable only by its owner (chmod 600)", keyFile, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, keyError("cannot read", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) != keyLen {
		return nil, fmt.Errorf("the audit key %s is malformed: it must hold %d bytes in hex", keyFile, keyLen)
	}
	return key, nil
}

// createKey makes the key file with a new random key, or reads the one
// another process made first: the file appears whole, under its name, or
// not at all.
func createKey(path string) (store.ChainKey, error) {
	key := make([]byte, keyLen)
	rand.Read(key) // never fails (crypto/rand panics instead)
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+keyFile+"-*") // mode 0600
	if err != nil {
		return nil, keyError("cannot create", err)
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(hex.EncodeToString(key) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, keyError("cannot create", err)
	}
	switch err := os.Link(f.Name(), path); {
	case errors.Is(err, fs.ErrExist):
		return readKey(path)
	case err != nil:
		return nil, keyError("cannot create", err)
	}
	// Events chained with the key must not outlive it in a power loss.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return key, nil
}

// keyError says what failed with the key file, naming it without its
// directory (store errors reach logs and people, never a model, but
// need no host paths either).
func keyError(what string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	return fmt.Errorf("%s the audit key %s: %w", what, keyFile, err)
}
