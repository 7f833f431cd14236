package revkv_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// faultFile fails writes or syncs on demand and counts syncs.
type faultFile struct {
	vfs.File
	failWrite, failSync *atomic.Bool
	syncs               *atomic.Int64
}

func (f faultFile) Write(p []byte) (int, error) {
	if f.failWrite.Load() {
		return 0, errors.New("injected write failure")
	}
	return f.File.Write(p)
}

func (f faultFile) Sync() error {
	f.syncs.Add(1)
	if f.failSync.Load() {
		return errors.New("injected sync failure")
	}
	return f.File.Sync()
}

type faults struct {
	failWrite, failSync atomic.Bool
	syncs               atomic.Int64
}

func (fs *faults) wrap(f vfs.File) vfs.File {
	return faultFile{File: f, failWrite: &fs.failWrite, failSync: &fs.failSync, syncs: &fs.syncs}
}

// faultFS is the operating system's file system with every file it creates
// or opens for appending wrapped in a faultFile: a store opened on it
// writes its log through them.
type faultFS struct {
	vfs.FS
	fs *faults
}

func (f faultFS) Create(name string) (vfs.File, error) {
	file, err := f.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return f.fs.wrap(file), nil
}

func (f faultFS) OpenAppend(name string) (vfs.File, error) {
	file, err := f.FS.OpenAppend(name)
	if err != nil {
		return nil, err
	}
	return f.fs.wrap(file), nil
}

// TestWriteFailure: a failed sync makes that write fail and invisible, and
// every later write fail with the same cause; reads go on; Close returns
// it; Open recovers what was durable.
func TestWriteFailure(t *testing.T) {
	for _, which := range []string{"sync", "write"} {
		t.Run(which, func(t *testing.T) {
			dir := t.TempDir()
			var fs faults
			s := openStr(t, dir, revkv.WithFS(faultFS{vfs.OS, &fs}))
			_, err := s.Put("a", "1")
			require.NoError(t, err)
			if which == "sync" {
				fs.failSync.Store(true)
			} else {
				fs.failWrite.Store(true)
			}
			_, err = s.Put("b", "2")
			require.ErrorContains(t, err, "injected "+which+" failure")
			_, ok := s.Get("b")
			require.False(t, ok, "the failed write is not visible")
			require.Equal(t, revkv.Revision(1), s.Rev())
			require.Equal(t, 1, s.Len())
			fs.failSync.Store(false)
			fs.failWrite.Store(false)
			_, err = s.Put("c", "3")
			require.ErrorContains(t, err, "injected "+which+" failure", "a failed sync is never retried")
			_, err = s.Update(func(tx *revkv.Txn[string]) error { return tx.Put("d", "4") })
			require.ErrorContains(t, err, "injected")
			require.ErrorContains(t, s.Compact(1), "injected")
			require.Zero(t, s.Trim())
			v, ok := s.Get("a")
			require.True(t, ok, "reads go on")
			require.Equal(t, "1", v)
			require.ErrorContains(t, s.Close(), "injected "+which+" failure")

			// What was durable: the write that failed was handed to the
			// operating system when its sync failed, and may or may not be
			// there; nothing after it is (a prefix, either way).
			s = openStr(t, dir)
			defer s.Close()
			if which == "write" || s.Rev() == 1 {
				require.Equal(t, revkv.Revision(1), s.Rev())
			} else {
				require.Equal(t, revkv.Revision(2), s.Rev())
				v, _ = s.Get("b")
				require.Equal(t, "2", v)
			}
			v, _ = s.Get("a")
			require.Equal(t, "1", v)
		})
	}
}

// TestGroupCommit: concurrent writers under SyncAlways share syncs, and
// every write they were told succeeded survives a power cut at the moment
// the last one returned (before Close could sync anything).
func TestGroupCommit(t *testing.T) {
	m := vfs.NewMem()
	var syncs atomic.Int64
	m.SetFault(func(op vfs.Op, _ string) error {
		if op == vfs.OpSync {
			syncs.Add(1)
			time.Sleep(200 * time.Microsecond) // a disk's fsync: writers queue meanwhile
		}
		return nil
	})
	s, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(m))
	require.NoError(t, err)
	syncs.Store(0) // Open's own
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_, err := s.Put(fmt.Sprint("w", w, "/", i), "v")
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	crashed := m.Crash(nil)
	t.Logf("%d writes, %d syncs", writers*each, syncs.Load())
	require.Positive(t, syncs.Load(), "writes are synced")
	require.Less(t, syncs.Load(), int64(writers*each), "writers share syncs")
	require.NoError(t, s.Close())
	s, err = revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(crashed))
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, writers*each, s.Len(), "every acknowledged write survives the power cut")
}

// TestBackgroundSyncAndCheckpoint: under SyncInterval the syncer syncs
// written records without a write asking, and a checkpoint starts by itself
// once WithCheckpointBytes were logged.
func TestBackgroundSyncAndCheckpoint(t *testing.T) {
	dir := t.TempDir()
	var fs faults
	s := openStr(t, dir, revkv.WithFS(faultFS{vfs.OS, &fs}), revkv.WithSync(revkv.SyncInterval), revkv.WithSyncInterval(5*time.Millisecond), revkv.WithCheckpointBytes(8<<10))
	fs.syncs.Store(0) // Open's own
	_, err := s.Put("a", "1")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return fs.syncs.Load() > 0 }, 10*time.Second, time.Millisecond, "the syncer syncs")
	for i := range 400 {
		_, err := s.Put(fmt.Sprint("k", i), "a value of some length")
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		snaps, _ := filepath.Glob(filepath.Join(dir, "*.snap"))
		return len(snaps) == 1
	}, 10*time.Second, time.Millisecond, "a checkpoint ran by itself")
	require.NoError(t, s.Close())
	require.NoError(t, s.Sync(), "after Close: nothing to do")
	require.ErrorIs(t, s.Checkpoint(), revkv.ErrClosed)
	s = openStr(t, dir)
	defer s.Close()
	require.Equal(t, 401, s.Len())
}
