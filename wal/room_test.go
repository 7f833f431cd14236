package wal

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv/vfs"
)

// TestRoomAfterRecords: zeros after the last whole record of a segment, as
// a crash of a log written through a mapping leaves them, are no record:
// Replay gives every record, says Zeros (not Torn) for the last segment,
// and OpenWriter cuts them and appends after the records. Zeros after part
// of a record are a torn tail; zeros after part of a header, or in place
// of it, an empty segment.
func TestRoomAfterRecords(t *testing.T) {
	base := t.TempDir()
	want := writeLog(t, base, 10)
	_, tail, err := replayAll(base)
	require.NoError(t, err)
	w, err := OpenWriter(vfs.OS, base, tail, 11) // two more in the last segment
	require.NoError(t, err)
	for rev := int64(11); rev <= 12; rev++ {
		p := AppendBatch(nil, testBatch(rev, 1))
		require.NoError(t, w.Append(KindBatch, p, rev+1))
		want = append(want, p)
	}
	require.NoError(t, w.Close())
	segs, _ := Segments(vfs.OS, base)
	lastName := SegmentName(segs[len(segs)-1])
	pad := func(t *testing.T, dir, name string, keep, zeros int) {
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		if keep < 0 {
			keep = len(b)
		}
		require.NoError(t, os.WriteFile(path, append(b[:keep:keep], make([]byte, zeros)...), 0o644))
	}
	for _, zeros := range []int{1, frameSize - 1, frameSize, frameSize + 1, 4096, 70000} {
		t.Run(fmt.Sprint(zeros), func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, base, dir)
			pad(t, dir, SegmentName(segs[0]), -1, zeros) // a rotation's cut undone
			pad(t, dir, lastName, -1, zeros)
			got, tail, err := replayAll(dir)
			require.NoError(t, err)
			require.Equal(t, want, got)
			require.True(t, tail.Zeros)
			require.False(t, tail.Torn)
			w, err := OpenWriter(vfs.OS, dir, tail, 13)
			require.NoError(t, err)
			p := AppendBatch(nil, testBatch(13, 1))
			require.NoError(t, w.Append(KindBatch, p, 14))
			require.NoError(t, w.Close())
			got, tail, err = replayAll(dir)
			require.NoError(t, err)
			require.Equal(t, append(want[:len(want):len(want)], p), got)
			require.False(t, tail.Zeros || tail.Torn)
		})
	}
	t.Run("torn record", func(t *testing.T) {
		dir := t.TempDir()
		copyDir(t, base, dir)
		full, _ := os.ReadFile(filepath.Join(dir, lastName))
		pad(t, dir, lastName, len(full)-3, 5000)
		got, tail, err := replayAll(dir)
		require.NoError(t, err)
		require.Equal(t, want[:len(want)-1], got)
		require.True(t, tail.Torn)
		require.False(t, tail.Zeros)
	})
	for _, keep := range []int{0, 3, 8} {
		t.Run(fmt.Sprintf("header cut at %d", keep), func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, base, dir)
			pad(t, dir, lastName, keep, 5000)
			_, tail, err := replayAll(dir)
			require.NoError(t, err)
			require.Zero(t, tail.Size)
			require.Equal(t, keep > 0, tail.Torn)
			w, err := OpenWriter(vfs.OS, dir, tail, segs[len(segs)-1])
			require.NoError(t, err)
			require.NoError(t, w.Close())
			b, _ := os.ReadFile(filepath.Join(dir, lastName))
			require.Equal(t, fileHeader(magicLog), b, "the segment begun again")
		})
	}
	t.Run("header damaged, then records", func(t *testing.T) {
		dir := t.TempDir()
		copyDir(t, base, dir)
		path := filepath.Join(dir, lastName)
		b, _ := os.ReadFile(path)
		copy(b[3:headerSize], make([]byte, headerSize-3))
		require.NoError(t, os.WriteFile(path, b, 0o644))
		_, _, err := replayAll(dir)
		require.ErrorIs(t, err, ErrCorrupt)
	})
	t.Run("zeros in a record, then records", func(t *testing.T) {
		dir := t.TempDir()
		copyDir(t, base, dir)
		path := filepath.Join(dir, SegmentName(segs[0]))
		b, _ := os.ReadFile(path)
		copy(b[headerSize:], make([]byte, frameSize+2))
		require.NoError(t, os.WriteFile(path, b, 0o644))
		_, _, err := replayAll(dir)
		require.ErrorIs(t, err, ErrCorrupt, "a segment before the last")
	})
}
