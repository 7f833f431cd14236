package revkv_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/vfs"
	"github.com/revkv/revkv/wal"
)

func openStr(t *testing.T, dir string, opts ...revkv.Option) *revkv.Store[string] {
	t.Helper()
	s, err := revkv.Open(dir, revkv.StringCodec(), opts...)
	require.NoError(t, err)
	return s
}

// TestOpenRemembers: everything a store answers is answered again after
// Close and Open, in the same locations, and revisions go on.
func TestOpenRemembers(t *testing.T) {
	dir := t.TempDir()
	c := newClock(epoch)
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	odd := time.FixedZone("odd", 3*3600+1800)
	zone := time.UTC
	clock := func() time.Time { return c.Now().In(zone) }
	s := openStr(t, dir, revkv.WithClock(clock), revkv.WithMaxHistory(3))
	_, err = s.Put("a", "1")
	require.NoError(t, err)
	zone = paris
	_, err = s.PutTTL("b", "x", time.Hour)
	require.NoError(t, err)
	zone = odd
	for i := range 5 {
		c.Add(time.Second)
		_, err = s.Put("a", fmt.Sprint(i+2))
		require.NoError(t, err)
	}
	_, err = s.Update(func(tx *revkv.Txn[string]) error {
		require.NoError(t, tx.Put("u1", "p"))
		return tx.Delete("b")
	})
	require.NoError(t, err)
	require.NoError(t, s.Compact(4))
	before := snapshotOf(t, s)
	require.NoError(t, s.Close())

	s = openStr(t, dir, revkv.WithClock(clock), revkv.WithMaxHistory(3))
	require.Equal(t, before, snapshotOf(t, s))
	rev, err := s.Put("c", "new")
	require.NoError(t, err)
	require.Equal(t, before.rev+1, rev, "revisions go on")
	require.NoError(t, s.Check())

	// A checkpoint, then more writes, then Open again.
	require.NoError(t, s.Checkpoint())
	_, err = s.Put("d", "after")
	require.NoError(t, err)
	before = snapshotOf(t, s)
	require.NoError(t, s.Close())
	snaps, _ := filepath.Glob(filepath.Join(dir, "*.snap"))
	require.Len(t, snaps, 1)
	s = openStr(t, dir, revkv.WithClock(clock), revkv.WithMaxHistory(3))
	defer s.Close()
	require.Equal(t, before, snapshotOf(t, s))
	require.NoError(t, s.Check())
}

type storeState struct {
	rev, floor revkv.Revision
	length     int
	history    map[string][]string
	at         map[revkv.Revision][2]any
}

// entryText prints an entry with its times' locations by name: a location
// loaded again is another pointer, with other caches.
func entryText(es []revkv.Entry[string]) []string {
	var out []string
	for _, e := range es {
		out = append(out, fmt.Sprint(e.Key, e.Op, e.Value, e.Rev, e.Time, e.Time.Location(), e.ExpiresAt, e.ExpiresAt.Location()))
	}
	return out
}

func snapshotOf(t *testing.T, s *revkv.Store[string]) storeState {
	st := storeState{rev: s.Rev(), floor: s.Floor(), length: s.Len(), history: map[string][]string{}, at: map[revkv.Revision][2]any{}}
	for k := range s.Scan("") {
		st.history[k] = entryText(s.History(k))
	}
	for _, k := range []string{"a", "b", "c", "u1"} {
		st.history[k] = entryText(s.History(k))
		for r := revkv.Revision(0); r <= s.Rev(); r++ {
			v, ok, err := s.GetAt(k, r)
			st.at[r] = [2]any{fmt.Sprint(k, v, ok), errors.Is(err, revkv.ErrCompacted)}
		}
	}
	return st
}

// TestOpenErrors: a second Open of the directory is ErrLocked; damaged
// files and undecodable values are ErrCorrupt naming the file, and change
// nothing; a torn last record is cut back.
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	s := openStr(t, dir, revkv.WithMemory(-1)) // unsealed: Close leaves the log it damages
	for i := range 10 {
		_, err := s.Put(fmt.Sprint("k", i), "v")
		require.NoError(t, err)
	}
	_, err := revkv.Open(dir, revkv.StringCodec(), revkv.WithMemory(-1))
	require.ErrorIs(t, err, revkv.ErrLocked)
	require.NoError(t, s.Close())

	seg := filepath.Join(dir, wal.SegmentName(1))
	full, err := os.ReadFile(seg)
	require.NoError(t, err)

	// A torn tail: every cut inside the last record opens, with 9 revisions.
	for cut := len(full) - 1; cut > len(full)-20; cut-- {
		require.NoError(t, os.WriteFile(seg, full[:cut], 0o644))
		s := openStr(t, dir, revkv.WithMemory(-1))
		require.Equal(t, revkv.Revision(9), s.Rev())
		rev, err := s.Put("next", "v")
		require.NoError(t, err)
		require.Equal(t, revkv.Revision(10), rev)
		require.NoError(t, s.Close())
		require.NoError(t, os.WriteFile(seg, full, 0o644))
	}

	// A flipped byte in the middle: ErrCorrupt naming the file; untouched.
	bad := append([]byte{}, full...)
	bad[40] ^= 1
	require.NoError(t, os.WriteFile(seg, bad, 0o644))
	_, err = revkv.Open(dir, revkv.StringCodec(), revkv.WithMemory(-1))
	require.ErrorIs(t, err, revkv.ErrCorrupt)
	require.ErrorContains(t, err, seg)
	after, _ := os.ReadFile(seg)
	require.Equal(t, bad, after)

	// A value the codec cannot decode.
	require.NoError(t, os.WriteFile(seg, full, 0o644))
	_, err = revkv.Open(dir, revkv.JSONCodec[int](), revkv.WithMemory(-1))
	require.ErrorIs(t, err, revkv.ErrCorrupt)
	require.ErrorContains(t, err, "decoding")

	// A newer format version (its check matching), and a damaged one.
	bad = append([]byte{}, full...)
	binary.LittleEndian.PutUint32(bad[8:], 9)
	binary.LittleEndian.PutUint32(bad[12:], ^uint32(9))
	require.NoError(t, os.WriteFile(seg, bad, 0o644))
	_, err = revkv.Open(dir, revkv.StringCodec(), revkv.WithMemory(-1))
	require.ErrorIs(t, err, revkv.ErrCorrupt)
	require.ErrorContains(t, err, "format version 9, written by a newer revkv")
	require.ErrorIs(t, err, revkv.ErrNewerFormat, "a newer format is not damage")
	bad = append([]byte{}, full...)
	bad[10] ^= 1 // version 65537
	require.NoError(t, os.WriteFile(seg, bad, 0o644))
	_, err = revkv.Open(dir, revkv.StringCodec(), revkv.WithMemory(-1))
	require.ErrorIs(t, err, revkv.ErrCorrupt)
	require.ErrorContains(t, err, "damaged header: its format version reads 65537")
	require.NotErrorIs(t, err, revkv.ErrNewerFormat, "damage is not a newer format")

	_, err = revkv.Open[string](dir, nil)
	require.ErrorContains(t, err, "nil codec")
}

// TestSnapshotChecked: a snapshot whose revision times go back or hold a
// nanosecond count out of range, or whose keys repeat or come out of
// order, is ErrCorrupt naming what is wrong.
func TestSnapshotChecked(t *testing.T) {
	open := func(st wal.State, keys ...string) error {
		dir := t.TempDir()
		w, err := wal.CreateSnapshot(vfs.OS, dir, st.Last, wal.AppendState(nil, &st))
		require.NoError(t, err)
		for i, k := range keys {
			e := wal.Entry{Op: 1, Rev: int64(i + 1), Sec: st.Times[i].Sec, Value: []byte("v")}
			require.NoError(t, w.Add(wal.KindKey, wal.AppendKey(nil, &wal.Key{Key: k, Entries: []wal.Entry{e}})))
		}
		require.NoError(t, w.Commit())
		s, err := revkv.Open(dir, revkv.StringCodec())
		if err == nil {
			require.NoError(t, s.Close())
		}
		return err
	}
	two := wal.State{Last: 2, Base: 1, Times: []wal.Instant{{Sec: 10}, {Sec: 11}}, LastTime: wal.Instant{Sec: 11}}
	for want, err := range map[string]error{
		"the time of revision 2 goes back":                  open(wal.State{Last: 2, Base: 1, Times: []wal.Instant{{Sec: 10}, {Sec: 9, Nsec: 5}}, LastTime: wal.Instant{Sec: 9, Nsec: 5}}),
		"the time of revision 1 has 1000000000 nanoseconds": open(wal.State{Last: 1, Base: 1, Times: []wal.Instant{{Sec: 10, Nsec: 1e9}}, LastTime: wal.Instant{Sec: 11}}),
		"the time of revision 3 has -1 nanoseconds":         open(wal.State{Last: 3, Base: 2, TrimFloor: 2, Times: []wal.Instant{{Sec: 10}, {Sec: 10, Nsec: -1}}, LastTime: wal.Instant{Sec: 10}}),
		"times from revision 2, above the floor 0":          open(wal.State{Last: 3, Base: 2, Times: []wal.Instant{{Sec: 10}, {Sec: 10}}, LastTime: wal.Instant{Sec: 10}}),
		`key "a" twice`:     open(two, "a", "a"),
		`key "a" after "b"`: open(two, "b", "a"),
	} {
		require.ErrorIs(t, err, revkv.ErrCorrupt, want)
		require.ErrorContains(t, err, want)
	}
	require.NoError(t, open(two, "a", "b"), "the same snapshot with its keys in order opens")
}

// TestSnapshotRoomForTheLog: Open builds a snapshot's key logs with room
// for what the log after the snapshot adds, by the log's size against the
// snapshot's, so that its replay does not regrow them; a log larger than
// the snapshot at most doubles a key's room. (Capacities are rounded up to
// the allocator's size classes: within an eighth.)
func TestSnapshotRoomForTheLog(t *testing.T) {
	for _, c := range []struct {
		name       string
		a, b       int // writes of "a" and "b" after the checkpoint
		minA, maxA int // a's room after Open
		maxB       int // b's
	}{
		{"no log", 0, 0, 201, 201 * 9 / 8, 201 * 9 / 8},
		// Room for 300 or a little more from the start (the log's records
		// are larger than the snapshot's): a log of 201 regrown by the
		// replay would have about 400.
		{"log of half", 100, 100, 300, 375, 375},
		{"log larger than the snapshot", 600, 0, 800, 1600, 401 * 9 / 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStr(t, dir, revkv.WithCheckpointBytes(1<<40), revkv.WithMemory(-1)) // unsealed: the log is replayed
			for i := range 200 {
				s.Put("a", fmt.Sprint(i))
				s.Put("b", fmt.Sprint(i))
			}
			require.NoError(t, s.Checkpoint())
			for i := range max(c.a, c.b) {
				if i < c.a {
					s.Put("a", fmt.Sprint(i))
				}
				if i < c.b {
					s.Put("b", fmt.Sprint(i))
				}
			}
			require.NoError(t, s.Close())
			s = openStr(t, dir, revkv.WithMemory(-1))
			defer s.Close()
			require.GreaterOrEqual(t, revkv.LogCap(s, "a"), c.minA)
			require.LessOrEqual(t, revkv.LogCap(s, "a"), c.maxA)
			require.LessOrEqual(t, revkv.LogCap(s, "b"), c.maxB)
			require.NoError(t, s.Check())
		})
	}
}

// TestExpiryDuringDowntime: an expiry due while the store was closed is
// written at its exact time by the first write after Open; Open itself
// writes nothing.
func TestExpiryDuringDowntime(t *testing.T) {
	dir := t.TempDir()
	c := newClock(epoch)
	s := openStr(t, dir, revkv.WithClock(c.Now))
	_, err := s.PutTTL("session", "alice", time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	c.Add(time.Hour)
	s = openStr(t, dir, revkv.WithClock(c.Now))
	defer s.Close()
	require.Equal(t, revkv.Revision(1), s.Rev(), "nothing is written during Open")
	_, ok := s.Get("session")
	require.False(t, ok, "but the key reads as expired")
	_, err = s.Put("x", "y")
	require.NoError(t, err)
	h := s.History("session")
	require.Len(t, h, 2)
	require.Equal(t, revkv.OpExpire, h[1].Op)
	require.Equal(t, epoch.Add(time.Minute), h[1].Time)
}

// TestDirectoryStaysFlat: under WithMaxHistory with Trim running and small
// checkpoints, an endless stream of writes over a fixed key set keeps the
// directory's size flat.
func TestDirectoryStaysFlat(t *testing.T) {
	dir := t.TempDir()
	s := openStr(t, dir, revkv.WithMaxHistory(4), revkv.WithCheckpointBytes(64<<10), revkv.WithSync(revkv.SyncNever))
	defer s.Close()
	rng := rand.New(rand.NewSource(1))
	var sizes []int64
	for round := range 10 {
		for range 5000 {
			_, err := s.Put(fmt.Sprint("k", rng.Intn(200)), fmt.Sprint(rng.Int63()))
			require.NoError(t, err)
		}
		s.Trim()
		require.NoError(t, s.Checkpoint())
		if round >= 2 {
			// Measured between checkpoints: one the log size started in
			// the background holds two snapshots for a moment.
			release := revkv.HoldCheckpoints(s)
			sizes = append(sizes, dirSize(t, dir))
			release()
		}
	}
	t.Logf("directory sizes: %v", sizes)
	for _, n := range sizes {
		require.Less(t, n, sizes[0]*3/2, "the directory does not grow with the writes")
	}
}

// TestCheckpointsKeepPace: with every revision kept, automatic checkpoints
// wait for as much log as the last snapshot holds, so the bytes they write
// stay within those logged (a checkpoint every 4 KiB would rewrite the
// whole history each time: hundreds of snapshots here), and a reopen after
// them still answers everything.
func TestCheckpointsKeepPace(t *testing.T) {
	m := vfs.NewMem()
	snaps := 0
	m.SetFault(func(op vfs.Op, name string) error {
		if op == vfs.OpRename {
			snaps++ // a snapshot put in place
		}
		return nil
	})
	// Unsealed: a sealed store's snapshot holds each key's newest entry
	// only, and a seal every 4 KiB is what WithCheckpointBytes asks for.
	s, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(m), revkv.WithCheckpointBytes(4<<10), revkv.WithSync(revkv.SyncNever), revkv.WithMemory(-1))
	require.NoError(t, err)
	const revs = 40_000 // ~2 MB of log
	for i := range revs {
		_, err := s.Put(fmt.Sprint("k", i%500), fmt.Sprint("value ", i))
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	t.Logf("%d revisions, %d checkpoints", revs, snaps)
	require.Greater(t, snaps, 3, "checkpoints were taken")
	require.Less(t, snaps, 25, "each checkpoint waited for as much log as the last snapshot")
	s, err = revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(m))
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, revkv.Revision(revs), s.Rev())
	require.Len(t, s.History("k7"), revs/500)
}

// dirSize is the bytes the files in dir hold, without the room the log
// being written keeps allocated past its records: zeros at its end, up to
// a few MiB whatever the history's length, that a test of growth must not
// take for history (one write after a checkpoint allocates 128 KiB). Only
// a log file whose length is a multiple of vfs.RoomAlign has room, as wal
// reads it: zeros anywhere else count.
func dirSize(t *testing.T, dir string) int64 {
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	var n int64
	for _, de := range des {
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		switch {
		case err != nil: // a file removed meanwhile
		case filepath.Ext(de.Name()) == ".log" && len(b)%vfs.RoomAlign == 0:
			n += int64(len(bytes.TrimRight(b, "\x00")))
		default:
			n += int64(len(b))
		}
	}
	return n
}

// TestCodecErrorWritesNothing: a value the codec cannot encode fails its
// write and writes nothing, in a single write and in an Update.
func TestCodecErrorWritesNothing(t *testing.T) {
	s, err := revkv.Open(t.TempDir(), revkv.JSONCodec[any]())
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Put("ok", 1)
	require.NoError(t, err)
	_, err = s.Put("bad", make(chan int))
	require.ErrorContains(t, err, "encoding the value")
	_, err = s.Update(func(tx *revkv.Txn[any]) error {
		require.NoError(t, tx.Put("x", 1))
		return tx.Put("y", func() {})
	})
	require.Error(t, err)
	require.Equal(t, revkv.Revision(1), s.Rev())
	_, err = s.Put("after", 2)
	require.NoError(t, err, "the store goes on")
}

// FuzzOpenBytes writes arbitrary bytes as a directory's log segment and
// snapshot: Open must answer a store or an error, never panic, and a store
// it answers must pass Check and take a write. FuzzOpen damages a valid
// directory and checks what Open answers against what was written.
func FuzzOpenBytes(f *testing.F) {
	dir := f.TempDir()
	s, err := revkv.Open(dir, revkv.JSONCodec[int](), revkv.WithMaxHistory(2))
	require.NoError(f, err)
	for i := range 20 {
		_, err := s.PutTTL(fmt.Sprint("k", i%3), i, time.Hour)
		require.NoError(f, err)
	}
	require.NoError(f, s.Compact(5))
	require.NoError(f, s.Checkpoint())
	_, err = s.Update(func(tx *revkv.Txn[int]) error { tx.Put("a", 1); return tx.Delete("k1") })
	require.NoError(f, err)
	require.NoError(f, s.Close())
	segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	snaps, _ := filepath.Glob(filepath.Join(dir, "*.snap"))
	seg, _ := os.ReadFile(segs[len(segs)-1])
	snap, _ := os.ReadFile(snaps[0])
	f.Add(seg, snap)
	f.Add(seg, []byte{})
	f.Add([]byte("revkvlog"), snap)
	f.Fuzz(func(t *testing.T, seg, snap []byte) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, wal.SegmentName(21)), seg, 0o644))
		if len(snap) > 0 {
			require.NoError(t, os.WriteFile(filepath.Join(dir, wal.SnapshotName(20)), snap, 0o644))
		}
		s, err := revkv.Open(dir, revkv.JSONCodec[int](), revkv.WithMaxHistory(2), revkv.WithSync(revkv.SyncNever))
		if err != nil {
			return
		}
		defer s.Close()
		require.NoError(t, s.Check())
		_, err = s.Put("fuzz", 1)
		require.NoError(t, err)
	})
}

// TestNewIgnoresDurabilityOptions: the options of Open are ignored by New,
// and Sync and Checkpoint on it are no-ops.
func TestNewIgnoresDurabilityOptions(t *testing.T) {
	s := revkv.New[int](revkv.WithSync(revkv.SyncNever), revkv.WithCheckpointBytes(1))
	defer s.Close()
	_, err := s.Put("a", 1)
	require.NoError(t, err)
	require.NoError(t, s.Sync())
	require.NoError(t, s.Checkpoint())
	require.Panics(t, func() { revkv.New[int](revkv.WithSync(revkv.SyncMode(7))) })
	require.Panics(t, func() { revkv.New[int](revkv.WithSyncInterval(-1)) })
}

// panicCodec is StringCodec whose Decode panics.
type panicCodec struct{ revkv.Codec[string] }

func (panicCodec) Decode([]byte) (string, error) { panic("bad codec") }

// TestCodecPanicAtOpen: a codec that panics while Open replays panics out
// of Open, which releases the directory first: it opens again with a good
// codec (the lock was held for good before).
func TestCodecPanicAtOpen(t *testing.T) {
	dir := t.TempDir()
	s := openStr(t, dir, revkv.WithCheckpointBytes(1<<40))
	for i := range 1000 {
		_, err := s.Put(fmt.Sprint("k", i%10), fmt.Sprint(i))
		require.NoError(t, err)
	}
	require.NoError(t, s.Checkpoint())
	_, err := s.Put("after", "x")
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.PanicsWithValue(t, "bad codec", func() { revkv.Open(dir, panicCodec{revkv.StringCodec()}) })
	s = openStr(t, dir)
	require.Equal(t, revkv.Revision(1001), s.Rev())
	require.NoError(t, s.Close())
}

// TestUpdatePanicOnDirectory: in every sync mode, a panic inside Update's
// function writes nothing, goes on out of Update, and leaves the store's
// write lock free: the next write goes through.
func TestUpdatePanicOnDirectory(t *testing.T) {
	for _, mode := range []revkv.SyncMode{revkv.SyncAlways, revkv.SyncInterval, revkv.SyncNever} {
		s, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(vfs.NewMem()), revkv.WithSync(mode))
		require.NoError(t, err)
		_, err = s.Put("k", "v")
		require.NoError(t, err)
		require.PanicsWithValue(t, "boom", func() {
			s.Update(func(tx *revkv.Txn[string]) error {
				require.NoError(t, tx.Put("k", "half"))
				panic("boom")
			})
		}, "mode %d", mode)
		done := make(chan error, 1)
		go func() { _, err := s.Put("k", "after"); done <- err }()
		select {
		case err := <-done:
			require.NoError(t, err, "mode %d", mode)
		case <-time.After(10 * time.Second):
			t.Fatalf("mode %d: the write lock is still held after the panic", mode)
		}
		h := s.History("k")
		require.Len(t, h, 2, "mode %d: nothing of the panicked Update", mode)
		require.Equal(t, "after", h[1].Value)
		require.NoError(t, s.Close())
	}
}
