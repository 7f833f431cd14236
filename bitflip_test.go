package revkv_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/vfs"
)

// TestBitFlips flips one bit at every byte of a closed store's files in
// turn: Open either refuses with ErrCorrupt, changing nothing, or opens
// the history without its last record (torn) or whole — never a wrong
// answer, never a shorter prefix. Unsealed, that is the snapshot and the
// log; sealed (the default), Close sealed the log into segments, and a
// flip there may also surface as a read's ErrCorrupt (contract §12.7).
func TestBitFlips(t *testing.T) {
	t.Run("unsealed", func(t *testing.T) { t.Parallel(); bitFlips(t, revkv.WithMemory(-1)) })
	t.Run("sealed", func(t *testing.T) { t.Parallel(); bitFlips(t) })
}

func bitFlips(t *testing.T, opts ...revkv.Option) {
	m := vfs.NewMem()
	s, err := revkv.Open("/db", revkv.StringCodec(), append(opts, revkv.WithFS(m))...)
	require.NoError(t, err)
	put := func(n int) {
		for range n {
			next := int64(s.Rev()) + 1
			_, err := s.Put(crashKey(next), fmt.Sprint(next))
			require.NoError(t, err)
		}
	}
	put(40)
	require.NoError(t, s.Checkpoint())
	put(30)
	_, err = writeNext(s, true)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	names, err := m.List("/db")
	require.NoError(t, err)
	corrupt, cut, whole, reads := 0, 0, 0, 0
	for _, name := range names {
		if name == "LOCK" {
			continue
		}
		path := "/db/" + name
		orig := m.Bytes(path)
		for off := range orig {
			if len(opts) == 0 && strings.HasSuffix(name, ".seg") && off%5 != 0 && !*corruptFull {
				continue // a fifth of a segment's bytes (all with -corrupt.full): its blocks are alike
			}
			c := m.Crash(nil)
			b := append([]byte(nil), orig...)
			b[off] ^= 1 << (off % 8)
			c.WriteFile(path, b)
			s, err := revkv.Open("/db", revkv.StringCodec(), append(opts, revkv.WithFS(c), revkv.WithReadOnly())...)
			if err != nil {
				require.True(t, errors.Is(err, revkv.ErrCorrupt), "%s at %d: %v", name, off, err)
				require.Equal(t, b, c.Bytes(path), "%s at %d: a refused Open changes nothing", name, off)
				corrupt++
				continue
			}
			if readsCorrupt(t, s) {
				reads++
			} else {
				checkCrashHistory(t, s)
				if s.Rev() == 73 {
					whole++
				} else {
					require.Equal(t, revkv.Revision(70), s.Rev(), "%s at %d: only the last record (an Update of three) may be cut", name, off)
					cut++
				}
			}
			require.NoError(t, s.Close())
		}
	}
	t.Logf("one bit flipped at each byte: %d ErrCorrupt at Open, %d in a read, %d cut back, %d whole", corrupt, reads, cut, whole)
}

// readsCorrupt reads every key's history with HistoryRange, which says
// when a history is not whole: it reports whether a read met ErrCorrupt,
// and fails the test on any other error or on a wrong entry.
func readsCorrupt(t *testing.T, s *revkv.Store[string]) bool {
	found := false
	for k := range 37 {
		for e, err := range s.HistoryRange(fmt.Sprint("k", k), 0, 0) {
			if err != nil {
				require.ErrorIs(t, err, revkv.ErrCorrupt)
				found = true
				break
			}
			r := int64(e.Rev)
			require.Equal(t, crashKey(r), e.Key)
			first, err := strconv.ParseInt(e.Value, 10, 64)
			require.NoError(t, err)
			require.True(t, first == r || first >= r-2 && first < r, "revision %d holds %q", r, e.Value)
		}
	}
	return found
}
