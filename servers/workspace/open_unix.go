//go:build unix

package workspace

import (
	"os"
	"syscall"
)

// openFlags opens for reading without blocking on a FIFO and without
// acquiring a controlling terminal.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY

// linkCount reports the number of hard links to the file fi describes.
func linkCount(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
