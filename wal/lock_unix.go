//go:build unix

package wal

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// ErrLocked is returned by Lock for a directory another open store holds.
var ErrLocked = errors.New("directory is locked by another store")

// Lock takes dir's advisory lock (a LOCK file, flock'd): one store per
// directory, whether the other is in this process or another. The lock
// goes with the returned file: close it to release.
func Lock(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, err
	}
	return f, nil
}
