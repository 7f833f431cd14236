package vfs

import (
	"fmt"
	"os"
	"runtime/debug"
	"syscall"
)

// mappedFile is a file written at its end through a shared mapping of it
// (see MapAppend). The wal.Writer that owns one serializes Write,
// Truncate and Close; Sync may run beside a Write, and touches only f.
//
// Invariants: size is the length written, and the file's length is
// len(m) (allocated, zeros past size) while mapped, or size while not
// (m nil: before the first Write, after Truncate, and for good once
// plain).
type mappedFile struct {
	f     *os.File
	m     []byte // the mapping of the file's first len(m) bytes
	size  int64  // where the next Write lands
	plain bool   // the file system refused fallocate or mmap: write(2) from here on
}

// The steps the file is allocated ahead in: doubling from the first to the
// largest, so that a small store's log stays small and a large one maps
// again once every few MiB.
const (
	mapFirstStep = 64 << 10
	mapMaxStep   = 4 << 20
)

// mapOS is MapAppend of a file of the operating system's.
func mapOS(f *os.File, size int64) File { return &mappedFile{f: f, size: size} }

func (m *mappedFile) Name() string { return m.f.Name() }

func (m *mappedFile) Write(b []byte) (int, error) {
	if m.plain {
		return m.f.Write(b)
	}
	if int64(len(b)) > int64(len(m.m))-m.size {
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
	copy(m.m[m.size:], b)
	return nil
}

// grow allocates and maps the file to hold need more bytes past size, and
// a step more. If the file system refuses, the file goes plain.
func (m *mappedFile) grow(need int64) error {
	have := m.size // the file's length
	if m.m != nil {
		have = int64(len(m.m))
		err := syscall.Munmap(m.m)
		m.m = nil
		if err != nil {
			m.f.Truncate(m.size)
			return fmt.Errorf("unmapping %s: %w", m.f.Name(), err)
		}
	}
	step := min(max(have, mapFirstStep), mapMaxStep)
	n := (m.size + need + step + mapFirstStep - 1) &^ (mapFirstStep - 1)
	if int64(int(n)) != n { // beyond this platform's address space
		return m.goPlain()
	}
	fd := int(m.f.Fd())
	if n > have {
		if err := syscall.Fallocate(fd, 0, have, n-have); err != nil {
			return m.goPlain()
		}
	}
	b, err := syscall.Mmap(fd, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return m.goPlain()
	}
	m.m = b
	return nil
}

// goPlain cuts the file back to what was written and writes with write(2)
// from here on: the file is open to append, so the next write lands at size.
func (m *mappedFile) goPlain() error {
	m.plain = true
	return m.f.Truncate(m.size)
}

// unmap lets go of the mapping, if any, and cuts the file back to what was
// written.
func (m *mappedFile) unmap() error {
	if m.m == nil {
		return nil
	}
	err := syscall.Munmap(m.m)
	m.m = nil
	if err != nil {
		return fmt.Errorf("unmapping %s: %w", m.f.Name(), err)
	}
	return m.f.Truncate(m.size)
}

func (m *mappedFile) Sync() error { return m.f.Sync() }

func (m *mappedFile) Truncate(size int64) error {
	if err := m.unmap(); err != nil {
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
