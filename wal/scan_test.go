package wal

import (
	"bytes"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSpanCRC: the checksum of any span, from the prefix checksums, is the
// checksum of its bytes.
func TestSpanCRC(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	b := make([]byte, 5000)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	sums := blockCRCs(b)
	var shift crcShift
	spans := [][2]int{{0, 0}, {0, len(b)}, {crcBlock, 2 * crcBlock}, {crcBlock - 1, crcBlock + 1}, {len(b), len(b)}}
	for range 2000 {
		lo := rng.IntN(len(b) + 1)
		spans = append(spans, [2]int{lo, lo + rng.IntN(len(b)-lo+1)})
	}
	for _, sp := range spans {
		require.Equal(t, crc32.Checksum(b[sp[0]:sp[1]], castagnoli), spanCRC(b, sums, &shift, sp[0], sp[1]), "span %v", sp)
	}
}

// TestFindRecord: findRecord finds the first whole log record at or after
// an offset, at any offset (not only at record boundaries), and nothing in
// bytes that hold none: zeros, garbage, runs of a log kind's byte, a cut
// record, a record of a snapshot's kind.
func TestFindRecord(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	garbage := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	rec := frameOf(AppendBatch(nil, testBatch(5, 2)))
	big := appendFrame(nil, KindCompact, garbage(3*crcBlock+17))
	for _, c := range []struct {
		name string
		b    []byte
		from int
		want int
	}{
		{"empty", nil, 0, -1},
		{"zeros", make([]byte, 4000), 0, -1},
		{"garbage", garbage(20000), 0, -1},
		{"a run of 0x01", bytes.Repeat([]byte{1}, 20000), 0, -1},
		{"a run of 0x02, 0", bytes.Repeat([]byte{2, 0}, 5000), 0, -1},
		{"a record", rec, 0, 0},
		{"a record, from after its start", rec, 1, -1},
		{"a record cut", rec[:len(rec)-1], 0, -1},
		{"a snapshot's record", appendFrame(nil, KindKey, []byte("key")), 0, -1},
		{"garbage, then a record", append(garbage(333), rec...), 0, 333},
		{"zeros, then a big record", append(make([]byte, 1000), big...), 1, 1000},
		{"a run of 0x01, then a record", append(bytes.Repeat([]byte{1}, 3000), rec...), 0, 3000},
		{"a record, then garbage", append(bytes.Clone(rec), garbage(100)...), 0, 0},
	} {
		require.Equal(t, c.want, findRecord(c.b, c.from), c.name)
	}
}

// TestFindTail: damage is a whole record followed by whole records to the
// end of the file; a torn record whose value holds the bytes of a record,
// cut anywhere, is not. Bytes crafted as records within records are
// walked once each.
func TestFindTail(t *testing.T) {
	rec := frameOf(AppendBatch(nil, testBatch(5, 2)))
	two := append(bytes.Clone(rec), frameOf(AppendBatch(nil, testBatch(7, 1)))...)
	// A torn record whose value holds a whole record, then more of the value.
	inner := append(bytes.Clone(rec), bytes.Repeat([]byte("p"), 100)...)
	torn := frameOf(AppendBatch(nil, Batch{{Key: "k", Op: 1, Rev: 9, Sec: 1, Value: inner}}))
	var ambiguous []int
	for cut := 1; cut < len(torn); cut++ {
		if findTail(torn[:len(torn)-cut], 1, len(torn)-cut) >= 0 {
			ambiguous = append(ambiguous, cut)
		}
	}
	// Only a cut exactly at the end of the record inside the value reads
	// as a whole record running to the end of the file.
	require.Equal(t, []int{100}, ambiguous, "a torn record holding a record, cut short")
	require.Equal(t, 0, findTail(two, 0, len(two)), "two whole records to the end")
	require.Equal(t, len(rec), findTail(two, 1, len(two)), "the second one alone")
	require.Equal(t, -1, findTail(two[:len(two)-1], 0, len(two)-1), "the run ends torn: a torn write")
	require.Equal(t, 3, findTail(append([]byte{9, 9, 9}, two...), 0, 3+len(two)))

	// Records nested in the values of records, 5,000 deep, each run broken
	// by the one byte after it: linear, not quadratic.
	nested := []byte{}
	for range 5000 {
		nested = append(frameOf(AppendBatch(nil, Batch{{Key: "k", Op: 1, Rev: 1, Value: nested}})), 'x')
	}
	require.Equal(t, -1, findTail(nested, 1, len(nested)))
}
