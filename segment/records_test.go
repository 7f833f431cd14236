package segment

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// testRecord is the encoder the tests give Records: every field of the
// entry.
func testRecord(dst []byte, e *Entry) []byte {
	dst = binary.AppendVarint(dst, e.Rev)
	dst = binary.AppendUvarint(dst, uint64(len(e.Key)))
	dst = append(dst, e.Key...)
	dst = binary.AppendVarint(dst, e.Sec)
	dst = binary.AppendVarint(dst, int64(e.Nsec))
	dst = binary.AppendUvarint(dst, uint64(e.Zone))
	dst = append(dst, byte(e.Op))
	if e.HasTTL {
		dst = binary.AppendVarint(append(dst, 1), e.Expires)
	}
	return append(dst, e.Value...)
}

// TestRecords reads random ranges of random segments as records, with
// budgets from none (over a short range: every pass starts again until
// it holds one bucket of one revision) to all, against Revisions: the same entries, in the
// same order. Some segments keep one entry in thirty of their revisions,
// so that buckets are put in order by sorting, not by placing.
func TestRecords(t *testing.T) {
	many := make([]string, 200)
	for i := range many {
		many[i] = fmt.Sprintf("k/%06d", i*7%1000)
	}
	runs := 40
	if testing.Short() {
		runs = 4
	}
	for it := range runs {
		rng := rand.New(rand.NewPCG(uint64(it), 5))
		bs := []int{1, 64, 256, DefaultBlockSize}[it%4]
		const n = 1500
		all := randomEntriesOf(rng, n, many)
		if it%3 == 0 {
			all = randomEntries(rng, n)
		}
		keep := func(Entry) bool { return rng.IntN(5) != 0 }
		if it/4%2 == 1 {
			keep = func(Entry) bool { return rng.IntN(30) == 0 }
		}
		kept := slices.DeleteFunc(slices.Clone(all), func(e Entry) bool { return !keep(e) })
		tf := int64(1)
		if it%2 == 1 {
			tf = 1 + rng.Int64N(400)
		}
		r := orderSegment(t, all, kept, n, bs, tf)
		for range 6 {
			lo := rng.Int64N(n + 2)
			hi := lo + rng.Int64N(n+2-lo)
			if rng.IntN(3) == 0 {
				lo, hi = 0, n+10
			}
			budget := []int{1000, 5000, 1 << 30}[rng.IntN(3)]
			if hi-lo < 20 {
				budget = 0
			}
			var want [][]byte
			for e, err := range r.Revisions(lo, hi) {
				require.NoError(t, err)
				want = append(want, testRecord(nil, &e))
			}
			var got [][]byte
			for rec, err := range r.Records(lo, hi, budget, testRecord) {
				require.NoError(t, err)
				var e Entry
				e.Rev, _ = binary.Varint(rec.Bytes)
				require.Equal(t, e.Rev, rec.Rev)
				got = append(got, slices.Clone(rec.Bytes))
			}
			require.Equal(t, len(want), len(got), "it %d, block size %d, budget %d, [%d, %d], times from %d", it, bs, budget, lo, hi, tf)
			for i := range want {
				require.Equal(t, want[i], got[i], "it %d, record %d", it, i)
			}
		}
	}
}

// TestRecordsStop: a caller that stops early gets no more records, and no
// error.
func TestRecordsStop(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	all := randomEntries(rng, 500)
	r := orderSegment(t, all, all, 500, 256, 1)
	for _, budget := range []int{0, 1 << 20} {
		k := 0
		for rec, err := range r.Records(1, 500, budget, testRecord) {
			require.NoError(t, err)
			if k++; rec.Rev == 250 {
				break
			}
		}
		require.Equal(t, 250, k)
	}
}

// TestRecordsForged: a locator that names a block without its revision's
// entry (or for a revision without one), or not the block that holds
// it, or says a revision has no entry where a block holds one, is ErrCorrupt to Records even where every
// checksum holds.
func TestRecordsForged(t *testing.T) {
	es := forgeableEntries()
	without6 := slices.DeleteFunc(slices.Clone(es), func(e Entry) bool { return e.Rev == 6 })
	for k, c := range []struct {
		es    []Entry
		forge func(locs []int32)
	}{
		{es, func(locs []int32) { locs[5] = locs[5]%2 + 1 }}, // names another block
		{es, func(locs []int32) { locs[5] = -1 }},            // no entry where there is
		{es, func(locs []int32) { locs[5] = 0 }},
		{without6, func(locs []int32) { locs[5] = 1 }}, // a block for a revision without an entry
	} {
		r := forgedSegment(t, c.es, c.forge)
		for _, budget := range []int{0, 1 << 20} {
			var last error
			for _, err := range r.Records(1, 400, budget, testRecord) {
				last = err
			}
			require.ErrorIs(t, last, ErrCorrupt, "forgery %d, budget %d", k, budget)
		}
	}
}

// TestRecordsTwice: two entries of one revision (which a Writer refuses
// to write) are ErrCorrupt when a bucket is put in order, by placing or
// by sorting.
func TestRecordsTwice(t *testing.T) {
	for _, width := range []int64{4, 1000} { // placed; sorted
		w := recWalk{budget: 1 << 20, width: width, enc: func(dst []byte, e *Entry) []byte { return append(dst, byte(e.Rev)) }}
		for _, rev := range []int64{3, 1, 3} {
			w.add(0, &Entry{Rev: rev}, 0)
		}
		_, err := w.order(0, 0, width-1)
		require.ErrorIs(t, err, ErrCorrupt, "width %d", width)
		w.release(0)
		for _, rev := range []int64{3, 1, 2} {
			w.add(0, &Entry{Rev: rev}, 0)
		}
		at, err := w.order(0, 0, width-1)
		require.NoError(t, err)
		for r := range int64(4) {
			page, off, ok := at(r)
			require.Equal(t, r != 0, ok, "width %d, revision %d", width, r)
			if ok {
				require.Equal(t, byte(r), w.buckets[0][page][off+recHeader])
			}
		}
	}
}
