package vfs_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv/vfs"
)

func readFile(fsys vfs.FS, name string) ([]byte, error) {
	r, err := fsys.OpenRead(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// Both file systems answer the same calls the same way.
func TestFileSystems(t *testing.T) {
	for name, mk := range map[string]func(t *testing.T) (vfs.FS, string){
		"os":  func(t *testing.T) (vfs.FS, string) { return vfs.OS, t.TempDir() },
		"mem": func(t *testing.T) (vfs.FS, string) { return vfs.NewMem(), "/x/db" },
	} {
		t.Run(name, func(t *testing.T) {
			fsys, dir := mk(t)
			require.NoError(t, fsys.MkdirAll(dir))
			a := filepath.Join(dir, "a")
			f, err := fsys.Create(a)
			require.NoError(t, err)
			_, err = f.Write([]byte("hello world"))
			require.NoError(t, err)
			require.NoError(t, f.Sync())
			require.NoError(t, f.Truncate(5))
			_, err = f.Write([]byte("!"))
			require.NoError(t, err, "a write after Truncate lands at the new end")
			require.NoError(t, f.Close())
			got, err := readFile(fsys, a)
			require.NoError(t, err)
			require.Equal(t, "hello!", string(got))
			size, err := fsys.Size(a)
			require.NoError(t, err)
			require.EqualValues(t, 6, size)

			f, err = fsys.OpenAppend(a)
			require.NoError(t, err)
			_, err = f.Write([]byte("?"))
			require.NoError(t, err)
			require.NoError(t, f.Close())
			got, _ = readFile(fsys, a)
			require.Equal(t, "hello!?", string(got))

			b := filepath.Join(dir, "b")
			require.NoError(t, fsys.Rename(a, b))
			names, err := fsys.List(dir)
			require.NoError(t, err)
			require.Equal(t, []string{"b"}, names)
			_, err = readFile(fsys, a)
			require.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
			_, err = fsys.Size(a)
			require.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
			_, err = fsys.OpenAppend(a)
			require.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
			require.NoError(t, fsys.SyncDir(dir))
			require.NoError(t, fsys.Remove(b))
			require.True(t, errors.Is(fsys.Remove(b), fs.ErrNotExist))

			l, err := fsys.Lock(dir)
			require.NoError(t, err)
			_, err = fsys.Lock(dir)
			require.True(t, errors.Is(err, vfs.ErrLocked), "a second lock: %v", err)
			require.NoError(t, l.Close())
			l, err = fsys.Lock(dir)
			require.NoError(t, err, "released by Close")
			l.Close()

			// Remove takes an empty directory, not a full one.
			sub := filepath.Join(dir, "sub")
			require.NoError(t, fsys.MkdirAll(sub))
			f, err = fsys.Create(filepath.Join(sub, "c"))
			require.NoError(t, err)
			require.NoError(t, f.Close())
			require.True(t, errors.Is(fsys.Remove(sub), syscall.ENOTEMPTY))
			require.NoError(t, fsys.Remove(filepath.Join(sub, "c")))
			require.NoError(t, fsys.Remove(sub))
			_, err = fsys.List(sub)
			require.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
		})
	}
}

// A directory removed and made again holds none of its old files after a
// power cut, synced or not.
func TestMemRemovedDirectory(t *testing.T) {
	m := vfs.NewMem()
	require.NoError(t, m.MkdirAll("/d"))
	f, err := m.Create("/d/f")
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	require.NoError(t, m.SyncDir("/d"))
	require.NoError(t, m.SyncDir("/"))
	require.NoError(t, m.Remove("/d/f"))
	require.NoError(t, m.Remove("/d"))
	require.NoError(t, m.SyncDir("/"))
	require.NoError(t, m.MkdirAll("/d"))
	require.NoError(t, m.SyncDir("/"))
	names, err := m.Crash(nil).List("/d")
	require.NoError(t, err)
	require.Empty(t, names)
}

// A power cut keeps what was synced: file bytes at their last Sync,
// directory entries at their directory's last SyncDir, a new directory
// once its parent was synced.
func TestMemCrash(t *testing.T) {
	m := vfs.NewMem()
	require.NoError(t, m.MkdirAll("/d"))
	f, _ := m.Create("/d/a")
	f.Write([]byte("synced"))
	f.Sync()
	f.Write([]byte(" and not"))

	require.NoError(t, m.SyncDir("/d"))
	_, err := m.Crash(nil).List("/d")
	require.True(t, errors.Is(err, fs.ErrNotExist), "a new directory whose parent was never synced: gone, with its files")
	require.NoError(t, m.SyncDir("/"))

	require.NoError(t, m.MkdirAll("/d/e"))
	g, _ := m.Create("/d/e/x")
	g.Sync()
	require.NoError(t, m.SyncDir("/d/e"))
	_, err = m.Crash(nil).List("/d/e")
	require.True(t, errors.Is(err, fs.ErrNotExist), "its own directory synced, its parent not: gone")
	require.NoError(t, m.SyncDir("/d"))
	names, err := m.Crash(nil).List("/d/e")
	require.NoError(t, err)
	require.Equal(t, []string{"x"}, names)

	c := m.Crash(nil)
	got, err := c.ReadFile("/d/a")
	require.NoError(t, err)
	require.Equal(t, "synced", string(got), "only the synced bytes")

	// With a source of chance, part of the unsynced tail may survive, and
	// never more than was written.
	seen := map[string]bool{}
	for i := range 200 {
		got, _ := m.Crash(rand.New(rand.NewPCG(uint64(i), 1))).ReadFile("/d/a")
		require.Contains(t, "synced and not", string(got))
		require.True(t, len(got) >= len("synced"))
		seen[string(got)] = true
	}
	require.Greater(t, len(seen), 3, "different crashes keep different amounts")

	// A truncation not synced may be undone while what was written after
	// it is kept: the old bytes past them show through.
	tf, _ := m.Create("/d/t")
	tf.Write([]byte("0123456789"))
	tf.Sync()
	m.SyncDir("/d")
	tf.Truncate(2)
	tf.Write([]byte("ab"))
	seen = map[string]bool{}
	for i := range 100 {
		got, _ := m.Crash(rand.New(rand.NewPCG(uint64(i), 3))).ReadFile("/d/t")
		seen[string(got)] = true
	}
	require.Equal(t, map[string]bool{"0123456789": true, "01a3456789": true, "01ab456789": true}, seen)
	tf.Sync()
	got, _ = m.Crash(rand.New(rand.NewPCG(1, 3))).ReadFile("/d/t")
	require.Equal(t, "01ab", string(got), "synced: the cut is durable")
	require.NoError(t, m.Remove("/d/t"))
	require.NoError(t, m.SyncDir("/d"))

	// A creation is durable only once the directory is synced.
	h, _ := m.Create("/d/new")
	h.Sync()
	names, _ = m.Crash(nil).List("/d")
	require.Equal(t, []string{"a"}, names, "created, synced, its directory not: gone")

	// A rename and a removal are durable only once the directory is
	// synced; until then a crash may keep any of them, each whole.
	require.NoError(t, m.Rename("/d/a", "/d/b"))
	require.NoError(t, m.Remove("/d/e/x"))
	names, _ = m.Crash(nil).List("/d")
	require.Equal(t, []string{"a"}, names)
	names, _ = m.Crash(nil).List("/d/e")
	require.Equal(t, []string{"x"}, names, "a removal undone")
	outcomes := map[string]bool{}
	for i := range 100 {
		c := m.Crash(rand.New(rand.NewPCG(uint64(i), 2)))
		d, _ := c.List("/d")
		e, _ := c.List("/d/e")
		outcomes[fmt.Sprint(d, e)] = true
	}
	require.Equal(t, map[string]bool{
		"[a] [x]": true, "[a new] [x]": true, "[b] [x]": true, "[b new] [x]": true,
		"[a] []": true, "[a new] []": true, "[b] []": true, "[b new] []": true,
	}, outcomes, "each change kept or not, a rename whole")
	require.NoError(t, m.SyncDir("/d"))
	require.NoError(t, m.SyncDir("/d/e"))
	names, _ = m.Crash(nil).List("/d")
	require.Equal(t, []string{"b", "new"}, names)
	names, _ = m.Crash(nil).List("/d/e")
	require.Empty(t, names)

	// Locks do not survive a crash.
	_, err = m.Lock("/d")
	require.NoError(t, err)
	_, err = m.Crash(nil).Lock("/d")
	require.NoError(t, err)
}

// CrashAfter crashes the file system between two operations: what it
// leaves is what Crash would have left then, and every later operation
// fails.
func TestMemCrashAfter(t *testing.T) {
	m := vfs.NewMem()
	m.MkdirAll("/d")
	m.SyncDir("/")
	start := m.Ops()
	m.CrashAfter(3, nil)
	f, err := m.Create("/d/a") // 1
	require.NoError(t, err)
	_, err = f.Write([]byte("x")) // 2
	require.NoError(t, err)
	require.NoError(t, f.Sync()) // 3
	require.Nil(t, m.Crashed())
	require.ErrorIs(t, m.SyncDir("/d"), vfs.ErrCrashed) // 4: the crash strikes before it
	_, err = f.Write([]byte("y"))
	require.ErrorIs(t, err, vfs.ErrCrashed)
	require.Equal(t, start+3, m.Ops())
	c := m.Crashed()
	require.NotNil(t, c)
	names, err := c.List("/d")
	require.NoError(t, err)
	require.Empty(t, names, "the SyncDir never ran")
}

// Faults fail the operation they name; a failed write is a short write.
func TestMemFaults(t *testing.T) {
	m := vfs.NewMem()
	m.MkdirAll("/d")
	f, _ := m.Create("/d/a")
	m.SetFault(func(op vfs.Op, name string) error {
		if op == vfs.OpWrite {
			return syscall.ENOSPC
		}
		return nil
	})
	n, err := f.Write([]byte("abcd"))
	require.Equal(t, 2, n)
	require.True(t, errors.Is(err, syscall.ENOSPC), "%v", err)
	require.Equal(t, "ab", string(m.Bytes("/d/a")))
	m.SetFault(func(op vfs.Op, name string) error {
		if op == vfs.OpSync || op == vfs.OpRename {
			return syscall.EIO
		}
		return nil
	})
	require.True(t, errors.Is(f.Sync(), syscall.EIO))
	require.True(t, errors.Is(m.Rename("/d/a", "/d/b"), syscall.EIO))
	m.SetFault(nil)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	require.True(t, errors.Is(f.Close(), fs.ErrClosed))
	_, err = f.Write([]byte("x"))
	require.True(t, errors.Is(err, fs.ErrClosed))
	_, err = m.Create("/nodir/a")
	require.True(t, errors.Is(err, fs.ErrNotExist), "no directory, no file")
}

// TestReaderAt reads a file at offsets through both file systems, and
// sees the Mem's fault hook fail a read and its counter count them.
func TestReaderAt(t *testing.T) {
	dir := t.TempDir()
	m := vfs.NewMem()
	require.NoError(t, m.MkdirAll(dir))
	for _, fsys := range []vfs.FS{vfs.OS, m} {
		name := filepath.Join(dir, "f")
		f, err := fsys.Create(name)
		require.NoError(t, err)
		_, err = f.Write([]byte("0123456789"))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		r, err := fsys.OpenReaderAt(name)
		require.NoError(t, err)
		require.Equal(t, int64(10), r.Size())
		p := make([]byte, 3)
		n, err := r.ReadAt(p, 4)
		require.NoError(t, err)
		require.Equal(t, "456", string(p[:n]))
		_, err = r.ReadAt(p, 9)
		require.ErrorIs(t, err, io.EOF, "a read past the end")
		require.NoError(t, r.Close())
		_, err = fsys.OpenReaderAt(filepath.Join(dir, "missing"))
		require.ErrorIs(t, err, fs.ErrNotExist)
	}
	require.Equal(t, int64(2), m.Reads())
	boom := errors.New("boom")
	m.SetFault(func(op vfs.Op, name string) error {
		if op == vfs.OpReadAt {
			return boom
		}
		return nil
	})
	r, err := m.OpenReaderAt(filepath.Join(dir, "f"))
	require.NoError(t, err)
	_, err = r.ReadAt(make([]byte, 1), 0)
	require.ErrorIs(t, err, boom)
}
