package segment

import (
	"encoding/binary"
	"fmt"
	"iter"
	"sort"
)

// The time column: the time of every revision the segment covers,
// TimesFrom (First, unless the store had forgotten the oldest) to Last, so that the time of a sealed revision, and the revision at a
// time, are read from the disk and not held in memory. It follows the
// entry blocks, in blocks of timesPerBlock revisions, each ending with
// its CRC-32C; the index lists each block's offset, length and first time.
// A time is stored as the nanoseconds since the one before it, doubled
// (times never go back); an odd value escapes a step that does not fit,
// and is followed by the time's Unix seconds (varint) and nanoseconds
// (uvarint). A block's first time is in the index, not the block.
const timesPerBlock = 1024

// timeFence is one block of the time column in the index.
type timeFence struct {
	off, len int64
	sec      int64
	nsec     int32
}

// TimesFrom makes the time column start at revision rev, First <= rev <=
// Last, rather than at First: the revisions below it are ones whose times
// the store no longer knows (a compaction forgot them). Call it before
// the first AddTime; called before the first Add, it also spares the
// writer a slot per revision below rev.
func (sw *Writer) TimesFrom(rev int64) error {
	if rev < sw.first || rev > sw.last || sw.times > 0 || sw.locs != nil && rev < sw.locBase {
		return fmt.Errorf("%w: times from %d in [%d, %d], after %d times", ErrOrder, rev, sw.first, sw.last, sw.times)
	}
	sw.timesFrom = rev
	return nil
}

// AddTime adds the time of the next revision, TimesFrom's (First) first.
// Every entry must have been added before the first time; the times must
// not go back, and Finish checks there is one for every revision from
// TimesFrom on.
func (sw *Writer) AddTime(sec int64, nsec int32) error {
	if sw.err != nil {
		return sw.err
	}
	rev := sw.timesFrom + sw.times
	switch {
	case rev > sw.last:
		return fmt.Errorf("%w: a time for revision %d, past %d", ErrOrder, rev, sw.last)
	case nsec < 0 || nsec >= 1e9:
		return fmt.Errorf("%w: %d nanoseconds at revision %d", ErrOrder, nsec, rev)
	case sw.times > 0 && (sec < sw.tSec || sec == sw.tSec && nsec < sw.tNsec):
		return fmt.Errorf("%w: the time of revision %d is before the one before it", ErrOrder, rev)
	}
	sw.flushBlock() // the entries' last block: the time column follows them
	if sw.times%timesPerBlock == 0 {
		sw.flushTimes()
		sw.tCur = timeFence{off: sw.off, sec: sec, nsec: nsec}
		sw.tStart = rev
	} else {
		if ds := sec - sw.tSec; ds >= 0 && ds < 1<<32 { // then the step is below 1<<62
			step := ds*1e9 + int64(nsec-sw.tNsec)
			sw.tBlock = binary.AppendUvarint(sw.tBlock, uint64(step)<<1)
		} else {
			sw.tBlock = binary.AppendUvarint(sw.tBlock, 1)
			sw.tBlock = binary.AppendVarint(sw.tBlock, sec)
			sw.tBlock = binary.AppendUvarint(sw.tBlock, uint64(nsec))
		}
	}
	sw.tSec, sw.tNsec = sec, nsec
	sw.times++
	return sw.err
}

// flushTimes writes the time block being filled, if any, with its
// revisions' locators.
func (sw *Writer) flushTimes() {
	if sw.times == 0 {
		return
	}
	prev := int64(0)
	// A count, not r < timesFrom+times, which wraps where the last
	// revision is MaxInt64.
	for k := range sw.times - (sw.tStart - sw.timesFrom) {
		r := sw.tStart + k
		var v int32
		if sw.locs != nil {
			v = sw.locs[r-sw.locBase]
		}
		if v == 0 {
			sw.tBlock = append(sw.tBlock, 0)
			continue
		}
		d := int64(v-1) - prev
		sw.tBlock = binary.AppendUvarint(sw.tBlock, uint64(d<<1^d>>63)+1)
		prev = int64(v - 1)
	}
	sw.tBlock = binary.LittleEndian.AppendUint32(sw.tBlock, checksum(sw.tBlock))
	sw.tCur.len = int64(len(sw.tBlock))
	sw.write(sw.tBlock)
	sw.tFences = append(sw.tFences, sw.tCur)
	sw.tBlock = sw.tBlock[:0]
}

// appendTimeIndex appends the time column's part of the index.
func (sw *Writer) appendTimeIndex(ix []byte) []byte {
	ix = binary.AppendUvarint(ix, uint64(len(sw.tFences)))
	for _, f := range sw.tFences {
		ix = binary.AppendUvarint(ix, uint64(f.off))
		ix = binary.AppendUvarint(ix, uint64(f.len))
		ix = binary.AppendVarint(ix, f.sec)
		ix = binary.AppendUvarint(ix, uint64(f.nsec))
	}
	return ix
}

// decodeTimeIndex decodes the time column's part of the index, whose
// blocks begin at off, and returns the offset after the last.
func (sr *Reader) decodeTimeIndex(ix *index, d *decoder, off int64, bad func(string) error) (int64, error) {
	revs := sr.footer.Last - sr.footer.TimesFrom + 1 // >= 1, as OpenFooter checked
	want := revs / timesPerBlock                     // rounded up below, without overflow where Last is near the top
	if revs%timesPerBlock != 0 {
		want++
	}
	n := d.uvarint()
	// A time fence takes at least 4 bytes: a count past what is left is
	// damage (a forged footer's range), not an array to make.
	if d.err != nil || int64(n) != want || n > uint64(d.rest())/4 {
		return 0, bad(fmt.Sprintf("%d time blocks for %d revisions", n, revs))
	}
	ix.tFences = make([]timeFence, n)
	ix.bytes += 32 * int64(n)
	for i := range ix.tFences {
		f := timeFence{off: int64(d.uvarint()), len: int64(d.uvarint()), sec: d.varint()}
		nsec := d.uvarint()
		f.nsec = int32(nsec)
		switch {
		case d.err != nil:
			return 0, bad(fmt.Sprintf("time block %d: %v", i, d.err))
		case f.off != off || f.len < 4 || nsec >= 1e9:
			return 0, bad(fmt.Sprintf("time block %d at offset %d of %d bytes does not follow the one before", i, f.off, f.len))
		case i > 0 && (f.sec < ix.tFences[i-1].sec || f.sec == ix.tFences[i-1].sec && f.nsec < ix.tFences[i-1].nsec):
			return 0, bad(fmt.Sprintf("time block %d goes back in time", i))
		}
		off += f.len
		ix.tFences[i] = f
	}
	return off, nil
}

// times reads time block i and returns its times, each as (sec, nsec),
// and its revisions' locators: the index of the block of each one's entry
// (-1: none).
func (sr rd) times(i int) ([][2]int64, []int32, error) {
	if c := sr.lastTimes.Load(); c != nil && c.i == i {
		return c.ts, c.locs, nil
	}
	ts, locs, err := sr.readTimes(i)
	if err == nil {
		sr.lastTimes.Store(&timesBlock{i, ts, locs})
	}
	return ts, locs, err
}

// timesBlock is a time block as times returns it; the last one read is
// kept (Reader.lastTimes), so that a walk through revisions in order (an
// export, a watch from an old revision) decodes each block once, not once
// a revision. Its slices are never changed.
type timesBlock struct {
	i    int
	ts   [][2]int64
	locs []int32
}

// readTimes reads and decodes time block i (times).
func (sr rd) readTimes(i int) ([][2]int64, []int32, error) {
	return sr.decodeTimes(i, true)
}

// locators reads time block i and returns its locators alone: its times
// are checked as readTimes checks them, and not kept.
func (sr rd) locators(i int) ([]int32, error) {
	_, locs, err := sr.decodeTimes(i, false)
	return locs, err
}

// decodeTimes is readTimes, keeping the times if keep.
func (sr rd) decodeTimes(i int, keep bool) ([][2]int64, []int32, error) {
	f := sr.tFences[i]
	buf := make([]byte, f.len)
	sr.reads.Add(1)
	if _, err := sr.r.ReadAt(buf, f.off); err != nil {
		return nil, nil, fmt.Errorf("read segment time block at offset %d: %w", f.off, err)
	}
	body := buf[:len(buf)-4]
	if checksum(body) != binary.LittleEndian.Uint32(buf[len(body):]) {
		return nil, nil, fmt.Errorf("%w: time block at offset %d fails its checksum", ErrCorrupt, f.off)
	}
	want := min(int64(timesPerBlock), sr.footer.Last-sr.footer.TimesFrom+1-int64(i)*timesPerBlock)
	var out [][2]int64
	if keep {
		out = make([][2]int64, 1, want)
		out[0] = [2]int64{f.sec, int64(f.nsec)}
	}
	last, n := [2]int64{f.sec, int64(f.nsec)}, int64(1)
	d := decoder{b: body}
	for d.rest() > 0 && n < want {
		prev := last
		v := d.uvarint()
		var t [2]int64
		if v&1 == 0 {
			ns := prev[1] + int64(v>>1)
			if t = [2]int64{prev[0] + ns/1e9, ns % 1e9}; t[0] < prev[0] {
				return nil, nil, fmt.Errorf("%w: time block at offset %d overflows", ErrCorrupt, f.off)
			}
		} else {
			t = [2]int64{d.varint(), int64(d.uvarint())}
			if v != 1 || t[1] >= 1e9 || t[0] < prev[0] || t[0] == prev[0] && t[1] < prev[1] {
				return nil, nil, fmt.Errorf("%w: time block at offset %d goes back in time", ErrCorrupt, f.off)
			}
		}
		if d.err != nil {
			break
		}
		if last, n = t, n+1; keep {
			out = append(out, t)
		}
	}
	locs := make([]int32, 0, want)
	prev := int64(0)
	for d.err == nil && int64(len(locs)) < want {
		v := d.uvarint()
		if v == 0 {
			locs = append(locs, -1)
			continue
		}
		z := v - 1
		b := prev + (int64(z>>1) ^ -int64(z&1))
		if b < 0 || b >= int64(sr.blocks()) {
			return nil, nil, fmt.Errorf("%w: time block at offset %d locates an entry in block %d of %d", ErrCorrupt, f.off, b, sr.blocks())
		}
		locs, prev = append(locs, int32(b)), b
	}
	if d.err != nil || d.rest() != 0 || n != want || int64(len(locs)) != want {
		return nil, nil, fmt.Errorf("%w: time block at offset %d does not hold its %d times", ErrCorrupt, f.off, want)
	}
	if i+1 < len(sr.tFences) {
		if next := sr.tFences[i+1]; last[0] > next.sec || last[0] == next.sec && last[1] > int64(next.nsec) {
			return nil, nil, fmt.Errorf("%w: time block at offset %d ends after the next begins", ErrCorrupt, f.off)
		}
	}
	return out, locs, nil
}

// Times yields the time of each revision the segment holds one for, from
// from (TimesFrom if below it) to Last, in order, as (sec, nsec): a time
// block read once each.
func (sr *Reader) Times(from int64) iter.Seq2[[2]int64, error] {
	return func(yield func([2]int64, error) bool) {
		sr, err := sr.scan()
		if err != nil {
			yield([2]int64{}, err)
			return
		}
		from = max(from, sr.footer.TimesFrom)
		if from > sr.footer.Last {
			return
		}
		for i := int((from - sr.footer.TimesFrom) / timesPerBlock); i < len(sr.tFences); i++ {
			ts, _, err := sr.readTimes(i)
			if err != nil {
				yield([2]int64{}, err)
				return
			}
			skip := max(0, from-sr.footer.TimesFrom-int64(i)*timesPerBlock)
			for _, t := range ts[skip:] {
				if !yield(t, nil) {
					return
				}
			}
		}
	}
}

// TimeOf returns the time of revision rev, TimesFrom <= rev <= Last,
// reading one block.
func (sr *Reader) TimeOf(rev int64) (sec int64, nsec int32, err error) {
	if rev < sr.footer.TimesFrom || rev > sr.footer.Last {
		return 0, 0, fmt.Errorf("the segment holds the times of revisions [%d, %d], not %d", sr.footer.TimesFrom, sr.footer.Last, rev)
	}
	k := rev - sr.footer.TimesFrom
	r, err := sr.index()
	if err != nil {
		return 0, 0, err
	}
	ts, _, err := r.times(int(k / timesPerBlock))
	if err != nil {
		return 0, 0, err
	}
	t := ts[k%timesPerBlock]
	return t[0], int32(t[1]), nil
}

// RevAt returns the last revision of the segment whose time is at or
// before (sec, nsec), or First-1 if none is, reading at most one block.
// known is false when the time is before TimesFrom's and TimesFrom is
// above First: the answer is one of the revisions without a time.
func (sr *Reader) RevAt(sec int64, nsec int32) (rev int64, known bool, err error) {
	r, err := sr.index()
	if err != nil {
		return 0, false, err
	}
	after := func(s int64, ns int64) bool { return s > sec || s == sec && ns > int64(nsec) }
	i := sort.Search(len(r.tFences), func(i int) bool { return after(r.tFences[i].sec, int64(r.tFences[i].nsec)) }) - 1
	if i < 0 {
		return sr.footer.TimesFrom - 1, sr.footer.TimesFrom == sr.footer.First, nil
	}
	ts, _, err := r.times(i)
	if err != nil {
		return 0, false, err
	}
	j := sort.Search(len(ts), func(j int) bool { return after(ts[j][0], ts[j][1]) })
	return sr.footer.TimesFrom + int64(i)*timesPerBlock + int64(j) - 1, true, nil
}
