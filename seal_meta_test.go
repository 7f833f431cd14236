package revkv

import (
	"testing"

	"github.com/revkv/revkv/chain"
	"github.com/stretchr/testify/require"
)

// TestSegMeta: a meta with marks decodes to what was encoded, one without
// (a segment from before marks) to no marks, and every cut or mark out of
// order or out of the segment's range is refused.
func TestSegMeta(t *testing.T) {
	var zt zoneTable
	zt.number("", 0)
	zt.number("America/New_York", -5*3600)
	marks := []digestMark{{1024, chain.Digest{1}}, {2047, chain.Digest{2}}, {2048, chain.Digest{3}}}
	b := zt.encode(marks)
	m, err := decodeMeta(b, 1000, 3000)
	require.NoError(t, err)
	require.Equal(t, zt.zones, m.zones)
	require.Equal(t, marks, m.marks)
	mk, ok := m.markAt(2047)
	require.True(t, ok)
	require.Equal(t, int64(2047), mk.rev)
	_, ok = m.markAt(1023)
	require.False(t, ok)

	old, err := decodeMeta(zt.encode(nil), 1000, 3000)
	require.NoError(t, err)
	require.Empty(t, old.marks)

	for n := 1; n < len(b); n++ {
		if _, err := decodeMeta(b[:n], 1000, 3000); err == nil && n != len(zt.encode(nil)) {
			t.Fatalf("a meta cut to %d of %d bytes decodes", n, len(b))
		}
	}
	for _, r := range [][2]int64{{1025, 3000}, {1000, 2047}} { // a mark before the first, or after the last
		_, err := decodeMeta(b, r[0], r[1])
		require.Error(t, err, "range %v", r)
	}
	bad := zt.encode([]digestMark{{2000, chain.Digest{}}, {2000, chain.Digest{}}})
	_, err = decodeMeta(bad, 1000, 3000)
	require.Error(t, err, "two marks at one revision")
}
