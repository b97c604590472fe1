package secrets

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"fmt"
)

// A Vault keeps sealed values for a [SealedStore]: a table of a database
// that several processes (replicas, on several machines) share. It never
// sees a secret: names are hashes of the keys, values are sealed.
type Vault interface {
	// Load returns the sealed value stored under name; found is false if
	// there is none.
	Load(ctx context.Context, name string) (sealed []byte, found bool, err error)
	// Save stores sealed under name, replacing any previous value, at
	// once for every process.
	Save(ctx context.Context, name string, sealed []byte) error
	// Remove deletes name; removing a missing name is not an error.
	Remove(ctx context.Context, name string) error
	// Lock takes an exclusive lock named name, across every process that
	// shares the vault, waiting until it is free or ctx ends; unlock
	// releases it. A process that dies loses its locks.
	Lock(ctx context.Context, name string) (unlock func(), err error)
}

// SealedStore is a [Store] (and a [Locker]) whose values are sealed with
// AES-256-GCM, as [FileStore]'s are, before they reach a [Vault]: whoever
// can read the vault's database reads no secret, and cannot move a sealed
// value to another key. Every process sharing the vault must be given the
// same key (FileOptions: the environment variable, or a key file copied to
// each machine).
type SealedStore struct {
	vault Vault
	aead  cipher.AEAD
}

var (
	_ Store  = (*SealedStore)(nil)
	_ Locker = (*SealedStore)(nil)
)

// OpenSealedStore returns a store over v, with the key from the
// environment or the key file as [OpenFileStore] takes it.
func OpenSealedStore(v Vault, opts *FileOptions) (*SealedStore, error) {
	aead, err := openAEAD(opts)
	if err != nil {
		return nil, err
	}
	return &SealedStore{vault: v, aead: aead}, nil
}

// openAEAD loads the key opts names and returns its cipher.
func openAEAD(opts *FileOptions) (cipher.AEAD, error) {
	var o FileOptions
	if opts != nil {
		o = *opts
	}
	if o.KeyEnv == "" {
		o.KeyEnv = DefaultKeyEnv
	}
	if o.Getenv == nil {
		o.Getenv = osGetenv
	}
	key, err := loadKey(o)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Get returns the value under key.
func (s *SealedStore) Get(ctx context.Context, key string) ([]byte, error) {
	name := secretName(key)
	data, found, err := s.vault.Load(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("read a secret: %w", err)
	}
	if !found {
		return nil, ErrNotFound
	}
	return unseal(s.aead, name, data)
}

// Put stores value under key.
func (s *SealedStore) Put(ctx context.Context, key string, value []byte) error {
	name := secretName(key)
	if err := s.vault.Save(ctx, name, seal(s.aead, name, value)); err != nil {
		return fmt.Errorf("write a secret: %w", err)
	}
	return nil
}

// Delete removes key.
func (s *SealedStore) Delete(ctx context.Context, key string) error {
	if err := s.vault.Remove(ctx, secretName(key)); err != nil {
		return fmt.Errorf("delete a secret: %w", err)
	}
	return nil
}

// Lock takes the vault's lock named for key.
func (s *SealedStore) Lock(ctx context.Context, key string) (func(), error) {
	unlock, err := s.vault.Lock(ctx, secretName(key))
	if err != nil {
		return nil, fmt.Errorf("take a lock: %w", err)
	}
	return unlock, nil
}

// seal seals value for the secret named name: the name is authenticated,
// so that a sealed value cannot be moved to another key.
func seal(aead cipher.AEAD, name string, value []byte) []byte {
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce)
	return aead.Seal(append([]byte(fileMagic), nonce...), nonce, value, []byte(fileMagic+name))
}

// unseal opens what seal sealed for name.
func unseal(aead cipher.AEAD, name string, data []byte) ([]byte, error) {
	ns := aead.NonceSize()
	if len(data) < len(fileMagic)+ns || string(data[:len(fileMagic)]) != fileMagic {
		return nil, ErrDecrypt
	}
	nonce := data[len(fileMagic) : len(fileMagic)+ns]
	plain, err := aead.Open(nil, nonce, data[len(fileMagic)+ns:], []byte(fileMagic+name))
	if err != nil {
		return nil, ErrDecrypt
	}
	return plain, nil
}
