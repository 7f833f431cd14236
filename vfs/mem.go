package vfs

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Op names an operation of Mem, for its fault hook.
type Op uint8

const (
	OpCreate Op = iota
	OpOpen
	OpWrite
	OpSync
	OpTruncate
	OpRename
	OpRemove
	OpSyncDir
)

func (o Op) String() string {
	return [...]string{"create", "open", "write", "sync", "truncate", "rename", "remove", "syncdir"}[o]
}

// Mem is an in-memory file system that remembers, for every file, what was
// last synced, and for every directory, which entries were last synced:
// Crash returns the file system a power cut would leave. Faults can be
// injected into any operation. Directories themselves are durable as soon
// as MkdirAll returns. Safe for concurrent use.
type Mem struct {
	// mu guards everything below and every inode's bytes.
	mu    sync.Mutex
	files map[string]*inode // the namespace as the process sees it
	// durable is the namespace a crash would leave: each directory's
	// entries as of its last SyncDir (or as Crash built it).
	durable map[string]*inode
	dirs    map[string]bool
	locked  map[string]bool
	fault   func(op Op, name string) error
}

// inode is a file's contents: what the process wrote, and what reached
// stable storage at its last sync.
type inode struct {
	data, synced []byte
}

// NewMem returns an empty in-memory file system.
func NewMem() *Mem {
	return &Mem{files: map[string]*inode{}, durable: map[string]*inode{}, dirs: map[string]bool{}, locked: map[string]bool{}}
}

// SetFault installs hook, called before every operation with its kind and
// file name; an error it returns fails the operation. A failed write first
// writes half of its bytes (a short write), as a full disk may. A nil hook
// removes it.
func (m *Mem) SetFault(hook func(op Op, name string) error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fault = hook
}

func (m *Mem) check(op Op, name string) error {
	if m.fault == nil {
		return nil
	}
	if err := m.fault(op, name); err != nil {
		return &fs.PathError{Op: op.String(), Path: name, Err: err}
	}
	return nil
}

// Crash returns what a power cut at this instant would leave: the entries
// each directory held at its last sync, each file with the bytes of its
// last sync. With rng non-nil, each file whose unsynced bytes extend what
// was synced also keeps a random prefix of them, as an operating system
// that wrote back part of its cache would. Locks do not survive.
func (m *Mem) Crash(rng *rand.Rand) *Mem {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem()
	maps.Copy(c.dirs, m.dirs)
	for name, ino := range m.durable {
		data := slices.Clone(ino.synced)
		if rng != nil && len(ino.data) > len(ino.synced) && string(ino.data[:len(ino.synced)]) == string(ino.synced) {
			data = slices.Clone(ino.data[:len(ino.synced)+rng.IntN(len(ino.data)-len(ino.synced)+1)])
		}
		n := &inode{data: data, synced: slices.Clone(data)}
		c.files[name], c.durable[name] = n, n
	}
	return c
}

// Bytes returns a copy of the named file's contents, or nil.
func (m *Mem) Bytes(name string) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ino := m.files[name]; ino != nil {
		return slices.Clone(ino.data)
	}
	return nil
}

// WriteFile sets the named file's contents, durably: for tests that damage
// a file between a crash and a reopen.
func (m *Mem) WriteFile(name string, data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := &inode{data: slices.Clone(data), synced: slices.Clone(data)}
	m.files[name], m.durable[name] = n, n
}

func (m *Mem) dirOf(name string) error {
	if !m.dirs[filepath.Dir(name)] {
		return &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return nil
}

func (m *Mem) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(OpCreate, name); err != nil {
		return nil, err
	}
	if err := m.dirOf(name); err != nil {
		return nil, err
	}
	ino := m.files[name]
	if ino == nil {
		ino = &inode{}
		m.files[name] = ino
	}
	ino.data = ino.data[:0:0]
	return &memFile{m: m, name: name, ino: ino}, nil
}

func (m *Mem) OpenAppend(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(OpOpen, name); err != nil {
		return nil, err
	}
	ino := m.files[name]
	if ino == nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memFile{m: m, name: name, ino: ino}, nil
}

// ReadFile returns the file's whole contents.
func (m *Mem) ReadFile(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ino := m.files[name]
	if ino == nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return slices.Clone(ino.data), nil
}

// Size returns the file's size: what was written, synced or not.
func (m *Mem) Size(name string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ino := m.files[name]
	if ino == nil {
		return 0, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return int64(len(ino.data)), nil
}

// OpenRead returns a reader of the file's contents when it was opened.
func (m *Mem) OpenRead(name string) (io.ReadCloser, error) {
	data, err := m.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

func (m *Mem) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[filepath.Clean(dir)] {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: fs.ErrNotExist}
	}
	var names []string
	for name := range m.files {
		if filepath.Dir(name) == filepath.Clean(dir) {
			names = append(names, filepath.Base(name))
		}
	}
	slices.Sort(names)
	return names, nil
}

func (m *Mem) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(OpRename, oldname); err != nil {
		return err
	}
	ino := m.files[oldname]
	if ino == nil {
		return &fs.PathError{Op: "rename", Path: oldname, Err: fs.ErrNotExist}
	}
	if err := m.dirOf(newname); err != nil {
		return err
	}
	delete(m.files, oldname)
	m.files[newname] = ino
	return nil
}

func (m *Mem) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(OpRemove, name); err != nil {
		return err
	}
	if m.files[name] == nil {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	delete(m.files, name)
	return nil
}

func (m *Mem) MkdirAll(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := filepath.Clean(dir); !m.dirs[d]; d = filepath.Dir(d) {
		m.dirs[d] = true
		if d == filepath.Dir(d) {
			break
		}
	}
	return nil
}

func (m *Mem) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(OpSyncDir, dir); err != nil {
		return err
	}
	dir = filepath.Clean(dir)
	for name := range m.durable {
		if filepath.Dir(name) == dir {
			delete(m.durable, name)
		}
	}
	for name, ino := range m.files {
		if filepath.Dir(name) == dir {
			m.durable[name] = ino
		}
	}
	return nil
}

func (m *Mem) Lock(dir string) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir = filepath.Clean(dir)
	if !m.dirs[dir] {
		return nil, &fs.PathError{Op: "lock", Path: dir, Err: fs.ErrNotExist}
	}
	if m.locked[dir] {
		return nil, ErrLocked
	}
	m.locked[dir] = true
	return &memLock{m: m, dir: dir}, nil
}

type memLock struct {
	m    *Mem
	dir  string
	once sync.Once
}

func (l *memLock) Close() error {
	l.once.Do(func() {
		l.m.mu.Lock()
		delete(l.m.locked, l.dir)
		l.m.mu.Unlock()
	})
	return nil
}

// memFile is an open Mem file. Like an open descriptor it keeps writing to
// its inode after the name is renamed or removed.
type memFile struct {
	m      *Mem
	name   string
	ino    *inode
	closed bool
}

func (f *memFile) Write(p []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: fs.ErrClosed}
	}
	if err := f.m.check(OpWrite, f.name); err != nil {
		half := len(p) / 2
		f.ino.data = append(f.ino.data, p[:half]...)
		return half, err
	}
	f.ino.data = append(f.ino.data, p...)
	return len(p), nil
}

func (f *memFile) Sync() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "sync", Path: f.name, Err: fs.ErrClosed}
	}
	if err := f.m.check(OpSync, f.name); err != nil {
		return err
	}
	f.ino.synced = slices.Clone(f.ino.data)
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: fs.ErrClosed}
	}
	if err := f.m.check(OpTruncate, f.name); err != nil {
		return err
	}
	if size < 0 || size > int64(len(f.ino.data)) {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: fmt.Errorf("size %d outside 0..%d", size, len(f.ino.data))}
	}
	f.ino.data = f.ino.data[:size:size]
	return nil
}

func (f *memFile) Close() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	f.closed = true
	return nil
}

func (f *memFile) Name() string { return f.name }

// String lists the files, for failure messages.
func (m *Mem) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(m.files)) {
		fmt.Fprintf(&b, "%s (%d bytes, %d synced)\n", name, len(m.files[name].data), len(m.files[name].synced))
	}
	return b.String()
}
