//go:build !unix

package workspace

import "os"

const openFlags = os.O_RDONLY

// linkCount reports 1: this platform's os.FileInfo does not carry a link
// count, so the hard-link rule is not enforced here.
func linkCount(os.FileInfo) uint64 { return 1 }
