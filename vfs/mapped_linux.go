package vfs

import (
	"fmt"
	"os"
	"runtime/debug"
	"syscall"
)

// mappedFile is a file written at its end through a shared mapping of its
// last few MiB (see MapAppend). The wal.Writer that owns one serializes
// Write, Truncate and Close; Sync may run beside a Write, and touches only
// f.
//
// Invariants: size is the length written. While mapped (m not nil), m
// maps the file from base, a multiple of the page size at or below size,
// to its end, and the file's length, base+len(m), is a multiple of
// RoomAlign, allocated, with zeros past size. While not (before the first
// Write, after Truncate, and for good once plain), the file's length is
// size.
type mappedFile struct {
	f     *os.File
	m     []byte // the mapping of the file from base to its end
	base  int64
	size  int64 // where the next Write lands
	step  int64 // the room the next growth allocates past what it needs
	plain bool  // the file system refused fallocate or mmap: write(2) from here on
}

// mapMaxStep is the most room a growth allocates past what it needs: the
// room doubles from RoomAlign to it, so that a small store's log stays
// small and a large one maps again once every few MiB, and the process
// holds at most a few MiB of the log's pages mapped.
const mapMaxStep = 4 << 20

// The system calls a growth makes, as variables so that a test can make
// the file system refuse them.
var (
	fallocate = syscall.Fallocate
	mmap      = syscall.Mmap
)

// mapOS is MapAppend of a file of the operating system's.
func mapOS(f *os.File, size int64) File {
	return &mappedFile{f: f, size: size, step: RoomAlign}
}

func (m *mappedFile) Name() string { return m.f.Name() }

func (m *mappedFile) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if m.plain {
		return m.f.Write(b)
	}
	if m.m == nil || int64(len(b)) > m.base+int64(len(m.m))-m.size {
		if err := m.grow(int64(len(b))); err != nil {
			return 0, err
		}
		if m.plain {
			return m.f.Write(b)
		}
	}
	if err := m.copyIn(b); err != nil {
		return 0, err
	}
	m.size += int64(len(b))
	return len(b), nil
}

// copyIn copies b to the mapping at size, turning a fault into an error.
func (m *mappedFile) copyIn(b []byte) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("writing %s through its mapping: %v", m.f.Name(), r)
		}
	}()
	copy(m.m[m.size-m.base:], b)
	return nil
}

// grow allocates the file to hold need more bytes past size, and room
// past them, and maps it from the page holding size. If the file system
// refuses, the file goes plain.
func (m *mappedFile) grow(need int64) error {
	have := m.size // the file's length
	if m.m != nil {
		have = m.base + int64(len(m.m))
	}
	if err := m.munmap(); err != nil {
		return err
	}
	base := m.size &^ int64(os.Getpagesize()-1)
	n := (m.size + need + m.step + RoomAlign - 1) &^ (RoomAlign - 1)
	m.step = min(2*m.step, mapMaxStep)
	if int64(int(n-base)) != n-base { // beyond this platform's address space
		return m.goPlain()
	}
	fd := int(m.f.Fd())
	if n > have {
		if err := fallocate(fd, 0, have, n-have); err != nil {
			return m.goPlain()
		}
	}
	b, err := mmap(fd, base, int(n-base), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return m.goPlain()
	}
	m.m, m.base = b, base
	return nil
}

// goPlain cuts the file back to what was written and writes with write(2)
// from here on: the file is open to append, so the next write lands at size.
func (m *mappedFile) goPlain() error {
	m.plain = true
	return m.f.Truncate(m.size)
}

// munmap lets go of the mapping, if any; the file keeps its room, unless
// munmap fails, when it is cut back to what was written.
func (m *mappedFile) munmap() error {
	if m.m == nil {
		return nil
	}
	err := syscall.Munmap(m.m)
	m.m = nil
	if err != nil {
		m.f.Truncate(m.size)
		return fmt.Errorf("unmapping %s: %w", m.f.Name(), err)
	}
	return nil
}

// unmap lets go of the mapping, if any, and cuts the file back to what was
// written.
func (m *mappedFile) unmap() error {
	if m.m == nil {
		return nil
	}
	if err := m.munmap(); err != nil {
		return err
	}
	return m.f.Truncate(m.size)
}

func (m *mappedFile) Sync() error { return m.f.Sync() }

func (m *mappedFile) Truncate(size int64) error {
	if err := m.munmap(); err != nil {
		return err
	}
	m.size = size
	return m.f.Truncate(size)
}

func (m *mappedFile) Close() error {
	err := m.unmap()
	if cerr := m.f.Close(); err == nil {
		err = cerr
	}
	return err
}
