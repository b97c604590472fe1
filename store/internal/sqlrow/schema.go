package sqlrow

import "fmt"

// NewerSchema refuses v, a database's schema version, if it is newer than
// known, the newest that this Airlock's migrations make: its tables may
// have changed in ways this Airlock would misread.
func NewerSchema(v, known int) error {
	if v > known {
		return fmt.Errorf("the database has schema version %d, newer than this airlock knows (%d): use a newer airlock", v, known)
	}
	return nil
}
