package wal

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv/vfs"
)

// TestRotateSyncsTheOldSegment: a rotation makes the segment it closes
// durable before any record of the next one is written, so a power cut
// that keeps a record of the next segment keeps every record before it:
// here records 1..5 are written unsynced, the log rotates, record 6 is
// written and synced, and after the crash the log replays 1..6.
func TestRotateSyncsTheOldSegment(t *testing.T) {
	m := vfs.NewMem()
	require.NoError(t, m.MkdirAll("/db"))
	require.NoError(t, m.SyncDir("/"))
	w, err := OpenWriter(m, "/db", Tail{Segment: -1}, 1)
	require.NoError(t, err)
	var want [][]byte
	for rev := int64(1); rev <= 5; rev++ {
		p := AppendBatch(nil, testBatch(rev, 1))
		w.Buffer(KindBatch, p)
		want = append(want, p)
	}
	_, err = w.Flush() // written, not synced
	require.NoError(t, err)
	require.NoError(t, w.Cut().Rotate(6))
	p := AppendBatch(nil, testBatch(6, 1))
	w.Buffer(KindBatch, p)
	want = append(want, p)
	_, err = w.Flush()
	require.NoError(t, err)
	require.NoError(t, w.Sync())

	var got [][]byte
	_, err = Replay(m.Crash(nil), "/db", 0, func(k Kind, p []byte) error {
		if k != KindBatch {
			return fmt.Errorf("kind %d", k)
		}
		got = append(got, bytes.Clone(p))
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, want, got, "the records of the closed segment survive with the one after them")
	require.NoError(t, w.Close())
}
