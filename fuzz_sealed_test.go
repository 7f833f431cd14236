package revkv_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv"
	"github.com/revkv/revkv/segment"
	"github.com/revkv/revkv/vfs"
)

// FuzzOpenSealed damages the manifest or a segment of a sealed directory
// (revisions 1 to about 60 in two segments, the rest to about 80 in the
// log, as a crash leaves it) as FuzzOpen damages
// logs, then opens it and reads every key's history and re-hashes the
// sealed entries: Open refuses with ErrCorrupt, or every entry a read
// yields is the one written, and every failure is ErrCorrupt (contract
// §12.5): damage to old history is never a wrong answer.
func FuzzOpenSealed(f *testing.F) {
	m := vfs.NewMem()
	s, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(m), revkv.WithMemory(1<<40))
	require.NoError(f, err)
	for i := 0; s.Rev() < 80; i++ {
		_, err := writeNext(s, i%4 == 0)
		require.NoError(f, err)
		if r := s.Rev(); r >= 30 && r < 33 || r >= 60 && r < 63 {
			require.NoError(f, s.Checkpoint())
		}
	}
	head := int(s.Rev())
	// A crash, not a Close, which would seal the log's tail too: the
	// directory keeps revisions in all three places.
	m = m.Crash(nil)
	require.NoError(f, s.Close())
	man, ok, err := segment.ReadManifest(m, "/db")
	require.NoError(f, err)
	require.True(f, ok)
	require.Len(f, man.Segments, 2)
	files := []string{"/db/" + segment.ManifestName, "/db/" + man.Segments[0].Name(), "/db/" + man.Segments[1].Name()}
	orig := make([][]byte, len(files))
	for i, name := range files {
		orig[i] = m.Bytes(name)
	}
	for op := range byte(6) {
		f.Add(byte(0), op, uint16(20), uint16(3), []byte{0x40})
		f.Add(byte(1), op, uint16(40), uint16(9), []byte{0, 0, 0, 0})
		f.Add(byte(2), op, uint16(300), uint16(2), []byte{1, 2})
	}
	f.Fuzz(func(t *testing.T, file, op byte, at, n uint16, data []byte) {
		i := int(file) % len(files)
		b := damage(orig[i], op, int(at), int(n), data)
		c := m.Crash(nil)
		c.WriteFile(files[i], b)
		s, err := revkv.Open("/db", revkv.StringCodec(), revkv.WithFS(c))
		if err != nil {
			require.ErrorIs(t, err, revkv.ErrCorrupt)
			return
		}
		defer s.Close()
		same := slices.Equal(b, orig[i])
		seen := 0
		for k := range 37 {
			for e, err := range s.HistoryRange(fmt.Sprint("k", k), 0, 0) {
				if err != nil {
					require.False(t, same, "undamaged, yet %v", err)
					require.True(t, errors.Is(err, revkv.ErrCorrupt), "not ErrCorrupt: %v", err)
					break
				}
				r := int64(e.Rev)
				require.Equal(t, crashKey(r), e.Key, "revision %d", r)
				first, err := strconv.ParseInt(e.Value, 10, 64)
				require.NoError(t, err, "revision %d holds %q", r, e.Value)
				require.True(t, first == r || first >= r-2 && first < r, "revision %d holds %q", r, e.Value)
				seen++
			}
		}
		if same {
			require.Equal(t, head, seen, "every revision, once")
		}
		if _, err := s.VerifySealed(nil); err != nil {
			require.False(t, same, "undamaged, yet %v", err)
			require.ErrorIs(t, err, revkv.ErrCorrupt)
		}
	})
}
