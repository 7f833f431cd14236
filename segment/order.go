package segment

import (
	"fmt"
	"iter"
	"slices"
)

// orderWindow is how many revisions Revisions gathers at a time: the
// window's entries are held at once, so it bounds the walk's memory.
const orderWindow = 1 << 17

// spanBytes bounds one read of Revisions: the blocks of a window that
// follow one another in the file are read together, as one system call.
const spanBytes = 256 << 10

// valChunk is the size of the arrays Revisions copies values into: a
// window's values are never moved once copied (a caller may keep them).
const valChunk = 64 << 10

// Revisions yields the segment's entries with lo <= Rev <= hi in revision
// order, from TimesFrom on (the revisions below it have no locator: a
// caller finds their few entries with All).
//
// It works a window of revisions at a time, and decodes each entry at
// most twice however many windows there are. A block is sorted by key, and a
// key's entries in it are a run of rising revisions (cut at each restart
// point), so a window takes from each run the entries up to its end and
// leaves a place to resume the run (orderWalk.resume) in the list of the
// window its next entry falls in. A block is decoded whole in the first
// window whose locators name it (the entries past that window, once for
// nothing); later windows decode from their resume points only. So that memory stays bounded by the window whatever the
// keys (a segment of keys written once each has a run an entry), the walk
// holds at most maxPending resume points: a block first named past that
// is decoded whole again in each window that names it, keeping no place.
// Damage (an entry its locator does not place in that block, a locator
// naming a block without it) is ErrCorrupt.
func (sr *Reader) Revisions(lo, hi int64) iter.Seq2[Entry, error] {
	return sr.revisions(lo, hi, orderWindow)
}

// revisions is Revisions with windows of window revisions.
func (sr *Reader) revisions(lo, hi, window int64) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		sr, err := sr.scan()
		if err != nil {
			yield(Entry{}, err)
			return
		}
		lo, hi = max(lo, sr.footer.TimesFrom), min(hi, sr.footer.Last)
		if lo > hi {
			return
		}
		w := sr.walk(lo, hi, window)
		for {
			more, err := w.step()
			if err != nil {
				yield(Entry{}, err)
				return
			}
			for i := range w.es {
				if w.locs[i] >= 0 && !yield(w.es[i], nil) {
					return
				}
			}
			if !more {
				return
			}
		}
	}
}

// walk starts a walk of revisions [lo, hi] of the loaded segment, lo <= hi.
func (sr rd) walk(lo, hi, window int64) *orderWalk {
	w := &orderWalk{sr: sr, lo: lo, hi: hi, window: window, maxPending: 2*int(window) + 256, next: lo}
	w.blocks = make([]blockWalk, sr.blocks())
	w.later = make([][]int32, (hi-lo)/window+1)
	return w
}

// step gathers the next window: false once it was the last.
func (w *orderWalk) step() (more bool, err error) {
	from, to := w.next, w.hi // to is from+window-1, where that does not pass hi (nor overflow)
	if w.hi-from >= w.window {
		to = from + w.window - 1
	}
	w.next = to + 1
	return to < w.hi, w.gather(from, to)
}

// orderWalk is one walk of Revisions over [lo, hi].
type orderWalk struct {
	sr     rd
	lo, hi int64
	window int64
	next   int64       // the first revision of the next window
	blocks []blockWalk // by block
	// runs holds the resume points, and a work item for each block a
	// window decodes whole; free lists the slots no longer used.
	runs []resume
	free []int32
	// later lists, by window, the runs with an entry in it; pending is
	// how many it holds, at most about maxPending.
	later      [][]int32
	pending    int
	maxPending int
	// The window being gathered.
	from, to int64
	locs     []int32 // of revision from+i; < 0: no entry
	es       []Entry // of revision from+i, where filled[i]
	filled   []bool  // es[i] is revision from+i's entry
	work     []int32 // the window's runs, by block
	spare    []int32 // byBlock's other array
	counts   []int32 // byBlock's, by block
	vals     []byte  // the window's values, copied out of their blocks, in chunks
	buf      []byte  // the blocks' bytes, read again for each span
	k        []byte  // the cursor's key
}

// blockWalk is what the walk knows of a block.
type blockWalk struct {
	started bool  // a window decoded it whole
	untrack bool  // it keeps no resume points: each window that names it decodes it whole
	named   int64 // for an untracked block, 1 + the last window that took it
}

// resume is where a run of a block's entries goes on: the offset of its
// next entry, and what decoding that entry needs from the one before it
// (its key, revision, time and zone). A run's resume is changed in place
// each time it goes on. An n of wholeFirst or wholeAgain is a work item:
// decode the block whole, the first time (keeping resume points, unless
// the block is untracked) or again.
type resume struct {
	blk, n, off int32
	zone        uint32
	rev, sec    int64 // the entry before's
	key         string
}

const (
	wholeFirst = -1
	wholeAgain = -2
)

// slot returns a free index of runs for r.
func (w *orderWalk) slot(r resume) int32 {
	if n := len(w.free); n > 0 {
		i := w.free[n-1]
		w.free = w.free[:n-1]
		w.runs[i] = r
		return i
	}
	w.runs = append(w.runs, r)
	return int32(len(w.runs) - 1)
}

// release frees slot i: its run is done, or its block decoded.
func (w *orderWalk) release(i int32) {
	w.runs[i].key = "" // let the key go
	w.free = append(w.free, i)
}

// postpone leaves run i, which goes on at revision rev, in the list of
// rev's window.
func (w *orderWalk) postpone(i int32, rev int64) {
	wi := (rev - w.lo) / w.window
	w.later[wi] = append(w.later[wi], i)
	w.pending++
}

// gather fills w with revisions [from, to]'s entries: it reads their
// locators, then each block with a run in the window once, in order.
func (w *orderWalk) gather(from, to int64) error {
	w.from, w.to = from, to
	if err := w.locate(); err != nil {
		return err
	}
	w.byBlock()
	w.vals = nil // the entries of the window before keep theirs
	offs := w.sr.offs
	for i := 0; i < len(w.work); {
		// One read for the blocks of a span that follow one another.
		lo, hi := w.runs[w.work[i]].blk, w.runs[w.work[i]].blk
		for j := i; j < len(w.work); j++ {
			if b := w.runs[w.work[j]].blk; b > hi {
				if b > hi+1 || offs[b+1]-offs[lo] > spanBytes {
					break
				}
				hi = b
			}
		}
		span, err := w.sr.readSpan(int(lo), int(hi), w.buf)
		if err != nil {
			return err
		}
		w.buf = span
		for i < len(w.work) && w.runs[w.work[i]].blk <= hi {
			bi := w.runs[w.work[i]].blk
			b, err := w.sr.check(int(bi), span[offs[bi]-offs[lo]:offs[bi+1]-offs[lo]])
			if err != nil {
				return err
			}
			for ; i < len(w.work) && w.runs[w.work[i]].blk == bi; i++ {
				if err := w.run(b, w.work[i]); err != nil {
					return err
				}
			}
		}
	}
	for i, b := range w.locs {
		if b >= 0 && !w.filled[i] {
			return fmt.Errorf("%w: revision %d's locator names block %d, which does not hold it", ErrCorrupt, from+int64(i), b)
		}
	}
	return nil
}

// byBlock sorts w.work by block, so that each block is read once: a
// counting sort, as the blocks are few beside the runs, and the order
// within a block does not matter (each run is decoded on its own).
func (w *orderWalk) byBlock() {
	if w.counts == nil {
		w.counts = make([]int32, w.sr.blocks()+1)
	}
	clear(w.counts)
	for _, r := range w.work {
		w.counts[w.runs[r].blk+1]++
	}
	for i := 1; i < len(w.counts); i++ {
		w.counts[i] += w.counts[i-1]
	}
	w.spare = slices.Grow(w.spare[:0], len(w.work))[:len(w.work)]
	for _, r := range w.work {
		at := &w.counts[w.runs[r].blk]
		w.spare[*at] = r
		*at++
	}
	w.work, w.spare = w.spare, w.work
}

// locate reads the locators of the window's revisions into w.locs, and
// sets w.work to the window's resume points and a work item for each
// block they name that no window before did, or that keeps no resume
// points.
func (w *orderWalk) locate() error {
	sr, from, to := w.sr, w.from, w.to
	n := int(to - from + 1)
	w.locs = slices.Grow(w.locs[:0], n)[:n]
	// Entries are yielded by value, so the array serves every window.
	w.es = slices.Grow(w.es[:0], n)[:n]
	w.filled = slices.Grow(w.filled[:0], n)[:n]
	clear(w.filled)
	wi := (from - w.lo) / w.window
	w.work = append(w.work[:0], w.later[wi]...)
	w.pending -= len(w.later[wi])
	w.later[wi] = nil
	tBlock, tFirst := -1, int64(0)
	var locs []int32
	for k := range to - from + 1 { // a count: r++ past to would wrap where to is MaxInt64
		r := from + k
		if i := int((r - sr.footer.TimesFrom) / timesPerBlock); i != tBlock {
			var err error
			if _, locs, err = sr.times(i); err != nil {
				return err
			}
			tBlock, tFirst = i, sr.footer.TimesFrom+int64(i)*timesPerBlock
		}
		b := locs[r-tFirst]
		w.locs[r-from] = b
		if b < 0 {
			continue
		}
		switch bw := &w.blocks[b]; { // times checked it is a block of the segment
		case !bw.started:
			bw.started, bw.named = true, wi+1
			w.work = append(w.work, w.slot(resume{blk: b, n: wholeFirst}))
		case bw.untrack && bw.named != wi+1:
			bw.named = wi + 1
			w.work = append(w.work, w.slot(resume{blk: b, n: wholeAgain}))
		}
	}
	return nil
}

// run decodes from run ri in block b: the whole block for a work item,
// else one run of a key's entries, up to the end of the window. It places
// the window's entries, and leaves a resume point in the window of the
// first one past it.
func (w *orderWalk) run(b loaded, ri int32) error {
	r := w.runs[ri] // a copy: decode takes slots of runs
	c := w.sr.cursorAt(b, 0, w.k)
	if r.n >= 0 {
		if int(r.off) > len(b.entries) { // the block read again is not the one decoded before
			return fmt.Errorf("%w: block at offset %d changed between two reads", ErrCorrupt, b.f.off)
		}
		c.d.b = b.entries[r.off:]
		c.n, c.j = int64(r.n), 0
		c.k = append(c.k[:0], r.key...)
		c.e = Entry{Rev: r.rev, Sec: r.sec, Zone: r.zone}
	}
	kept, err := w.decode(&c, b, &r, ri)
	w.k = c.k
	if !kept {
		w.release(ri)
	}
	return err
}

// decode is run's loop over c's entries. kept says ri holds the run's
// place in a later window.
func (w *orderWalk) decode(c *cursor, b loaded, r *resume, ri int32) (kept bool, err error) {
	whole := r.n < 0
	track := false
	if r.n == wholeFirst { // past maxPending, the block keeps no resume points
		bw := &w.blocks[r.blk]
		bw.untrack = w.pending >= w.maxPending
		track = !bw.untrack
	}
	key, placing := r.key, true
	for first := true; ; first = false {
		// A run ends where the next entry starts a key (every restart
		// point does): that run has its own resume point.
		if !whole && !first && (c.d.rest() == 0 || c.d.b[0]&flagNewKey != 0) {
			return false, nil
		}
		before := resume{blk: r.blk, n: int32(c.n), off: int32(len(b.entries) - c.d.rest()), zone: c.e.Zone, rev: c.e.Rev, sec: c.e.Sec, key: key}
		if !c.next() {
			return false, c.err
		}
		if c.newKey {
			key, placing = string(c.k), true
		}
		if !placing {
			continue
		}
		switch rev := c.e.Rev; {
		case rev < w.lo:
		case rev > w.hi:
			placing = false
		case rev < w.from && r.n != wholeAgain:
			return false, fmt.Errorf("%w: revision %d is in block %d, not in the block its locator names", ErrCorrupt, rev, r.blk)
		case rev > w.to && r.n == wholeAgain, rev < w.from:
		case rev <= w.to:
			if w.locs[rev-w.from] != r.blk || w.filled[rev-w.from] {
				return false, fmt.Errorf("%w: revision %d is in block %d, its locator names block %d", ErrCorrupt, rev, r.blk, w.locs[rev-w.from])
			}
			e := c.e
			e.Key = key
			if len(e.Value) > 0 {
				if len(w.vals)+len(e.Value) > cap(w.vals) {
					w.vals = make([]byte, 0, max(valChunk, len(e.Value)))
				}
				at := len(w.vals)
				w.vals = append(w.vals, e.Value...)
				e.Value = w.vals[at:len(w.vals):len(w.vals)]
			}
			w.es[rev-w.from], w.filled[rev-w.from] = e, true
		case !whole:
			w.runs[ri] = before
			w.postpone(ri, rev)
			return true, nil
		default: // past the window, the block decoded whole
			if track {
				w.postpone(w.slot(before), rev)
			}
			placing = false
		}
	}
}
