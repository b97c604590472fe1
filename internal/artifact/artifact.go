// Package artifact is the content-addressed store for what tools return that
// does not belong in a model's context: images, audio and embedded
// resources. The model gets an artifact's id, media type and size; the bytes
// stay on disk under the state directory.
//
// Only the root airlock package imports artifact.
package artifact

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

// An Artifact describes stored bytes.
type Artifact struct {
	ID        string `json:"id"`         // "art_" + hex prefix of the SHA-256 of the bytes
	MediaType string `json:"media_type"` // as the server declared it, or application/octet-stream
	Size      int64  `json:"size"`
	Path      string `json:"path"` // where the bytes are, for people and tools on the host; never shown to a model
}

// A Store keeps artifacts in a directory. It is safe for concurrent use by
// several goroutines and processes: files are written whole, under a
// temporary name, and renamed.
type Store struct {
	dir string
}

// Open returns a store in dir, creating it if needed.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the artifact directory: %w", err)
	}
	return &Store{dir: dir}, nil
}

var idRE = regexp.MustCompile(`^art_[0-9a-f]{32}$`)

var mediaTypeRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$`)

// Put stores data and returns its description. Storing the same bytes again
// returns the same id and writes nothing.
func (s *Store) Put(data []byte, mediaType string) (Artifact, error) {
	if !mediaTypeRE.MatchString(mediaType) {
		// A server's declared type is untrusted text that reaches a model
		// and file names: keep only well-formed types.
		mediaType = "application/octet-stream"
	}
	sum := sha256.Sum256(data)
	id := "art_" + hex.EncodeToString(sum[:])[:32]
	path := filepath.Join(s.dir, id)
	a := Artifact{ID: id, MediaType: mediaType, Size: int64(len(data)), Path: path}
	if _, err := os.Stat(path); err == nil {
		return a, s.writeMeta(a)
	}
	if err := writeAtomic(path, data); err != nil {
		return Artifact{}, fmt.Errorf("cannot store artifact: %w", err)
	}
	return a, s.writeMeta(a)
}

// Get returns the description of a stored artifact.
func (s *Store) Get(id string) (Artifact, error) {
	if !idRE.MatchString(id) {
		return Artifact{}, fmt.Errorf("%q is not an artifact id", id)
	}
	b, err := os.ReadFile(filepath.Join(s.dir, id+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return Artifact{}, fmt.Errorf("no artifact %s", id)
	}
	if err != nil {
		return Artifact{}, err
	}
	var a Artifact
	if err := json.Unmarshal(b, &a); err != nil {
		return Artifact{}, fmt.Errorf("artifact %s: damaged description: %v", id, err)
	}
	a.ID, a.Path = id, filepath.Join(s.dir, id)
	return a, nil
}

func (s *Store) writeMeta(a Artifact) error {
	meta := struct {
		MediaType string `json:"media_type"`
		Size      int64  `json:"size"`
	}{a.MediaType, a.Size}
	b, _ := json.Marshal(meta)
	if err := writeAtomic(filepath.Join(s.dir, a.ID+".json"), b); err != nil {
		return fmt.Errorf("cannot store artifact description: %w", err)
	}
	return nil
}

func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
