package segment

import (
	"bytes"
	"cmp"
	"fmt"
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
	es := make([]Entry, 400)
	for i := range es {
		es[i] = Entry{Key: fmt.Sprintf("k%03d", i%40), Rev: int64(i/40*40 + i%40 + 1), Op: Delete}
	}
	slices.SortFunc(es, func(a, b Entry) int { return cmp.Or(strings.Compare(a.Key, b.Key), cmp.Compare(a.Rev, b.Rev)) })
	for k, forge := range []func(locs []int32){
		func(locs []int32) { locs[5] = locs[5]%2 + 1 }, // names another block: the entry's is not it, or it lacks the entry
		func(locs []int32) { locs[5] = 0 },             // says there is no entry where there is
	} {
		var buf bytes.Buffer
		w := NewWriter(&buf, 1, 400, 64)
		for i := range es {
			require.NoError(t, w.Add(&es[i]))
		}
		require.Greater(t, len(w.fences), 2)
		forge(w.locs)
		for range 400 {
			require.NoError(t, w.AddTime(1, 0))
		}
		_, err := w.Finish([32]byte{}, [32]byte{}, nil)
		require.NoError(t, err)
		r, err := Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		require.NoError(t, err)
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
