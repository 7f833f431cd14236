package revkv

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv/vfs"
)

// TestCompactedDigestStaysCompacted: a digest a compaction let go of is
// ErrCompacted after a reopen that replays the compaction from the log, as
// it was before the store closed (a question that got ErrCompacted gets
// it forever). The replay applied the compaction's mark before the trims
// that followed it in the log, and nothing swept the chain after them.
func TestCompactedDigestStaysCompacted(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		m := vfs.NewMem()
		s, err := Open("/db", StringCodec(), WithFS(m))
		require.NoError(t, err)
		for i := range 20 {
			_, err := s.Put(fmt.Sprint("k", i%3), fmt.Sprint(i))
			require.NoError(t, err)
		}
		require.NoError(t, s.Compact(10))
		_, before := s.DigestAt(1)
		require.ErrorIs(t, before, ErrCompacted)
		require.NoError(t, s.Close())

		opts := []Option{WithFS(m)}
		if readOnly {
			opts = append(opts, WithReadOnly())
		}
		s, err = Open("/db", StringCodec(), opts...)
		require.NoError(t, err)
		_, after := s.DigestAt(1)
		require.ErrorIs(t, after, ErrCompacted, "read-only %v", readOnly)
		require.NoError(t, s.Close())
	}
}
