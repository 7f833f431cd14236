//go:build !unix

package vfs

import (
	"errors"
	"os"
)

// lockFile creates the file exclusively, where the operating system offers
// no advisory lock this package uses: a crash leaves the file behind, and
// it must then be removed by hand.
func lockFile(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, ErrLocked
	}
	return f, err
}
