package segment

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Writer writes one segment, front to back. Add takes the entries in
// (key, revision) order; Finish writes the index, the meta bytes and the
// footer. The caller syncs and renames the file: a Writer only writes.
//
// The entries come first, then a time for every revision (AddTime).
//
// Invariant: block holds the encoded entries of the block being filled,
// which starts a new key; fences lists every block already written.
type Writer struct {
	w         io.Writer
	first     int64
	last      int64
	blockSize int

	off      int64 // bytes written to w
	block    []byte
	restarts []uint32 // the block's restart points
	fences   []fence
	cur      fence // the fence of the block being filled
	entries  int64
	keys     int64
	prevKey  string // the last entry's key, rev, time: the deltas' bases
	prevRev  int64
	prevSec  int64
	prevZone uint32
	started  bool // an entry was added
	err      error

	// The time column (times.go): times counts the times added, from
	// revision timesFrom on; tStart is the time block's first revision.
	// locs holds, for each revision from locBase on, 1 + the index of
	// the block of its entry (0: none), for the locators the time blocks
	// carry. locBase is First, or TimesFrom if that came before the
	// first entry: a segment whose times start late (a merge's below a
	// compaction) then holds no slot per revision it has no time for.
	timesFrom int64
	locBase   int64
	times     int64
	tStart    int64
	locs      []int32
	tSec      int64 // the last time added
	tNsec     int32
	tBlock    []byte
	tCur      timeFence
	tFences   []timeFence
}

// fence is one block's entry in the index.
type fence struct {
	off, len int64
	key      string
	rev      int64
	entries  int64
}

// NewWriter returns a writer of a segment covering revisions [first,
// last] (first >= 1, last >= first) to w, with blocks of about blockSize bytes (<= 0:
// DefaultBlockSize).
func NewWriter(w io.Writer, first, last int64, blockSize int) *Writer {
	if blockSize <= 0 {
		blockSize = DefaultBlockSize
	}
	sw := &Writer{w: w, first: first, last: last, blockSize: blockSize, timesFrom: first}
	h := make([]byte, headerSize)
	copy(h, headerMagic)
	binary.LittleEndian.PutUint32(h[8:], version)
	sw.write(h)
	return sw
}

func (sw *Writer) write(b []byte) {
	if sw.err != nil {
		return
	}
	n, err := sw.w.Write(b)
	sw.off += int64(n)
	sw.err = err
}

// Add appends e, which must follow the last entry in (key, revision)
// order and lie in the writer's revisions; its Value is copied.
func (sw *Writer) Add(e *Entry) error {
	if sw.err != nil {
		return sw.err
	}
	switch {
	case sw.times > 0:
		return fmt.Errorf("%w: entry %q@%d after the first time", ErrOrder, e.Key, e.Rev)
	case e.Rev < sw.first || e.Rev > sw.last:
		return fmt.Errorf("%w: revision %d outside [%d, %d]", ErrOrder, e.Rev, sw.first, sw.last)
	case sw.started && !less(sw.prevKey, sw.prevRev, e.Key, e.Rev):
		return fmt.Errorf("%w: %q@%d after %q@%d", ErrOrder, e.Key, e.Rev, sw.prevKey, sw.prevRev)
	case e.Op < Put || e.Op > Expire:
		return fmt.Errorf("%w: op %d of %q@%d", ErrOrder, e.Op, e.Key, e.Rev)
	case e.HasTTL && e.Op != Put:
		return fmt.Errorf("%w: a TTL on a tombstone, %q@%d", ErrOrder, e.Key, e.Rev)
	}
	if len(sw.block) >= sw.blockSize {
		sw.flushBlock()
	}
	if !sw.started || e.Key != sw.prevKey {
		sw.keys++
	}
	if len(sw.block) == 0 {
		sw.cur = fence{off: sw.off, key: e.Key, rev: e.Rev}
	}
	// An entry at a restart point (every restartEvery-th of a block, the
	// first included) starts afresh: a new key that shares nothing, so
	// that a read can begin decoding there.
	restart := sw.cur.entries%restartEvery == 0
	newKey := restart || e.Key != sw.prevKey
	prevKey := sw.prevKey
	if restart {
		sw.restarts = append(sw.restarts, uint32(len(sw.block)))
		prevKey = ""
	}
	sameZone := !restart && e.Zone == sw.prevZone
	sw.block = appendEntry(sw.block, e, newKey, sameZone, prevKey, sw.prevRev, sw.prevSec)
	if sw.locs == nil {
		sw.locBase = sw.timesFrom
		sw.locs = make([]int32, sw.last-sw.locBase+1)
	}
	if k := e.Rev - sw.locBase; k >= 0 {
		if sw.locs[k] != 0 {
			return fmt.Errorf("%w: two entries at revision %d", ErrOrder, e.Rev)
		}
		sw.locs[k] = int32(len(sw.fences)) + 1
	}
	sw.cur.entries++
	sw.entries++
	sw.prevKey, sw.prevRev, sw.prevSec, sw.prevZone, sw.started = e.Key, e.Rev, e.Sec, e.Zone, true
	return sw.err
}

// appendEntry encodes e after the block's previous entry (prevKey, prevRev,
// prevSec; prevKey "" at the block's start), which newKey says e does not
// follow as the same key, and sameZone that e's zone is its zone.
func appendEntry(b []byte, e *Entry, newKey, sameZone bool, prevKey string, prevRev, prevSec int64) []byte {
	flags := byte(e.Op) & flagOp
	if e.HasTTL {
		flags |= flagTTL
	}
	if newKey {
		flags |= flagNewKey
	}
	if sameZone {
		flags |= flagSameZone
	}
	b = append(b, flags)
	if newKey {
		shared := commonPrefix(prevKey, e.Key)
		b = binary.AppendUvarint(b, uint64(shared))
		b = binary.AppendUvarint(b, uint64(len(e.Key)-shared))
		b = append(b, e.Key[shared:]...)
		b = binary.AppendUvarint(b, uint64(e.Rev))
		b = binary.AppendVarint(b, e.Sec)
	} else {
		b = binary.AppendUvarint(b, uint64(e.Rev-prevRev))
		b = binary.AppendVarint(b, e.Sec-prevSec)
	}
	b = binary.AppendUvarint(b, uint64(e.Nsec))
	if !sameZone {
		b = binary.AppendUvarint(b, uint64(e.Zone))
	}
	if e.HasTTL {
		b = binary.AppendVarint(b, e.Expires-base(e.Sec, e.Nsec))
	}
	if e.Op == Put {
		b = binary.AppendUvarint(b, uint64(len(e.Value)))
		b = append(b, e.Value...)
	}
	return b
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// flushBlock writes the block being filled with its checksum.
func (sw *Writer) flushBlock() {
	if len(sw.block) == 0 {
		return
	}
	for _, r := range sw.restarts {
		sw.block = binary.LittleEndian.AppendUint32(sw.block, r)
	}
	sw.block = binary.LittleEndian.AppendUint32(sw.block, uint32(len(sw.restarts)))
	sw.restarts = sw.restarts[:0]
	sw.block = binary.LittleEndian.AppendUint32(sw.block, checksum(sw.block))
	sw.cur.len = int64(len(sw.block))
	sw.write(sw.block)
	sw.fences = append(sw.fences, sw.cur)
	sw.block = sw.block[:0]
}

// Finish writes the last block, the index, meta and the footer, which
// records the chain's digests before the first revision (prev) and at the
// last (digest). It returns the segment's size.
func (sw *Writer) Finish(prev, digest [32]byte, meta []byte) (int64, error) {
	if n := sw.last - sw.timesFrom + 1; sw.times != n {
		return 0, fmt.Errorf("%w: %d times for the %d revisions [%d, %d]", ErrOrder, sw.times, n, sw.timesFrom, sw.last)
	}
	sw.flushBlock()
	sw.flushTimes()
	var ix []byte
	ix = binary.AppendUvarint(ix, uint64(len(sw.fences)))
	for _, f := range sw.fences {
		ix = binary.AppendUvarint(ix, uint64(f.off))
		ix = binary.AppendUvarint(ix, uint64(f.len))
		ix = binary.AppendUvarint(ix, uint64(len(f.key)))
		ix = append(ix, f.key...)
		ix = binary.AppendUvarint(ix, uint64(f.rev))
		ix = binary.AppendUvarint(ix, uint64(f.entries))
	}
	ix = sw.appendTimeIndex(ix)
	ixOff := sw.off
	sw.write(ix)
	metaOff := sw.off
	sw.write(meta)
	f := make([]byte, 0, footerSize)
	for _, v := range []int64{ixOff, int64(len(ix)), metaOff, int64(len(meta)), sw.first, sw.last, sw.entries, sw.keys, sw.timesFrom} {
		f = binary.LittleEndian.AppendUint64(f, uint64(v))
	}
	f = append(f, prev[:]...)
	f = append(f, digest[:]...)
	f = binary.LittleEndian.AppendUint32(f, checksum(ix))
	f = binary.LittleEndian.AppendUint32(f, checksum(meta))
	f = binary.LittleEndian.AppendUint32(f, version)
	f = binary.LittleEndian.AppendUint32(f, checksum(f))
	f = append(f, footerMagic...)
	sw.write(f)
	if sw.err != nil {
		return 0, fmt.Errorf("write segment: %w", sw.err)
	}
	return sw.off, nil
}
