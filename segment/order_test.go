package segment

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRevisions reads segments in revision order over random ranges, with
// a tenth of the revisions' entries dropped (as trims leave them), at
// several block sizes, and against brute force.
func TestRevisions(t *testing.T) {
	// Many windows, a few, one: a window ends inside a key's run of
	// entries, at a restart point and between them, with blocks of one
	// entry, of several and of many restart points.
	// Over few keys, each key's run is long; over many that share
	// prefixes, as a store's are, runs are short and a run that a window
	// resumes often starts a key sharing bytes with the one before.
	many := make([]string, 300)
	for i := range many {
		many[i] = fmt.Sprintf("k/%08d", i)
	}
	for i := range 24 {
		bs := []int{1, 256, DefaultBlockSize}[i%3]
		window := []int64{7, 100, 1000, 1 << 18}[i/3%4]
		rng := rand.New(rand.NewPCG(uint64(i), 11))
		const n = 5000
		all := randomEntries(rng, n)
		if i >= 12 {
			all = randomEntriesOf(rng, n, many)
		}
		byRev := slices.Clone(all)
		slices.SortFunc(byRev, func(a, b Entry) int { return cmp.Compare(a.Rev, b.Rev) })
		kept := slices.DeleteFunc(slices.Clone(all), func(Entry) bool { return rng.IntN(10) == 0 })
		var buf bytes.Buffer
		w := NewWriter(&buf, 1, n, bs)
		for i := range kept {
			require.NoError(t, w.Add(&kept[i]))
		}
		for _, e := range byRev {
			require.NoError(t, w.AddTime(e.Sec, e.Nsec))
		}
		_, err := w.Finish([32]byte{}, [32]byte{}, nil)
		require.NoError(t, err)
		r, err := Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		require.NoError(t, err)
		want := slices.Clone(kept)
		slices.SortFunc(want, func(a, b Entry) int { return cmp.Compare(a.Rev, b.Rev) })
		for _, rg := range [][2]int64{{1, n}, {0, n + 10}, {2000, 2000}, {4999, 5000}} {
			var got []Entry
			for e, err := range r.revisions(rg[0], rg[1], window) {
				require.NoError(t, err)
				got = append(got, e)
			}
			var w []Entry
			for _, e := range want {
				if e.Rev >= rg[0] && e.Rev <= rg[1] {
					w = append(w, e)
				}
			}
			require.Equal(t, len(w), len(got), "block size %d, window %d, Revisions(%d, %d)", bs, window, rg[0], rg[1])
			for i := range w {
				same(t, w[i], got[i], fmt.Sprint("entry ", i))
			}
		}
	}
}

// TestLocatorsForged: a locator that names a block without its revision's
// entry, or not the block that holds it, is ErrCorrupt to Revisions even
// where every checksum holds.
func TestLocatorsForged(t *testing.T) {
	es := forgeableEntries()
	for k, forge := range []func(locs []int32){
		func(locs []int32) { locs[5] = locs[5]%2 + 1 }, // names another block: the entry's is not it, or it lacks the entry
		func(locs []int32) { locs[5] = 0 },             // says there is no entry where there is
	} {
		r := forgedSegment(t, es, forge)
		var last error
		for _, err := range r.Revisions(1, 400) {
			last = err
		}
		require.ErrorIs(t, last, ErrCorrupt)
		if k == 0 { // alone, revision 6 is looked for in the block named only
			last = nil
			for _, err := range r.Revisions(6, 6) {
				last = err
			}
			require.ErrorIs(t, last, ErrCorrupt)
		}
	}
}

// forgeableEntries is 400 entries of revisions 1 to 400 over 40 keys, in
// key order.
func forgeableEntries() []Entry {
	es := make([]Entry, 400)
	for i := range es {
		es[i] = Entry{Key: fmt.Sprintf("k%03d", i%40), Rev: int64(i/40*40 + i%40 + 1), Op: Delete}
	}
	slices.SortFunc(es, func(a, b Entry) int { return cmp.Or(strings.Compare(a.Key, b.Key), cmp.Compare(a.Rev, b.Rev)) })
	return es
}

// forgedSegment writes es as a segment of revisions [1, 400] in blocks of
// 64 bytes, with its locators (by revision) changed by forge before they
// are written and checksummed, and opens it.
func forgedSegment(t *testing.T, es []Entry, forge func(locs []int32)) *Reader {
	return segmentOf64(t, es, 1, 400, forge)
}

// segmentOf64 writes es, one entry a revision or fewer, as a segment of
// revisions [first, last] in blocks of 64 bytes (more than two), forge
// (if not nil) changing its locators before they are written, and opens
// it.
func segmentOf64(t *testing.T, es []Entry, first, last int64, forge func(locs []int32)) *Reader {
	var buf bytes.Buffer
	w := NewWriter(&buf, first, last, 64)
	for i := range es {
		require.NoError(t, w.Add(&es[i]))
	}
	require.Greater(t, len(w.fences), 2)
	if forge != nil {
		forge(w.locs)
	}
	for r := first; ; r++ {
		require.NoError(t, w.AddTime(1, 0))
		if r == last {
			break
		}
	}
	_, err := w.Finish([32]byte{}, [32]byte{}, nil)
	require.NoError(t, err)
	r, err := Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	return r
}

// TestRevisionsRanges reads random ranges, which start and end inside
// the segment, in windows of 1 to 333 revisions, from segments whose
// time column starts above their first revision, against brute force: a
// run resumed in a later window meets the range's end, or its start.
func TestRevisionsRanges(t *testing.T) {
	many := make([]string, 200)
	for i := range many {
		many[i] = fmt.Sprintf("k/%06d", i*7%1000)
	}
	for it := range 60 {
		rng := rand.New(rand.NewPCG(uint64(it), 99))
		bs := []int{1, 64, 256, DefaultBlockSize}[it%4]
		const n = 1500
		keys := many
		if it%3 == 0 {
			keys = []string{"a", "ab", "abc", "abd", "b", "ba"}
		}
		tf := int64(1)
		if it%2 == 1 {
			tf = 1 + rng.Int64N(400)
		}
		all := randomEntriesOf(rng, n, keys)
		kept := slices.DeleteFunc(slices.Clone(all), func(Entry) bool { return rng.IntN(5) == 0 })
		r := orderSegment(t, all, kept, n, bs, tf)
		want := slices.Clone(kept)
		slices.SortFunc(want, func(a, b Entry) int { return cmp.Compare(a.Rev, b.Rev) })
		for range 8 {
			lo := rng.Int64N(n + 2)
			hi := lo + rng.Int64N(n+2-lo)
			window := []int64{1, 2, 3, 5, 17, 64, 333}[rng.IntN(7)]
			var got []Entry
			for e, err := range r.revisions(lo, hi, window) {
				require.NoError(t, err)
				got = append(got, e)
			}
			var w []Entry
			for _, e := range want {
				if e.Rev >= max(lo, tf) && e.Rev <= hi {
					w = append(w, e)
				}
			}
			require.Equal(t, len(w), len(got), "it %d, block size %d, window %d, [%d, %d], times from %d", it, bs, window, lo, hi, tf)
			for i := range w {
				same(t, w[i], got[i], fmt.Sprint("entry ", i))
			}
		}
	}
}

// orderSegment writes kept (sorted by key) as a segment of revisions [1,
// n] whose time column, taken from all, starts at tf, and opens it.
func orderSegment(t *testing.T, all, kept []Entry, n int64, bs int, tf int64) *Reader {
	byRev := slices.Clone(all)
	slices.SortFunc(byRev, func(a, b Entry) int { return cmp.Compare(a.Rev, b.Rev) })
	var buf bytes.Buffer
	w := NewWriter(&buf, 1, n, bs)
	if tf > 1 {
		require.NoError(t, w.TimesFrom(tf))
	}
	for i := range kept {
		require.NoError(t, w.Add(&kept[i]))
	}
	for _, e := range byRev[tf-1:] {
		require.NoError(t, w.AddTime(e.Sec, e.Nsec))
	}
	_, err := w.Finish([32]byte{}, [32]byte{}, nil)
	require.NoError(t, err)
	r, err := Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	return r
}

// TestRevisionsHoldsFewRuns: over keys written once each, every entry is
// a run of its own, and a walk that kept a place for each would hold the
// segment. It holds at most about maxPending, decoding the blocks first
// named past that whole in each window, and still yields every entry.
func TestRevisionsHoldsFewRuns(t *testing.T) {
	const n, window = 40_000, 1000
	rng := rand.New(rand.NewPCG(1, 2))
	es := make([]Entry, n)
	for i := range es {
		es[i] = Entry{Key: fmt.Sprintf("user/%016x", rng.Uint64()), Rev: int64(i + 1), Op: Delete, Sec: 1}
	}
	kept := slices.Clone(es)
	slices.SortFunc(kept, func(a, b Entry) int { return strings.Compare(a.Key, b.Key) })
	r := mustIndex(t, orderSegment(t, es, kept, n, DefaultBlockSize, 1))
	w := r.walk(1, n, window)
	next := int64(1)
	for more := true; more; {
		var err error
		more, err = w.step()
		require.NoError(t, err)
		for i := range w.es {
			if w.locs[i] >= 0 {
				require.Equal(t, next, w.es[i].Rev)
				require.Equal(t, es[next-1].Key, w.es[i].Key)
				next++
			}
		}
		// About twice the window, however many keys: not one a run.
		require.LessOrEqual(t, w.pending, 3*window, "resume points held")
		require.LessOrEqual(t, len(w.runs), 3*window+r.blocks(), "slots of runs")
	}
	require.Equal(t, int64(n+1), next)
}

// TestRevisionsNearTheTop: a window's end is not computed past the
// segment's last revision, where from+window would wrap around.
func TestRevisionsNearTheTop(t *testing.T) {
	const last = math.MaxInt64 - 1000
	const first = last - 40
	r := topSegment(t, first, last)
	for _, window := range []int64{1, 7, 1 << 17} {
		next := int64(first)
		for e, err := range r.revisions(0, math.MaxInt64, window) {
			require.NoError(t, err)
			require.Equal(t, next, e.Rev, "window %d", window)
			next++
		}
		require.Equal(t, int64(last+1), next, "window %d: every revision to the last", window)
	}
}
