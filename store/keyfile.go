package store

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
	"sync"
	"sync/atomic"
)

// keyLen is a ChainKey's length in bytes, that of an HMAC-SHA256 sum.
const keyLen = 32

// LoadChainKey reads the audit trail's key from the file at path: the key
// in hex on one line. If there is no file, create makes one with a new
// random key (mode 0600) and otherwise LoadChainKey returns nil, nil; of
// several processes creating it at once, all get the key of the one that
// made it first. A key that others may read or write is refused: whoever
// reads it can forge the chain.
//
// The key lives in a file rather than in the database, so that a copy of
// the database alone cannot be re-chained, and whoever can edit the
// database without the key cannot forge links. Errors name the file
// without its directory (store errors reach logs and people, never a
// model, but need no host paths either).
func LoadChainKey(path string, create bool) (ChainKey, error) {
	key, err := readKey(path)
	if errors.Is(err, fs.ErrNotExist) {
		if !create {
			return nil, nil
		}
		key, err = createKey(path)
	}
	return key, err
}

// readKey reads the key file.
func readKey(path string) (ChainKey, error) {
	name := filepath.Base(path)
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, keyError("cannot read", name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("the audit key %s is not a regular file", name)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("the audit key %s may be read or written by others (mode %04o): make it readable only by its owner (chmod 600)", name, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, keyError("cannot read", name, err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) != keyLen {
		return nil, fmt.Errorf("the audit key %s is malformed: it must hold %d bytes in hex", name, keyLen)
	}
	return key, nil
}

// createKey makes the key file with a new random key, or reads the one
// another process made first: the file appears whole, under its name, or
// not at all.
func createKey(path string) (ChainKey, error) {
	name := filepath.Base(path)
	key := make([]byte, keyLen)
	rand.Read(key) // never fails (crypto/rand panics instead)
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+name+"-*") // mode 0600
	if err != nil {
		return nil, keyError("cannot create", name, err)
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
		return nil, keyError("cannot create", name, err)
	}
	switch err := os.Link(f.Name(), path); {
	case errors.Is(err, fs.ErrExist):
		return readKey(path)
	case err != nil:
		return nil, keyError("cannot create", name, err)
	}
	// Events chained with the key must not outlive it in a power loss.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return key, nil
}

// keyError says what failed with the key file, naming it without its
// directory.
func keyError(what, name string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	return fmt.Errorf("%s the audit key %s: %w", what, name, err)
}

// A ChainMark is the mark, beside the audit trail's key, that the trail
// was chained: Set leaves it once an append has made the chain's head. A
// trail with the mark and neither a head nor a chained event had its
// chain stripped, or its chained events deleted with the head: the
// database alone cannot tell that from a new trail. The zero value is
// ready to use; its methods take the key file's path.
type ChainMark struct {
	once sync.Once
	set  atomic.Bool
}

// Begun reports whether the trail was chained before: the mark is there.
func (m *ChainMark) Begun(keyPath string) bool {
	if m.set.Load() {
		return true
	}
	_, err := os.Lstat(chainMark(keyPath))
	return err == nil
}

// Set leaves the mark, trying once in the process's life: a mark that
// cannot be made (a key on a read-only mount) leaves the trail as it was,
// where a stripped chain looks like a new one.
func (m *ChainMark) Set(keyPath string) {
	m.once.Do(func() {
		if f, err := os.OpenFile(chainMark(keyPath), os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			f.Close()
			m.set.Store(true)
		}
	})
}

// chainMark is the mark's path: the key file's, with ".chained".
func chainMark(keyPath string) string { return keyPath + ".chained" }
