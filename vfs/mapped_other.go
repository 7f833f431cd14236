//go:build !linux

package vfs

import "os"

// mapOS is MapAppend of a file of the operating system's: on this platform
// it goes on with write(2) (see mapped_linux.go for Linux).
func mapOS(f *os.File, size int64) File { return f }
