package segment

import (
	"fmt"
	"iter"
	"slices"
)

// orderWindow is how many revisions Revisions gathers at a time. Each
// block holding an entry of a window is decoded once for it; when every
// revision writes another key, as a store's round of many keys does, that
// is every block of the segment, so fewer, larger windows decode less, at
// the price of the window's entries held at once.
var orderWindow int64 = 1 << 17 // a variable for the tests

// Revisions yields the segment's entries with lo <= Rev <= hi in revision
// order, from TimesFrom on (the revisions below it have no locator: a
// caller finds their few entries with All). It works a window of
// revisions at a time: the window's locators name the blocks that hold
// its entries; each of those is decoded once, and its entries in the
// window are set in place by revision, their values copied out of the
// block. Memory is bounded by the window, however long the range. Damage
// (an entry its locator does not place in that block, a locator naming a
// block without it) is ErrCorrupt.
func (sr *Reader) Revisions(lo, hi int64) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		if err := sr.Load(); err != nil {
			yield(Entry{}, err)
			return
		}
		lo, hi = max(lo, sr.footer.TimesFrom), min(hi, sr.footer.Last)
		var w orderWin
		for from := lo; from <= hi; from += orderWindow {
			to := min(from+orderWindow-1, hi)
			if err := w.gather(sr, from, to); err != nil {
				yield(Entry{}, err)
				return
			}
			for i := range w.es {
				if w.locs[i] >= 0 && !yield(w.es[i], nil) {
					return
				}
			}
		}
	}
}

// orderWin is one window of Revisions: each revision's locator, and its
// entry once gathered.
type orderWin struct {
	locs   []int32 // of revision from+i; < 0: no entry
	es     []Entry // of revision from+i, where locs[i] >= 0
	blocks []int32 // the blocks the locators name, ascending
	marked []bool  // by block, for a wide window: a locator names it
	buf    []byte  // a block's bytes, read again for each block
}

// gather fills w with revisions [from, to]'s entries: it reads their
// locators, then each block they name once, in order.
func (w *orderWin) gather(sr *Reader, from, to int64) error {
	if err := w.locate(sr, from, to); err != nil {
		return err
	}
	if err := w.fill(sr, from, to); err != nil {
		return err
	}
	for i, b := range w.locs {
		if b >= 0 && w.es[i].Rev == 0 {
			return fmt.Errorf("%w: revision %d's locator names block %d, which does not hold it", ErrCorrupt, from+int64(i), b)
		}
	}
	return nil
}

// locate reads the locators of revisions [from, to] into w.locs, and the
// blocks they name into w.blocks, ascending.
func (w *orderWin) locate(sr *Reader, from, to int64) error {
	n := int(to - from + 1)
	w.locs, w.blocks = slices.Grow(w.locs[:0], n)[:n], w.blocks[:0]
	// A window of few revisions sorts the blocks its locators name; a
	// wide one, which would spend more on the sort than on the blocks,
	// marks them in a table of the segment's blocks.
	wide := n >= len(sr.fences)/8
	if wide && w.marked == nil {
		w.marked = make([]bool, len(sr.fences))
	}
	// Entries are yielded by value, so the array serves every window; the
	// values are copied into a new array for each (a caller may keep them).
	w.es = slices.Grow(w.es[:0], n)[:n]
	clear(w.es)
	tBlock, tFirst := -1, int64(0)
	var locs []int32
	for r := from; r <= to; r++ {
		if i := int((r - sr.footer.TimesFrom) / timesPerBlock); i != tBlock {
			var err error
			if _, locs, err = sr.times(i); err != nil {
				return err
			}
			tBlock, tFirst = i, sr.footer.TimesFrom+int64(i)*timesPerBlock
		}
		b := locs[r-tFirst]
		w.locs[r-from] = b
		switch {
		case b >= 0 && wide:
			w.marked[b] = true // times checked it is a block of the segment
		case b >= 0:
			w.blocks = append(w.blocks, b)
		}
	}
	if wide {
		for i, m := range w.marked {
			if m {
				w.blocks, w.marked[i] = append(w.blocks, int32(i)), false
			}
		}
	} else {
		slices.Sort(w.blocks)
		w.blocks = slices.Compact(w.blocks)
	}
	return nil
}

// fill reads each of w's blocks and copies out the entries of revisions
// [from, to], each of which must be in the block its locator names.
func (w *orderWin) fill(sr *Reader, from, to int64) error {
	var vals []byte // the window's values, copied out of their blocks
	for _, bi := range w.blocks {
		b, err := sr.load(int(bi), w.buf)
		if err != nil {
			return err
		}
		w.buf = b.entries[:0]
		c := sr.cursorAt(b, 0, nil)
		var key string
		for c.next() {
			if c.newKey {
				key = ""
			}
			r := c.e.Rev
			if r < from || r > to {
				continue
			}
			if w.locs[r-from] != bi || w.es[r-from].Rev != 0 {
				return fmt.Errorf("%w: revision %d is in block %d, its locator names block %d", ErrCorrupt, r, bi, w.locs[r-from])
			}
			if key == "" {
				key = string(c.k)
			}
			e := c.e
			e.Key = key
			if len(e.Value) > 0 {
				at := len(vals)
				vals = append(vals, e.Value...)
				e.Value = vals[at:len(vals):len(vals)]
			}
			w.es[r-from] = e
		}
		if c.err != nil {
			return c.err
		}
	}
	return nil
}
