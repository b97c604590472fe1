package sqlite

import (
	"os"
	"regexp"
)

// A writerLock is the lock a DB holds for its writer id while it lives: a
// file named for the id in the writers' directory, which the DB keeps
// open. How the file stands for a live writer depends on the system
// (writer_unix.go, writer_other.go).
type writerLock struct {
	id   string
	path string
	f    *os.File
}

// writerIDRE matches a writer id, and so the name of a writer's lock file.
var writerIDRE = regexp.MustCompile(`^[0-9a-f]{26}$`)
