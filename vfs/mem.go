package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
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
	OpMkdir
	OpReadAt // a read at an offset; not counted by Ops, and no crash strikes it
)

func (o Op) String() string {
	return [...]string{"create", "open", "write", "sync", "truncate", "rename", "remove", "syncdir", "mkdir", "readat"}[o]
}

// ErrCrashed is the error of every operation of a Mem after the crash
// CrashAfter set up.
var ErrCrashed = errors.New("the file system crashed")

// Mem is an in-memory file system that remembers, for every file, what was
// last synced, and for every directory, which entries were last synced:
// Crash returns the file system a power cut would leave. The model:
//   - a file's bytes are durable up to its last Sync; a crash may also keep
//     any prefix of the bytes appended after it; a truncation since then
//     may be undone even though bytes written after it were kept, the old
//     bytes past them showing through;
//   - a directory's entries (files and directories created, renamed,
//     removed) are durable as of its last SyncDir; a crash may also keep
//     any of the changes made since, each whole or not at all, in any
//     combination: a file created but its directory not synced may vanish,
//     a rename may be undone, a removal may be undone;
//   - a directory MkdirAll made is an entry of its parent like a file, and
//     vanishes, with everything in it, unless its parent was synced.
//
// Faults can be injected into any operation (SetFault), and a crash can
// strike between any two operations (CrashAfter). Safe for concurrent use.
type Mem struct {
	// mu guards everything below and every inode's bytes.
	mu    sync.Mutex
	files map[string]*inode // the namespace as the process sees it
	dirs  map[string]bool
	// durable and durableDirs are the namespace a crash would leave for
	// sure: each directory's entries as of its last SyncDir (or as Crash
	// built it). unsynced holds, for each directory, the changes to its
	// entries since, in order.
	durable     map[string]*inode
	durableDirs map[string]bool
	unsynced    map[string][]dirChange
	locked      map[string]bool
	fault       func(op Op, name string) error
	// ops counts the operations the fault hook sees; once it reaches
	// crashAt (if positive), the file system crashes: crashed holds what
	// the crash left, and every operation fails with ErrCrashed.
	ops, crashAt int
	crashRNG     *rand.Rand
	crashed      *Mem
	reads        int64 // ReadAt calls (Reads)
}

// dirChange is one change to a directory's entries: name now holds ino
// (nil: removed), or is a new directory. A rename within a directory is
// one change of two parts, so that a crash keeps it whole or undoes it.
type dirChange []entry

type entry struct {
	name string
	ino  *inode // nil: the name was removed (or, with dir, made a directory)
	dir  bool
	gone bool // with dir: the directory was removed
}

// inode is a file's contents: what the process wrote, and what reached
// stable storage at its last sync. cut is set when the file was truncated
// below synced's length since that sync, low the smallest size it was cut
// to.
type inode struct {
	data, synced []byte
	cut          bool
	low          int
	// room is set when the file is written through MapAppend: a crash
	// may then leave zeros after the bytes it keeps, the room a mapped
	// file had allocated ahead, until a truncation (roomCut) is synced.
	room, roomCut bool
}

// truncateLocked cuts the file to size, noting a cut into synced bytes.
func (ino *inode) truncateLocked(size int) {
	if size < len(ino.synced) && (!ino.cut || size < ino.low) {
		ino.cut, ino.low = true, size
	}
	ino.data = ino.data[:size:size]
}

// NewMem returns an empty in-memory file system.
func NewMem() *Mem {
	return &Mem{
		files: map[string]*inode{}, dirs: map[string]bool{"/": true},
		durable: map[string]*inode{}, durableDirs: map[string]bool{"/": true}, unsynced: map[string][]dirChange{},
		locked: map[string]bool{},
	}
}

// CrashAfter makes the file system crash after its next n operations
// (those the fault hook sees: every call that changes something): the
// next one, and every one after it, fails with ErrCrashed, and Crashed
// returns what the crash left, as Crash(rng) would have at that instant.
func (m *Mem) CrashAfter(n int, rng *rand.Rand) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.crashAt, m.crashRNG, m.crashed = m.ops+n+1, rng, nil
}

// Crashed returns what the crash CrashAfter set up left, or nil if it has
// not struck yet.
func (m *Mem) Crashed() *Mem {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.crashed
}

// Ops returns the number of operations the fault hook has seen: every call
// that changes something (create, open for appending, write, sync,
// truncate, rename, remove, syncdir, mkdir).
func (m *Mem) Ops() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ops
}

// SetFault installs hook, called before every operation with its kind and
// file name, one call at a time, under the file system's lock (it must not
// call the file system); an error it returns fails the operation. A failed write first
// writes half of its bytes (a short write), as a full disk may. A nil hook
// removes it.
func (m *Mem) SetFault(hook func(op Op, name string) error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fault = hook
}

func (m *Mem) check(op Op, name string) error {
	if m.crashAt > 0 && m.ops+1 >= m.crashAt {
		if m.crashed == nil {
			m.crashed = m.crashLocked(m.crashRNG)
		}
		return &fs.PathError{Op: op.String(), Path: name, Err: ErrCrashed}
	}
	m.ops++
	if m.fault == nil {
		return nil
	}
	if err := m.fault(op, name); err != nil {
		return &fs.PathError{Op: op.String(), Path: name, Err: err}
	}
	return nil
}

// changedLocked notes a change to the entries of dir: durable at its next
// SyncDir.
func (m *Mem) changedLocked(dir string, ch ...entry) {
	m.unsynced[dir] = append(m.unsynced[dir], ch)
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

// WriteFile sets the named file's contents, durably (its directories
// too): for tests that damage a file between a crash and a reopen.
func (m *Mem) WriteFile(name string, data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := &inode{data: slices.Clone(data), synced: slices.Clone(data)}
	m.files[name], m.durable[name] = n, n
	for d := filepath.Dir(name); !m.durableDirs[d]; d = filepath.Dir(d) {
		m.dirs[d], m.durableDirs[d] = true, true
	}
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
		m.changedLocked(filepath.Dir(name), entry{name: name, ino: ino})
	}
	ino.truncateLocked(0)
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

// OpenReaderAt returns a reader of the file's contents when it was
// opened, at any offset. Each ReadAt is seen by the fault hook (OpReadAt),
// which can fail it, and counted by Reads.
func (m *Mem) OpenReaderAt(name string) (ReaderAt, error) {
	data, err := m.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return &memReaderAt{m: m, name: name, r: bytes.NewReader(data)}, nil
}

// Reads returns how many ReadAt calls readers of OpenReaderAt made.
func (m *Mem) Reads() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reads
}

type memReaderAt struct {
	m    *Mem
	name string
	r    *bytes.Reader
}

func (r *memReaderAt) ReadAt(p []byte, off int64) (int, error) {
	r.m.mu.Lock()
	r.m.reads++
	var err error
	if r.m.fault != nil { // under the lock, as every other operation's hook
		err = r.m.fault(OpReadAt, r.name)
	}
	r.m.mu.Unlock()
	if err != nil {
		return 0, &fs.PathError{Op: "readat", Path: r.name, Err: err}
	}
	return r.r.ReadAt(p, off)
}

func (r *memReaderAt) Size() int64  { return r.r.Size() }
func (r *memReaderAt) Close() error { return nil }

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
	if from, to := filepath.Dir(oldname), filepath.Dir(newname); from == to {
		m.changedLocked(from, entry{name: oldname}, entry{name: newname, ino: ino})
	} else {
		m.changedLocked(from, entry{name: oldname})
		m.changedLocked(to, entry{name: newname, ino: ino})
	}
	return nil
}

// Remove removes a file, or an empty directory, as os.Remove does.
func (m *Mem) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(OpRemove, name); err != nil {
		return err
	}
	if d := filepath.Clean(name); m.dirs[d] && filepath.Dir(d) != d {
		name = d // an empty directory, as os.Remove removes it
		for n := range m.files {
			if filepath.Dir(n) == name {
				return &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
			}
		}
		for d := range m.dirs {
			if d != name && filepath.Dir(d) == name {
				return &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
			}
		}
		// Its files went before it: what a crash would have brought back
		// of them goes with it.
		for n := range m.durable {
			if filepath.Dir(n) == name {
				delete(m.durable, n)
			}
		}
		delete(m.unsynced, name)
		delete(m.dirs, name)
		m.changedLocked(filepath.Dir(name), entry{name: name, dir: true, gone: true})
		return nil
	}
	if m.files[name] == nil {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	delete(m.files, name)
	m.changedLocked(filepath.Dir(name), entry{name: name})
	return nil
}

// MkdirAll creates dir and the directories above it that are missing. Each
// new one is an entry of its parent, durable once the parent is synced.
func (m *Mem) MkdirAll(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(OpMkdir, dir); err != nil {
		return err
	}
	for d := filepath.Clean(dir); !m.dirs[d]; d = filepath.Dir(d) {
		m.dirs[d] = true
		if d == filepath.Dir(d) {
			m.durableDirs[d] = true // a root is always there
			break
		}
		m.changedLocked(filepath.Dir(d), entry{name: d, dir: true})
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
	if !m.dirs[dir] {
		return &fs.PathError{Op: "syncdir", Path: dir, Err: fs.ErrNotExist}
	}
	for _, ch := range m.unsynced[dir] {
		for _, e := range ch {
			switch {
			case e.dir && e.gone:
				delete(m.durableDirs, e.name)
			case e.dir:
				m.durableDirs[e.name] = true
			case e.ino == nil:
				delete(m.durable, e.name)
			default:
				m.durable[e.name] = e.ino
			}
		}
	}
	delete(m.unsynced, dir)
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
	mapped bool // returned by MapAppend: writes leave room (inode.room)
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
	if f.mapped {
		f.ino.room, f.ino.roomCut = true, false
	}
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
	f.ino.synced, f.ino.cut = slices.Clone(f.ino.data), false
	if f.ino.roomCut {
		f.ino.room, f.ino.roomCut = false, false
	}
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
	f.ino.truncateLocked(int(size))
	f.ino.roomCut = f.ino.room
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
