package revkv_test

import (
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
)

// dirDigest is the names, sizes and contents of every file under dir.
func dirDigest(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		out[path] = sha256.Sum256(b)
		return err
	}))
	return out
}

// TestReadOnly: a store opened WithReadOnly answers every read as the store
// that wrote the directory did, refuses every write with ErrReadOnly, and
// leaves every byte of the directory as it was, a torn tail included.
func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	s := openStr(t, dir, revkv.WithSync(revkv.SyncNever))
	for i, k := range []string{"a", "b", "c", "a", "b"} {
		_, err := s.Put(k, string(rune('0'+i)))
		require.NoError(t, err)
	}
	_, err := s.PutTTL("t", "ttl", time.Hour)
	require.NoError(t, err)
	_, err = s.Delete("c")
	require.NoError(t, err)
	require.NoError(t, s.Checkpoint())
	_, err = s.Put("after", "checkpoint")
	require.NoError(t, err)
	want := snapshotOf(t, s)
	require.NoError(t, s.Close())
	// A torn tail: half a record's worth of garbage after the last one.
	segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	f, err := os.OpenFile(segs[len(segs)-1], os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte{0x42, 0, 0})
	require.NoError(t, err)
	require.NoError(t, f.Close())
	before := dirDigest(t, dir)

	r := openStr(t, dir, revkv.WithReadOnly(), revkv.WithExpiryInterval(time.Millisecond))
	require.Equal(t, want, snapshotOf(t, r), "every read answers as before")
	_, err = r.Put("x", "1")
	require.ErrorIs(t, err, revkv.ErrReadOnly)
	require.EqualError(t, err, `revkv: put "x": store is read-only`)
	_, err = r.Update(func(tx *revkv.Txn[string]) error { return tx.Put("x", "1") })
	require.ErrorIs(t, err, revkv.ErrReadOnly)
	_, err = r.Delete("a")
	require.ErrorIs(t, err, revkv.ErrReadOnly)
	require.ErrorIs(t, r.Compact(2), revkv.ErrReadOnly)
	require.ErrorIs(t, r.Checkpoint(), revkv.ErrReadOnly)
	require.Zero(t, r.Trim())
	require.Zero(t, r.PurgeExpired())
	require.NoError(t, r.Sync(), "nothing to sync")
	_, err = revkv.Open(dir, revkv.StringCodec())
	require.ErrorIs(t, err, revkv.ErrLocked, "a read-only store holds the directory too")
	time.Sleep(5 * time.Millisecond) // the expirer ticks, and writes nothing
	require.NoError(t, r.Close())
	require.Equal(t, before, dirDigest(t, dir), "every byte as it was")

	_, err = revkv.Open(filepath.Join(dir, "missing"), revkv.StringCodec(), revkv.WithReadOnly())
	require.ErrorIs(t, err, fs.ErrNotExist, "a read-only Open creates nothing")
	_, err = os.Stat(filepath.Join(dir, "missing"))
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, err = revkv.Open(dir, revkv.StringCodec(), revkv.WithReadOnly(), revkv.WithRepair())
	require.ErrorContains(t, err, "WithRepair")

	// A writer afterwards cuts the torn tail and goes on from the same state.
	w := openStr(t, dir)
	defer w.Close()
	require.Equal(t, want, snapshotOf(t, w))
}

// TestReadOnlyLen: Len on a read-only store counts what Get finds live,
// as on a writable one: a key whose TTL ran out is not live, though no
// write has put its expiry in the log.
func TestReadOnlyLen(t *testing.T) {
	dir := t.TempDir()
	clock := newClock(time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC))
	s := openStr(t, dir, revkv.WithClock(clock.Now))
	_, err := s.PutTTL("session", "x", time.Second)
	require.NoError(t, err)
	_, err = s.Put("config", "y")
	require.NoError(t, err)
	require.NoError(t, s.Close())
	clock.Add(time.Hour)
	ro := openStr(t, dir, revkv.WithClock(clock.Now), revkv.WithReadOnly())
	defer ro.Close()
	_, live := ro.Get("session")
	require.False(t, live)
	require.Equal(t, 1, ro.Len())
}
