package postgres

import "context"

// Setting returns a run-time setting as the sessions of db's pool see it.
func (db *DB) Setting(ctx context.Context, name string) (string, error) {
	var s string
	err := db.pool.QueryRow(ctx, `SELECT current_setting($1)`, name).Scan(&s)
	return s, err
}

// LockHolders is the first key of the lease holders' locks.
const LockHolders = lockHolders
