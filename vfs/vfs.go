// Package vfs is the file system a store on a directory writes through: the
// operating system's (OS), or Mem, an in-memory one that can crash as a
// power cut would — what was not synced may or may not survive — and fail
// on demand. It holds
// only what the log, snapshot and segment formats need: create, append,
// truncate, sync, rename, remove, list, read (whole, or at an offset),
// size, lock.
//
// Names are slash-separated paths as the caller builds them with
// path/filepath; a file's directory is filepath.Dir of its name.
package vfs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// ErrLocked is returned by Lock for a directory another holder has locked.
var ErrLocked = errors.New("directory is locked by another store")

// File is an open file: written at its end, synced, truncated.
type File interface {
	io.Writer
	// Sync makes everything written so far durable (fsync).
	Sync() error
	// Truncate cuts the file to size; the next Write lands at the new end.
	Truncate(size int64) error
	Close() error
	Name() string
}

// ReaderAt is a file open for reading at any offset (pread), as sealed
// history is read: a block where a question needs it.
type ReaderAt interface {
	io.ReaderAt
	io.Closer
	// Size returns the file's size when it was opened.
	Size() int64
}

// FS is a file system.
type FS interface {
	// Create creates the file, or empties it if it exists, for writing.
	Create(name string) (File, error)
	// OpenAppend opens an existing file; writes land at its end.
	OpenAppend(name string) (File, error)
	// Size returns the file's size in bytes.
	Size(name string) (int64, error)
	// OpenRead opens a file for reading from its start.
	OpenRead(name string) (io.ReadCloser, error)
	// OpenReaderAt opens a file for reading at any offset.
	OpenReaderAt(name string) (ReaderAt, error)
	// List returns the names (not paths) of the files in dir, sorted.
	List(dir string) ([]string, error)
	Rename(oldname, newname string) error
	Remove(name string) error
	MkdirAll(dir string) error
	// SyncDir makes dir's entries (files and directories created, renamed,
	// removed) durable.
	SyncDir(dir string) error
	// Lock takes dir's exclusive advisory lock, or returns ErrLocked if
	// another holder has it. Closing the result releases it.
	Lock(dir string) (io.Closer, error)
}

// OS is the operating system's file system.
var OS FS = osFS{}

type osFS struct{}

func (osFS) Create(name string) (File, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
}

func (osFS) OpenAppend(name string) (File, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_APPEND, 0)
}

func (osFS) Size(name string) (int64, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (osFS) OpenRead(name string) (io.ReadCloser, error) { return os.Open(name) }

func (osFS) OpenReaderAt(name string) (ReaderAt, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return osReaderAt{f, fi.Size()}, nil
}

// osReaderAt is an *os.File, whose ReadAt is pread(2), with its size.
type osReaderAt struct {
	*os.File
	size int64
}

func (r osReaderAt) Size() int64 { return r.size }

func (osFS) List(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(des))
	for _, de := range des {
		if de.Type().IsRegular() {
			names = append(names, de.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }
func (osFS) Remove(name string) error             { return os.Remove(name) }
func (osFS) MkdirAll(dir string) error            { return os.MkdirAll(dir, 0o755) }

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (osFS) Lock(dir string) (io.Closer, error) {
	return lockFile(filepath.Join(dir, "LOCK"))
}

// RoomAlign is what the length of a file written through MapAppend is a
// multiple of while it has room allocated past its bytes: a reader of a
// file of any other length knows it has none.
const RoomAlign = 64 << 10

// MapAppend returns f, a file of size bytes opened by OS to append to (Create
// or OpenAppend), as a File whose Write copies into a shared mapping of
// the file instead of calling write(2). The bytes land in the same pages of
// the operating system's cache that write(2) would have filled: they are in
// its hands when Write returns, a crash of the process loses none of them,
// and Sync (fsync, which writes back a file's pages however they were
// dirtied) makes them durable as before. What it saves is a system call
// per write.
//
// The file is allocated ahead of the writes with fallocate, to a multiple
// of RoomAlign, so that a write through the mapping never faults for want
// of space; only the last few MiB are mapped. Until Truncate or Close cuts
// it back to what was written, the file is longer than that, and zeros
// follow the last write: a crash leaves them, and a reader must take a
// run of zeros at the end of a file whose length is a multiple of
// RoomAlign for its end (wal.Replay does). If the file system refuses
// fallocate or mmap, the file goes on with write(2). A fault while
// copying (an I/O error reading a page in) is an error, not a crash.
//
// A Mem file is returned as it is, marked so that a crash of its Mem
// (Crash, CrashAfter) may leave such zeros after its bytes, as a crash of
// a mapped file does, until a Truncate of it is synced. On platforms
// other than Linux an OS file is returned as it is too, and goes on with
// write(2).
func MapAppend(f File, size int64) File {
	switch f := f.(type) {
	case *os.File:
		return mapOS(f, size)
	case *memFile:
		f.mapped = true
	}
	return f
}
