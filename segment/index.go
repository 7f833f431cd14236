package segment

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
)

// index is a segment's block and time index, decoded and checked. It never
// changes once built: a question holds the one it started with, even
// after its reader's cache let it go.
//
// The fences are kept as columns, 32 bytes and the key's own a block,
// where a slice of fence structs, each key a string of its own, took 80
// for a key of 10 bytes: a store keeps many indexes loaded. fence(i)
// gives block i's fence whole.
type index struct {
	offs    []int64     // block i is the bytes [offs[i], offs[i+1]); offs[n] is the index's offset
	revs    []int64     // block i's fence's revision
	entries []uint32    // how many entries block i holds
	keyEnds []uint32    // block i's fence's key is keys[keyEnds[i-1]:keyEnds[i]] (from 0 for i = 0)
	keys    string      // the fences' keys, back to back
	heads   []uint64    // the first 8 bytes of each fence's key (keyHead), searched first: they sit together in memory
	tFences []timeFence // the time column's blocks (times.go)
	meta    []byte      // the writer's, read with the index: one read, where a point read needs both
	bytes   int64       // about how much memory it holds, for the cache
}

// blocks returns how many blocks the segment holds.
func (ix *index) blocks() int { return len(ix.revs) }

// key returns block i's fence's key.
func (ix *index) key(i int) string {
	from := uint32(0)
	if i > 0 {
		from = ix.keyEnds[i-1]
	}
	return ix.keys[from:ix.keyEnds[i]]
}

// fence returns block i's fence.
func (ix *index) fence(i int) fence {
	return fence{off: ix.offs[i], len: ix.offs[i+1] - ix.offs[i], key: ix.key(i), rev: ix.revs[i], entries: int64(ix.entries[i])}
}

// rd is a reader with the index a question uses: the methods that need
// the index take one, so that a question reads one index throughout.
type rd struct {
	*Reader
	*index
}

// index returns the reader's index, loading it (and, in a cache, perhaps
// letting others' go) if it is not loaded.
func (sr *Reader) index() (rd, error) {
	if ix := sr.ix.Load(); ix != nil {
		if !sr.used.Load() { // a load first: the bit is set already on most questions, and a store would move the cache line
			sr.used.Store(true)
		}
		return rd{sr, ix}, nil
	}
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if ix := sr.ix.Load(); ix != nil {
		return rd{sr, ix}, nil
	}
	ix, err := sr.loadIndex()
	if err != nil {
		return rd{}, err
	}
	sr.ix.Store(ix)
	if sr.cache != nil {
		sr.cache.admit(sr, ix)
	}
	return rd{sr, ix}, nil
}

// scan returns the reader's index for a question that reads the whole
// segment, or much of it, once (Revisions, All, Times): the loaded one, or,
// in a cache, one read for the question alone, so that a stream through
// many segments (Changes from revision 1, an export, verify) neither
// grows memory nor pushes out the indexes of point reads.
func (sr *Reader) scan() (rd, error) {
	if sr.cache == nil {
		return sr.index()
	}
	if ix := sr.ix.Load(); ix != nil {
		return rd{sr, ix}, nil
	}
	ix, err := sr.loadIndex()
	if err != nil {
		return rd{}, err
	}
	return rd{sr, ix}, nil
}

// Load reads and checks the index and the meta, if they are not loaded:
// a segment's damage there is found now rather than by a later question,
// which would get the same error.
func (sr *Reader) Load() error {
	_, err := sr.index()
	return err
}

// Meta returns the writer's meta bytes, loading them with the index if
// they are not loaded; they must not be changed. A caller that keeps
// what it needs of them asks once: so that a stream that meets the
// segment first (and asks for its meta) leaves no index behind, the
// index loaded for it is not kept, as for scan.
func (sr *Reader) Meta() ([]byte, error) {
	r, err := sr.scan()
	if err != nil {
		return nil, err
	}
	return r.meta, nil
}

// IndexBytes returns about how much memory the loaded index holds (0: none
// is loaded).
func (sr *Reader) IndexBytes() int64 {
	if ix := sr.ix.Load(); ix != nil {
		return ix.bytes
	}
	return 0
}

// loadIndex reads the index and the meta, which follows it, in one read,
// and decodes and checks them.
func (sr *Reader) loadIndex() (*index, error) {
	u := func(i int) int64 { return int64(binary.LittleEndian.Uint64(sr.f[8*i:])) }
	ixOff, ixLen, metaOff, metaLen := u(0), u(1), u(2), u(3)
	body := make([]byte, ixLen+metaLen)
	if _, err := sr.r.ReadAt(body, ixOff); err != nil {
		return nil, fmt.Errorf("read segment index: %w", err)
	}
	raw, meta := body[:ixLen], body[ixLen:]
	if checksum(raw) != binary.LittleEndian.Uint32(sr.f[fIndexCRC:]) {
		return nil, fmt.Errorf("%w: index at offset %d fails its checksum", ErrCorrupt, ixOff)
	}
	if checksum(meta) != binary.LittleEndian.Uint32(sr.f[fMetaCRC:]) {
		return nil, fmt.Errorf("%w: meta at offset %d fails its checksum", ErrCorrupt, metaOff)
	}
	ix, err := sr.decodeIndex(raw, ixOff)
	if err != nil {
		return nil, err
	}
	ix.meta = bytes.Clone(meta) // not the index's bytes, which are garbage now
	ix.bytes += int64(len(meta))
	return ix, nil
}

// decodeIndex decodes and checks the index: blocks back to back from the
// header to the index, fences in order and within the footer's range, and
// their entries summing to the footer's count.
func (sr *Reader) decodeIndex(raw []byte, ixOff int64) (*index, error) {
	bad := func(what string) error {
		return fmt.Errorf("%w: index at offset %d: %s", ErrCorrupt, ixOff, what)
	}
	d := decoder{b: raw}
	n := d.uvarint()
	if d.err != nil || n > uint64(len(raw))/5 { // a fence takes at least 5 bytes
		return nil, bad("no block count")
	}
	ix := &index{offs: make([]int64, 0, n+1), revs: make([]int64, 0, n), entries: make([]uint32, 0, n), keyEnds: make([]uint32, 0, n), heads: make([]uint64, 0, n)}
	var keys []byte // the keys so far; the last fence's begins at prev
	prev := 0
	next, total := int64(headerSize), int64(0)
	for i := uint64(0); i < n; i++ {
		f := fence{off: int64(d.uvarint()), len: int64(d.uvarint())}
		key := d.bytes(d.uvarint())
		f.rev, f.entries = int64(d.uvarint()), int64(d.uvarint())
		switch {
		case d.err != nil:
			return nil, bad(fmt.Sprintf("block %d: %v", i, d.err))
		case f.off != next || f.len < 8 || f.len > ixOff-f.off:
			return nil, bad(fmt.Sprintf("block %d at offset %d of %d bytes does not follow the one before", i, f.off, f.len))
		case f.rev < sr.footer.First || f.rev > sr.footer.Last || f.entries < 1 || f.entries > math.MaxUint32:
			return nil, bad(fmt.Sprintf("block %d's fence %q@%d is outside the segment", i, key, f.rev))
		case uint64(len(keys))+uint64(len(key)) > math.MaxUint32:
			return nil, bad("fence keys past 4 GiB")
		case i > 0 && !less(string(keys[prev:]), ix.revs[i-1], string(key), f.rev):
			return nil, bad(fmt.Sprintf("block %d's fence %q@%d is out of order", i, key, f.rev))
		}
		next += f.len
		total += f.entries
		ix.offs = append(ix.offs, f.off)
		ix.revs = append(ix.revs, f.rev)
		ix.entries = append(ix.entries, uint32(f.entries))
		prev, keys = len(keys), append(keys, key...)
		ix.keyEnds = append(ix.keyEnds, uint32(len(keys)))
		ix.heads = append(ix.heads, keyHead(string(key)))
	}
	ix.offs = append(ix.offs, next)
	ix.keys = string(keys)
	ix.bytes = int64(len(ix.keys)) + 32*int64(n)
	next, err := sr.decodeTimeIndex(ix, &d, next, bad)
	if err != nil {
		return nil, err
	}
	if d.rest() != 0 || next != ixOff || total != sr.footer.Entries {
		return nil, bad("blocks do not fill the file or add up to its entries")
	}
	return ix, nil
}
