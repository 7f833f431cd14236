package segment

import (
	"fmt"
	"iter"
)

// orderCache is how many decoded blocks Revisions keeps: revisions close
// together are mostly written to keys close together or to the same keys,
// whose entries share blocks.
const orderCache = 16

// Revisions yields the segment's entries with lo <= Rev <= hi in revision
// order, from TimesFrom on (the revisions below it have no locator: a
// caller finds their few entries with All). Each revision's locator names
// the block of its entry; the last orderCache blocks decoded are kept, so
// that a run of revisions in nearby blocks reads each block once. Memory
// is bounded by the cache, however long the range.
func (sr *Reader) Revisions(lo, hi int64) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		if err := sr.Load(); err != nil {
			yield(Entry{}, err)
			return
		}
		lo, hi = max(lo, sr.footer.TimesFrom), min(hi, sr.footer.Last)
		var (
			cache   [orderCache]decoded
			next    int // the cache slot to fill next
			tBlock  = -1
			locs    []int32
			tFirst  int64 // the revision of locs[0]
			decoded = func(b int32) (*decoded, error) {
				for i := range cache {
					if cache[i].es != nil && cache[i].block == b {
						return &cache[i], nil
					}
				}
				c := &cache[next]
				next = (next + 1) % orderCache
				*c = decoded{block: b, at: make(map[int64]int)}
				for e, err := range sr.block(int(b)) {
					if err != nil {
						return nil, err
					}
					c.at[e.Rev] = len(c.es)
					c.es = append(c.es, e)
				}
				return c, nil
			}
		)
		for rev := lo; rev <= hi; rev++ {
			k := rev - sr.footer.TimesFrom
			if i := int(k / timesPerBlock); i != tBlock {
				var err error
				if _, locs, err = sr.times(i); err != nil {
					yield(Entry{}, err)
					return
				}
				tBlock, tFirst = i, sr.footer.TimesFrom+int64(i)*timesPerBlock
			}
			b := locs[rev-tFirst]
			if b < 0 {
				continue // no entry: a trim dropped it before the seal
			}
			c, err := decoded(b)
			if err != nil {
				yield(Entry{}, err)
				return
			}
			j, ok := c.at[rev]
			if !ok {
				yield(Entry{}, fmt.Errorf("%w: revision %d's locator names block %d, which does not hold it", ErrCorrupt, rev, b))
				return
			}
			if !yield(c.es[j], nil) {
				return
			}
		}
	}
}

// decoded is a block's entries, decoded once for Revisions, with each
// one's index by revision.
type decoded struct {
	block int32
	es    []Entry
	at    map[int64]int
}
