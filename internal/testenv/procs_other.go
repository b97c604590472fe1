//go:build !linux

package testenv

import (
	"errors"
	"fmt"
)

// ProcsInGroup returns the running processes of process group pgid; it needs
// Linux's /proc and fails elsewhere.
func ProcsInGroup(pgid int) ([]int, error) {
	return nil, fmt.Errorf("listing process group %d: %w", pgid, errors.ErrUnsupported)
}
