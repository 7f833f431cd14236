package segment

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"iter"
	"slices"
	"sync"
)

// Record is one entry as Records yields it: its revision, and the bytes
// the caller's encoder made of it.
type Record struct {
	Rev   int64
	Bytes []byte // valid until the next record is yielded
}

// Records yields, in revision order, the bytes enc appends to its first
// argument for each entry with lo <= Rev <= hi, from TimesFrom on: the
// entries Revisions yields, in the same order, for a caller that wants
// bytes of its own of each one (verify wants each entry's link of the
// hash chain) and reads the whole segment.
//
// It reads the segment through in the order of the file, once for every
// budget bytes of records, not once a window as Revisions does. Each
// entry is decoded once and its record appended to one of recBuckets
// buckets by revision, so that the records of a bucket, a range of
// revisions, lie together in pages of their own; each bucket is then put
// in order on its own, small enough to stay in the processor's cache. A
// pass that holds more than budget bytes of records lets go of its
// highest buckets (the next pass starts where they did), or, holding one
// bucket, starts again over a quarter of the pass's revisions; a single record
// larger than budget is held whole. Damage is ErrCorrupt: a block that
// fails its checksum, a locator that names a block not holding its
// revision or an entry without one, two entries of one revision.
func (sr *Reader) Records(lo, hi int64, budget int, enc func(dst []byte, e *Entry) []byte) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		sr, err := sr.scan()
		if err != nil {
			yield(Record{}, err)
			return
		}
		lo, hi = max(lo, sr.footer.TimesFrom), min(hi, sr.footer.Last)
		w := recWalk{sr: sr, enc: enc, budget: budget}
		for lo <= hi {
			to, err := w.fill(lo, hi)
			if err == nil {
				err = w.emit(lo, to, yield)
			}
			if err != nil {
				if err != errStopped {
					yield(Record{}, err)
				}
				return
			}
			if to == hi { // (to + 1 would pass MaxInt64 where hi is it)
				return
			}
			lo = to + 1
		}
	}
}

const (
	recBuckets = 64
	recPage    = 64 << 10
	recHeader  = 16  // a record's revision (8 bytes), block (4) and length (4)
	recRoom    = 256 // the least room a page must have left to take a record in place
)

// errStopped is the caller's break out of Records' loop.
var errStopped = fmt.Errorf("segment: records no longer wanted")

// recWalk is one walk of Records.
type recWalk struct {
	sr     rd
	enc    func([]byte, *Entry) []byte
	budget int
	// The pass being filled: revisions [lo, to], bucket b holding
	// [lo + b*width, lo + (b+1)*width - 1].
	lo, to  int64
	width   int64
	buckets [recBuckets][][]byte // each a list of pages, filled in turn
	counts  [recBuckets]int      // records in each bucket
	held    int                  // bytes of the buckets' pages
	buf     []byte               // the blocks' bytes, a span at a time
	k       []byte               // the cursor's key
	e       Entry                // the entry enc is given
	where   []uint64             // while a bucket is put in order: by revision, 1 + page<<32 | offset
	sorted  []recAt              // the same, for a bucket of few records over many revisions
}

// recAt is where a record lies in its bucket.
type recAt struct {
	rev       int64
	page, off uint32
}

// fill reads the segment through and buckets the records of revisions
// [lo, hi], or of fewer where they pass the budget; it returns the last
// revision it holds the records of.
func (w *recWalk) fill(lo, hi int64) (int64, error) {
	w.lo, w.to = lo, hi
	for {
		w.width = (w.to-w.lo)/recBuckets + 1
		again, err := w.pass()
		if err != nil || !again {
			return w.to, err
		}
		w.release(0)
	}
}

// pass is one read of the segment for fill; again says the pass let go
// of everything and must be run again over fewer revisions.
func (w *recWalk) pass() (again bool, err error) {
	sr, offs := w.sr, w.sr.offs
	for i := 0; i < sr.blocks(); {
		// One read for blocks that follow one another, up to spanBytes.
		j := i
		for j+1 < sr.blocks() && offs[j+2]-offs[i] <= spanBytes {
			j++
		}
		if w.buf, err = sr.readSpan(i, j, w.buf); err != nil {
			return false, err
		}
		start := offs[i]
		for ; i <= j; i++ {
			b, err := sr.check(i, w.buf[offs[i]-start:offs[i+1]-start])
			if err != nil {
				return false, err
			}
			if again, err := w.block(i, b); again || err != nil {
				return again, err
			}
		}
	}
	return false, nil
}

// block buckets the records of block i, b, in the pass's revisions.
func (w *recWalk) block(i int, b loaded) (again bool, err error) {
	c := w.sr.cursorAt(b, 0, w.k)
	var key string
	for c.next() {
		if c.newKey {
			key = ""
		}
		if c.e.Rev < w.lo || c.e.Rev > w.to {
			continue
		}
		if key == "" {
			key = string(c.k) // once a key's run in the block: enc may keep it
		}
		// A copy in w, which is on the heap already: enc, a func value,
		// would move the cursor there, once a block, were it given c.e.
		w.e = c.e
		w.e.Key = key
		w.add(int((w.e.Rev-w.lo)/w.width), &w.e, int32(i))
		if w.held > w.budget && w.shed() {
			w.k = c.k
			return true, nil
		}
	}
	w.k = c.k
	return false, c.err
}

// add appends the record of e, from block blk, to bucket b: enc writes
// it into the bucket's last page (a record that outgrows the page's room
// moves the page to a larger array, as append does).
func (w *recWalk) add(b int, e *Entry, blk int32) {
	pages := w.buckets[b]
	if k := len(pages) - 1; k < 0 || cap(pages[k])-len(pages[k]) < recHeader+recRoom {
		pages = append(pages, w.page())
	}
	k := len(pages) - 1
	p := pages[k]
	start := len(p)
	q := w.enc(p[:start+recHeader], e)
	w.held += cap(q) - cap(p)
	binary.LittleEndian.PutUint64(q[start:], uint64(e.Rev))
	binary.LittleEndian.PutUint32(q[start+8:], uint32(blk))
	binary.LittleEndian.PutUint32(q[start+12:], uint32(len(q)-start-recHeader))
	pages[k] = q
	w.buckets[b] = pages
	w.counts[b]++
}

// recPages holds pages of recPage bytes that walks let go of, for the
// next walk: verify reads segment after segment through Records.
var recPages = sync.Pool{New: func() any { return new([]byte) }}

// page returns an empty page, counted in w.held.
func (w *recWalk) page() []byte {
	p := *recPages.Get().(*[]byte)
	if cap(p) != recPage {
		p = make([]byte, 0, recPage)
	}
	w.held += recPage
	return p[:0]
}

// shed brings a pass over its budget back under it: it lets go of the
// highest buckets holding records while more than one does, and the pass
// then ends below them; holding one, it lets go of all and says the pass
// must be run again, over a quarter of its revisions.
func (w *recWalk) shed() (again bool) {
	low := 0
	for low < recBuckets && w.counts[low] == 0 {
		low++
	}
	for b := recBuckets - 1; b > low && w.held > w.budget; b-- {
		if w.counts[b] > 0 {
			w.drop(b)
			w.to = w.lo + int64(b)*w.width - 1
		}
	}
	if w.held <= w.budget || w.width == 1 {
		return false // one record alone passes the budget: it is held whole
	}
	w.to = w.lo + (w.to-w.lo)/4
	return true
}

// drop lets go of bucket b's pages.
func (w *recWalk) drop(b int) {
	for _, p := range w.buckets[b] {
		w.held -= cap(p)
		if cap(p) == recPage {
			recPages.Put(&p)
		}
	}
	clear(w.buckets[b])
	w.buckets[b], w.counts[b] = w.buckets[b][:0], 0
}

// release lets go of every bucket from b on.
func (w *recWalk) release(b int) {
	for ; b < recBuckets; b++ {
		w.drop(b)
	}
}

// emit yields the records of revisions [lo, to], which the buckets hold,
// in revision order, checking each against its locator; then it lets go
// of the buckets.
func (w *recWalk) emit(lo, to int64, yield func(Record, error) bool) error {
	defer w.release(0)
	sr := w.sr
	tBlock, tFirst := -1, int64(0)
	var locs []int32
	// Offsets from lo, and a count of revisions: near the top of int64,
	// lo + b*width or r++ past the last would wrap.
	span := to - lo
	for b := 0; b < recBuckets; b++ {
		off := int64(b) * w.width
		if off > span {
			break
		}
		first, last := lo+off, to
		if w.width-1 < span-off {
			last = first + w.width - 1
		}
		at, err := w.order(b, first, last)
		if err != nil {
			return err
		}
		for k := range last - first + 1 {
			r := first + k
			if i := int((r - sr.footer.TimesFrom) / timesPerBlock); i != tBlock {
				if locs, err = sr.locators(i); err != nil {
					return err
				}
				tBlock, tFirst = i, sr.footer.TimesFrom+int64(i)*timesPerBlock
			}
			loc := locs[r-tFirst]
			page, off, ok := at(r)
			switch {
			case !ok && loc < 0:
				continue
			case !ok:
				return fmt.Errorf("%w: revision %d's locator names block %d, which does not hold it", ErrCorrupt, r, loc)
			}
			p := w.buckets[b][page][off:]
			blk := int32(binary.LittleEndian.Uint32(p[8:]))
			switch {
			case loc < 0:
				return fmt.Errorf("%w: block %d holds revision %d, which has no locator", ErrCorrupt, blk, r)
			case blk != loc:
				return fmt.Errorf("%w: block %d holds revision %d, which its locator places in block %d", ErrCorrupt, blk, r, loc)
			}
			n := binary.LittleEndian.Uint32(p[12:])
			if !yield(Record{Rev: r, Bytes: p[recHeader : recHeader+n]}, nil) {
				return errStopped
			}
		}
	}
	return nil
}

// order puts bucket b, revisions [first, last], in order: it returns
// where the record of a revision lies. Two records of one revision are
// ErrCorrupt.
func (w *recWalk) order(b int, first, last int64) (func(r int64) (page, off uint32, ok bool), error) {
	dense := w.counts[b]*16 >= int(last-first+1)
	if dense {
		n := int(last - first + 1)
		w.where = slices.Grow(w.where[:0], n)[:n]
		clear(w.where)
	} else {
		w.sorted = w.sorted[:0]
	}
	for k, p := range w.buckets[b] {
		for off := 0; off < len(p); {
			rev := int64(binary.LittleEndian.Uint64(p[off:]))
			if dense {
				if w.where[rev-first] != 0 {
					return nil, fmt.Errorf("%w: two entries of revision %d", ErrCorrupt, rev)
				}
				w.where[rev-first] = 1 + (uint64(k)<<32 | uint64(off))
			} else {
				w.sorted = append(w.sorted, recAt{rev, uint32(k), uint32(off)})
			}
			off += recHeader + int(binary.LittleEndian.Uint32(p[off+12:]))
		}
	}
	if dense {
		return func(r int64) (uint32, uint32, bool) {
			x := w.where[r-first]
			return uint32((x - 1) >> 32), uint32(x - 1), x != 0
		}, nil
	}
	slices.SortFunc(w.sorted, func(a, b recAt) int { return cmp.Compare(a.rev, b.rev) })
	for i := 1; i < len(w.sorted); i++ {
		if w.sorted[i].rev == w.sorted[i-1].rev {
			return nil, fmt.Errorf("%w: two entries of revision %d", ErrCorrupt, w.sorted[i].rev)
		}
	}
	i := 0
	return func(r int64) (uint32, uint32, bool) {
		for i < len(w.sorted) && w.sorted[i].rev < r {
			i++
		}
		if i < len(w.sorted) && w.sorted[i].rev == r {
			return w.sorted[i].page, w.sorted[i].off, true
		}
		return 0, 0, false
	}, nil
}
