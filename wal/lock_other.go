//go:build !unix

package wal

import (
	"errors"
	"os"
	"path/filepath"
)

// ErrLocked is returned by Lock for a directory another open store holds.
var ErrLocked = errors.New("directory is locked by another store")

// Lock takes dir's lock by creating its LOCK file exclusively, where the
// operating system offers no advisory lock this package uses: a crash
// leaves the file behind, and it must then be removed by hand.
func Lock(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, ErrLocked
	}
	return f, err
}
