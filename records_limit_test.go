package revkv

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv/vfs"
)

// TestWriteTooLargeForTheLog: an Update whose log record would pass the
// log's limit is ErrTooLarge, with nothing written (no revision, no
// digest), and the store goes on; the directory opens with what was
// written. (Written, it would be a record Open takes for damage.)
func TestWriteTooLargeForTheLog(t *testing.T) {
	defer func(n int) { maxLogRecord = n }(maxLogRecord)
	maxLogRecord = 64 << 10
	m := vfs.NewMem()
	s, err := Open("/db", BytesCodec(), WithFS(m))
	require.NoError(t, err)
	_, err = s.Put("a", []byte("1"))
	require.NoError(t, err)
	rev, d, err := s.Digest()
	require.NoError(t, err)
	big := bytes.Repeat([]byte("v"), 1<<10)
	_, err = s.Update(func(tx *Txn[[]byte]) error {
		tx.Annotate("who", "bulk")
		for i := range 100 {
			if err := tx.Put(fmt.Sprint("k", i), big); err != nil {
				return err
			}
		}
		return nil
	})
	require.ErrorIs(t, err, ErrTooLarge)
	require.Equal(t, "revkv: update: write too large for one log record: its 100 entries pass 65536 bytes at entry 58", err.Error())
	rev2, d2, err := s.Digest()
	require.NoError(t, err)
	require.Equal(t, rev, rev2, "nothing was written")
	require.Equal(t, d, d2)
	_, err = s.Put("b", big)
	require.NoError(t, err, "the store goes on")
	require.NoError(t, s.Close())
	s, err = Open("/db", BytesCodec(), WithFS(m))
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, rev+1, s.Rev())
	_, ok := s.Get("k0")
	require.False(t, ok)
	require.False(t, errors.Is(err, ErrCorrupt))
}
