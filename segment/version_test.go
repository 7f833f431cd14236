package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadsVersion1: a segment written by the build before flagSameZone
// (testdata/v1.seg: randomEntriesOf seed 1, 2, 500 revisions and the keys
// randomEntries drew from then, 256-byte blocks, as build writes them) reads back whole, every way.
func TestReadsVersion1(t *testing.T) {
	file, err := os.ReadFile("testdata/v1.seg")
	require.NoError(t, err)
	require.Equal(t, uint32(1), binary.LittleEndian.Uint32(file[len(file)-16:]), "the fixture's footer version")
	v1Keys := []string{"", "a", "ab", "abc", "b", "b\xff\x00", "k/00000001", "k/00000002", strings.Repeat("long", 300)}
	es := randomEntriesOf(rand.New(rand.NewPCG(1, 2)), 500, v1Keys)
	err = readAll(Open, file, es)
	require.EqualError(t, err, "no damage seen")
	r, err := Open(bytes.NewReader(file), int64(len(file)))
	require.NoError(t, err)
	for i := range es {
		got, ok, err := r.Get(es[i].Key, es[i].Rev)
		require.NoError(t, err)
		require.True(t, ok)
		same(t, es[i], got, "Get of a version 1 segment")
	}
}

// TestSameZoneSavesAByte: entries of one zone leave out their zone but at
// the restart points, and a version this build does not know is
// ErrVersion.
func TestSameZoneSavesAByte(t *testing.T) {
	es := randomEntries(rand.New(rand.NewPCG(3, 4)), 2000)
	one := make([]Entry, len(es))
	copy(one, es)
	for i := range one {
		one[i].Zone = 7
	}
	many := make([]Entry, len(es))
	copy(many, es)
	for i := range many {
		many[i].Zone = uint32(i % 2) // never the zone before it
	}
	a, b := build(t, one, 2000, DefaultBlockSize), build(t, many, 2000, DefaultBlockSize)
	require.Less(t, len(a), len(b)-len(es)*9/10, "one zone saves about a byte an entry")
	require.EqualError(t, readAll(Open, a, one), "no damage seen")
	require.EqualError(t, readAll(Open, b, many), "no damage seen")

	bad := bytes.Clone(a)
	binary.LittleEndian.PutUint32(bad[8:], version+1)
	binary.LittleEndian.PutUint32(bad[len(bad)-16:], version+1)
	binary.LittleEndian.PutUint32(bad[len(bad)-12:], checksum(bad[len(bad)-footerSize:len(bad)-12]))
	_, err := Open(bytes.NewReader(bad), int64(len(bad)))
	require.True(t, errors.Is(err, ErrVersion), "%v", err)
}
