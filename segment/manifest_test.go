package segment

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/revkv/revkv/vfs"
)

func manifestOf(gen int64, ranges ...[2]int64) *Manifest {
	m := &Manifest{Gen: gen}
	for _, r := range ranges {
		m.Segments = append(m.Segments, Ref{First: r[0], Last: r[1], Size: 1000 + r[1], Digest: [32]byte{byte(r[1])}})
	}
	return m
}

func TestManifestRoundTrip(t *testing.T) {
	fsys := vfs.NewMem()
	require.NoError(t, fsys.MkdirAll("/db"))
	_, ok, err := ReadManifest(fsys, "/db")
	require.NoError(t, err)
	require.False(t, ok, "a directory that never sealed has none")
	for _, m := range []*Manifest{manifestOf(1), manifestOf(2, [2]int64{1, 10}), manifestOf(3, [2]int64{1, 10}, [2]int64{11, 11}, [2]int64{40, 1 << 60})} {
		require.NoError(t, WriteManifest(fsys, "/db", m))
		got, ok, err := ReadManifest(fsys, "/db")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, m.Gen, got.Gen)
		require.Equal(t, len(m.Segments), len(got.Segments))
		for i := range m.Segments {
			require.Equal(t, m.Segments[i], got.Segments[i])
		}
	}
	for _, bad := range []*Manifest{
		manifestOf(4, [2]int64{1, 10}, [2]int64{10, 20}), // overlapping
		manifestOf(4, [2]int64{11, 20}, [2]int64{1, 10}), // out of order
		manifestOf(4, [2]int64{0, 10}),                   // revision 0
		manifestOf(4, [2]int64{5, 4}),                    // backwards
	} {
		require.ErrorIs(t, WriteManifest(fsys, "/db", bad), ErrOrder, "%+v", bad)
	}
	got, _, err := ReadManifest(fsys, "/db")
	require.NoError(t, err)
	require.Equal(t, int64(3), got.Gen, "a refused manifest leaves the old one")
}

// TestManifestDamage flips every bit of two bytes in each byte of a
// manifest and cuts it at every length: each is ErrCorrupt, but a version
// rewritten with its checksum, which is ErrVersion.
func TestManifestDamage(t *testing.T) {
	b := AppendManifest(nil, manifestOf(9, [2]int64{1, 10}, [2]int64{11, 300}))
	for i := range b {
		for _, bit := range []byte{0x01, 0x80} {
			bad := bytes.Clone(b)
			bad[i] ^= bit
			_, err := DecodeManifest(bad)
			require.ErrorIs(t, err, ErrCorrupt, "byte %d bit %#x", i, bit)
		}
	}
	for n := range len(b) {
		_, err := DecodeManifest(b[:n])
		require.ErrorIs(t, err, ErrCorrupt, "cut at %d", n)
	}
	bad := bytes.Clone(b)
	bad[8]++
	copy(bad[len(bad)-4:], le32(checksum(bad[:len(bad)-4])))
	_, err := DecodeManifest(bad)
	require.ErrorIs(t, err, ErrVersion)
}

// TestManifestCrash crashes the machine after every operation of a
// manifest's replacement, and at its end: what the crash leaves reads as
// the old manifest or the new one, and the new one once WriteManifest
// returned.
func TestManifestCrash(t *testing.T) {
	for seed := int64(0); seed < 20; seed++ {
		for k := 0; ; k++ {
			rng := rand.New(rand.NewPCG(uint64(seed), 1))
			fsys := vfs.NewMem()
			require.NoError(t, fsys.MkdirAll("/db"))
			require.NoError(t, fsys.SyncDir("/"))
			require.NoError(t, WriteManifest(fsys, "/db", manifestOf(1, [2]int64{1, 10})))
			start := fsys.Ops()
			fsys.CrashAfter(k, rng)
			err := WriteManifest(fsys, "/db", manifestOf(2, [2]int64{1, 10}, [2]int64{11, 20}))
			crashed := fsys.Crashed()
			done := crashed == nil
			if done {
				require.NoError(t, err)
				crashed = fsys.Crash(rng)
			}
			what := fmt.Sprintf("seed %d, crash after operation %d of the write", seed, k)
			m, ok, err := ReadManifest(crashed, "/db")
			require.NoError(t, err, what)
			require.True(t, ok, what)
			if done {
				require.Equal(t, int64(2), m.Gen, "%s: the write returned, so it stays", what)
			} else {
				require.Contains(t, []int64{1, 2}, m.Gen, what)
			}
			if done {
				require.Greater(t, fsys.Ops()-start, 3, "the write's operations were all walked")
				break
			}
		}
	}
}

// FuzzManifest decodes arbitrary bytes as a manifest: never a panic, and
// every failure is ErrCorrupt or ErrVersion.
func FuzzManifest(f *testing.F) {
	f.Add(AppendManifest(nil, manifestOf(3, [2]int64{1, 10}, [2]int64{11, 300})))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeManifest(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("%v is neither ErrCorrupt nor ErrVersion", err)
			}
			return
		}
		again, err := DecodeManifest(AppendManifest(nil, &m))
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("a manifest that decodes does not survive its own encoding: %v", err)
		}
	})
}
