package wal

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv/vfs"
)

// lastHolds writes a log of n records over several segments (writeLog),
// then last more into its last segment, and returns its directory and
// payloads.
func lastHolds(t *testing.T, n, last int) (string, [][]byte) {
	base := t.TempDir()
	want := writeLog(t, base, n)
	_, tail, err := replayAll(base)
	require.NoError(t, err)
	w, err := OpenWriter(vfs.OS, base, tail, int64(n)+1)
	require.NoError(t, err)
	for rev := int64(n) + 1; rev <= int64(n+last); rev++ {
		p := AppendBatch(nil, testBatch(rev, 1))
		require.NoError(t, w.Append(KindBatch, p, rev+1))
		want = append(want, p)
	}
	require.NoError(t, w.Close())
	return base, want
}

// withRoom keeps the first keep bytes of the file (all if keep < 0) and
// pads them with zeros to the next multiple of vfs.RoomAlign and extra
// more, as a crash of a mapped log leaves it; or, with extra < 0, with
// -extra zeros, to a length that is not such a multiple.
func withRoom(t *testing.T, path string, keep, extra int) {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	if keep >= 0 {
		b = b[:keep:keep]
	}
	n := len(b) - extra
	if extra >= 0 {
		n = (len(b)+vfs.RoomAlign)&^(vfs.RoomAlign-1) + extra
	}
	require.NoError(t, os.WriteFile(path, append(b, make([]byte, n-len(b))...), 0o644))
}

// TestRoomAfterRecords: zeros after the last whole record of the last
// segment, to a length that is a multiple of vfs.RoomAlign, as a crash of
// a log written through a mapping leaves them, are no record: Replay gives
// every record and says Zeros (not Torn), and OpenWriter cuts them and
// appends after the records. Zeros after part of a record are a torn tail
// (its bytes end where the zeros begin); zeros after part of a header, or
// in place of it, an empty segment. Zeros to any other length, or in a
// segment before the last, are what they were before logs had room: a
// torn tail, or damage.
func TestRoomAfterRecords(t *testing.T) {
	base, want := lastHolds(t, 10, 2)
	segs, _ := Segments(vfs.OS, base)
	last := func(dir string) string { return filepath.Join(dir, SegmentName(segs[len(segs)-1])) }
	for _, extra := range []int{0, vfs.RoomAlign, 3 * vfs.RoomAlign} {
		t.Run(fmt.Sprintf("room+%d", extra), func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, base, dir)
			fi, err := os.Stat(last(dir))
			require.NoError(t, err)
			withRoom(t, last(dir), -1, extra)
			got, tail, err := replayAll(dir)
			require.NoError(t, err)
			require.Equal(t, want, got)
			require.True(t, tail.Zeros)
			require.False(t, tail.Torn)
			require.Equal(t, fi.Size(), tail.Size)
			w, err := OpenWriter(vfs.OS, dir, tail, 13)
			require.NoError(t, err)
			cut, err := os.Stat(last(dir))
			require.NoError(t, err)
			require.Equal(t, fi.Size(), cut.Size(), "OpenWriter cut the room")
			p := AppendBatch(nil, testBatch(13, 1))
			require.NoError(t, w.Append(KindBatch, p, 14))
			require.NoError(t, w.Close())
			got, tail, err = replayAll(dir)
			require.NoError(t, err)
			require.Equal(t, append(want[:len(want):len(want)], p), got)
			require.False(t, tail.Zeros || tail.Torn)
		})
	}
	t.Run("zeros, no room", func(t *testing.T) {
		dir := t.TempDir()
		copyDir(t, base, dir)
		withRoom(t, last(dir), -1, -100)
		got, tail, err := replayAll(dir)
		require.NoError(t, err)
		require.Equal(t, want, got)
		require.True(t, tail.Torn, "zeros where a file of write(2) was extended: a torn write")
		require.Equal(t, tail.Size+100, tail.End)
	})
	t.Run("torn record", func(t *testing.T) {
		dir := t.TempDir()
		copyDir(t, base, dir)
		full, _ := os.ReadFile(last(dir))
		withRoom(t, last(dir), len(full)-3, 0)
		got, tail, err := replayAll(dir)
		require.NoError(t, err)
		require.Equal(t, want[:len(want)-1], got)
		require.True(t, tail.Torn)
		require.False(t, tail.Zeros)
		require.Equal(t, int64(len(full)-3), tail.End, "the torn bytes end where the room begins")
	})
	for _, keep := range []int{0, 3, 8} {
		t.Run(fmt.Sprintf("header cut at %d", keep), func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, base, dir)
			withRoom(t, last(dir), keep, 0)
			_, tail, err := replayAll(dir)
			require.NoError(t, err)
			require.Zero(t, tail.Size)
			require.Equal(t, keep > 0, tail.Torn)
			w, err := OpenWriter(vfs.OS, dir, tail, segs[len(segs)-1])
			require.NoError(t, err)
			require.NoError(t, w.Close())
			b, _ := os.ReadFile(last(dir))
			require.Equal(t, fileHeader(magicLog), b, "the segment begun again")
		})
	}
	t.Run("header cut, no room", func(t *testing.T) {
		dir := t.TempDir()
		copyDir(t, base, dir)
		withRoom(t, last(dir), 3, -5000)
		_, _, err := replayAll(dir)
		require.ErrorIs(t, err, ErrCorrupt)
	})
	t.Run("header damaged, then records", func(t *testing.T) {
		dir := t.TempDir()
		copyDir(t, base, dir)
		b, _ := os.ReadFile(last(dir))
		copy(b[3:headerSize], make([]byte, headerSize-3))
		require.NoError(t, os.WriteFile(last(dir), b, 0o644))
		withRoom(t, last(dir), -1, 0)
		_, _, err := replayAll(dir)
		require.ErrorIs(t, err, ErrCorrupt)
	})
	t.Run("room in a segment before the last", func(t *testing.T) {
		// A rotation cuts a segment's room before the sync that closes
		// it: zeros there are damage (the end of the segment zeroed).
		dir := t.TempDir()
		copyDir(t, base, dir)
		withRoom(t, filepath.Join(dir, SegmentName(segs[0])), -1, 0)
		_, _, err := replayAll(dir)
		require.ErrorIs(t, err, ErrCorrupt)
	})
}

// A rotation cuts the room of the segment it closes before the sync that
// closes it, so that no crash leaves room but in the last segment: a
// power cut of the in-memory file system, which leaves room after files
// written through vfs.MapAppend until a truncation of them is synced,
// after every append of a log that rotates every few records.
func TestRotationCutsRoom(t *testing.T) {
	for seed := range uint64(40) {
		fsys := vfs.NewMem()
		require.NoError(t, fsys.MkdirAll("/db"))
		require.NoError(t, fsys.SyncDir("/"))
		w, err := OpenWriter(fsys, "/db", Tail{Segment: -1}, 1)
		require.NoError(t, err)
		w.SegmentSize = 300
		rng := rand.New(rand.NewPCG(seed, 1))
		for rev := int64(1); rev <= 12; rev++ {
			require.NoError(t, w.Append(KindBatch, AppendBatch(nil, testBatch(rev, 1)), rev+1))
			crashed := fsys.Crash(rng)
			var n int64
			_, err := Replay(crashed, "/db", 0, func(Kind, []byte) error { n++; return nil })
			require.NoError(t, err, "seed %d, after revision %d", seed, rev)
			require.LessOrEqual(t, n, rev)
		}
		segs, err := Segments(fsys, "/db")
		require.NoError(t, err)
		require.Greater(t, len(segs), 2)
		require.NoError(t, w.Close())
	}
}
