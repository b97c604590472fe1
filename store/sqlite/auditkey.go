package sqlite

import (
	"path/filepath"

	"github.com/airlockhq/airlock/store"
)

// keyFile is the name of the file, in the database's directory, that holds
// the audit trail's key (see store.LoadChainKey).
const keyFile = "audit.key"

// auditKey returns the audit trail's key, read from its file the first
// time. If there is no file, create makes one (mode 0600), and otherwise
// auditKey returns nil.
func (db *DB) auditKey(create bool) (store.ChainKey, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.key != nil {
		return db.key, nil
	}
	key, err := store.LoadChainKey(db.keyPath(), create)
	if err != nil {
		return nil, err
	}
	db.key = key
	return key, nil
}

// keyPath is the path of the audit trail's key file.
func (db *DB) keyPath() string { return filepath.Join(filepath.Dir(db.path), keyFile) }
