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

// topSegment writes a segment of one entry a revision over [first, last],
// three keys, blocks of 64 bytes, and opens it.
func topSegment(t *testing.T, first, last int64) *Reader {
	var es []Entry
	for r := first; ; r++ {
		es = append(es, Entry{Key: fmt.Sprint("k", r%3), Rev: r, Op: Delete, Sec: 1})
		if r == last {
			break
		}
	}
	slices.SortFunc(es, func(a, b Entry) int { return cmp.Or(strings.Compare(a.Key, b.Key), cmp.Compare(a.Rev, b.Rev)) })
	return segmentOf64(t, es, first, last, nil)
}

// TestRecordsNearTheTop reads segments whose last revisions are at or
// near MaxInt64 in revision order, with Revisions and Records (with a
// budget that holds all, and with one that makes many passes): every
// revision once, in order, to the last. A bucket's first or last
// revision past MaxInt64 once made Records leave revisions out, or
// panic; r++ past the last, and the Writer's time column, looped or
// broke at MaxInt64 itself.
func TestRecordsNearTheTop(t *testing.T) {
	for _, c := range []struct{ below, n int64 }{{5, 41}, {5, 1001}, {10, 4033}, {0, 41}, {0, 300}} {
		last := int64(math.MaxInt64) - c.below
		first := last - c.n + 1
		r := topSegment(t, first, last)
		read := map[string]func() []int64{
			"Revisions": func() (got []int64) {
				for e, err := range r.Revisions(0, math.MaxInt64) {
					require.NoError(t, err)
					got = append(got, e.Rev)
				}
				return got
			},
		}
		for _, budget := range []int{1 << 30, 2000} {
			read[fmt.Sprint("Records, budget ", budget)] = func() (got []int64) {
				for rec, err := range r.Records(0, math.MaxInt64, budget, testRecord) {
					require.NoError(t, err)
					got = append(got, rec.Rev)
					require.LessOrEqual(t, len(got), int(c.n), "past the last")
				}
				return got
			}
		}
		for name, f := range read {
			got := f()
			require.Len(t, got, int(c.n), "%s, last %d below MaxInt64, %d revisions", name, c.below, c.n)
			for i, rev := range got {
				require.Equal(t, first+int64(i), rev, "%s", name)
			}
		}
	}
}

// TestRecordsMidBudgets: budgets of a few pages, where a pass lets go of
// some buckets and goes on under its budget, against Revisions.
func TestRecordsMidBudgets(t *testing.T) {
	runs := 6
	if testing.Short() {
		runs = 2
	}
	for it := range runs {
		rng := rand.New(rand.NewPCG(uint64(it), 77))
		const n = 30000
		all := randomEntries(rng, n)
		for i := range all {
			if len(all[i].Value) > 1000 {
				all[i].Value = all[i].Value[:100]
			}
		}
		kept := slices.Clone(all)
		if it%2 == 1 {
			kept = slices.DeleteFunc(kept, func(Entry) bool { return rng.IntN(7) != 0 })
		}
		r := orderSegment(t, all, kept, n, DefaultBlockSize, 1+int64(it)*100)
		var want [][]byte
		for e, err := range r.Revisions(0, n) {
			require.NoError(t, err)
			want = append(want, testRecord(nil, &e))
		}
		for _, budget := range []int{3 << 16, 5<<16 + 100, 17 << 16, 40 << 16} {
			i := 0
			for rec, err := range r.Records(0, n, budget, testRecord) {
				require.NoError(t, err)
				require.Less(t, i, len(want))
				require.Equal(t, want[i], rec.Bytes, "it %d, budget %d, record %d", it, budget, i)
				i++
			}
			require.Equal(t, len(want), i, "it %d, budget %d", it, budget)
		}
	}
}

// TestRecordsConcurrent: walks beside one another, sharing the pool of
// pages, each yield what Revisions does.
func TestRecordsConcurrent(t *testing.T) {
	var rs []*Reader
	var wants [][][]byte
	for it := range 4 {
		rng := rand.New(rand.NewPCG(uint64(it), 78))
		const n = 3000
		all := randomEntries(rng, n)
		r := orderSegment(t, all, all, n, 256, 1)
		var w [][]byte
		for e, err := range r.Revisions(0, n) {
			require.NoError(t, err)
			w = append(w, testRecord(nil, &e))
		}
		rs, wants = append(rs, r), append(wants, w)
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			r, want := rs[g%4], wants[g%4]
			for _, budget := range []int{1 << 17, 5 << 16, 1 << 30} {
				i := 0
				for rec, err := range r.Records(0, 1<<40, budget, testRecord) {
					switch {
					case err != nil:
						errs <- err
						return
					case i >= len(want) || !bytes.Equal(rec.Bytes, want[i]):
						errs <- fmt.Errorf("walk %d, budget %d: record %d differs", g, budget, i)
						return
					}
					i++
				}
				if i != len(want) {
					errs <- fmt.Errorf("walk %d, budget %d: %d records of %d", g, budget, i, len(want))
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		require.NoError(t, <-errs)
	}
}
