package segment

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"iter"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// Reader reads a segment. It holds the footer, and once a question needs
// it the index (index.go); blocks are read from the file when a question
// needs them, and checked against their checksum and fence every time.
// Safe for concurrent use.
//
// A reader of a Cache shares a bound on loaded indexes with the cache's
// other readers: its index may be let go between two questions and read
// again by the next. A question holds the index it started with to its
// end, whatever the cache does meanwhile.
type Reader struct {
	r      io.ReaderAt
	size   int64
	footer Footer
	f      []byte       // the footer's bytes: the index's and the meta's place and checksums
	reads  atomic.Int64 // blocks read from r, for tests and stats

	lastTimes atomic.Pointer[timesBlock] // the last time block read (times.go)

	cache *Cache                // nil: the index stays once loaded
	ix    atomic.Pointer[index] // the loaded index; nil until a question loads it, or since the cache let it go
	used  atomic.Bool           // a question used ix since the cache's hand last passed it (cache.go)
	// forgotten is set by Cache.Forget: the cache keeps no index of the
	// reader. Guarded by cache.mu.
	forgotten bool
	// mu is held while loading the index, so that questions that find
	// none load it once; taken before the cache's lock, never after.
	mu sync.Mutex
}

// Open reads the footer, index and meta of the segment r of size bytes,
// and checks them: damage is ErrCorrupt, a format this build does not
// know ErrVersion.
func Open(r io.ReaderAt, size int64) (*Reader, error) {
	sr, err := OpenFooter(r, size)
	if err == nil {
		err = sr.Load()
	}
	if err != nil {
		return nil, err
	}
	return sr, nil
}

// OpenFooter reads and checks the header and footer of the segment r of
// size bytes, as Open does, and leaves the index and the meta to the
// first question that needs them (or Load): opening a store reads a few
// hundred bytes of each segment, whatever its size. Damage to the index
// or meta is then that question's ErrCorrupt.
func OpenFooter(r io.ReaderAt, size int64) (*Reader, error) {
	if size < headerSize+footerSize {
		return nil, fmt.Errorf("%w: %d bytes, too short for a header and footer", ErrCorrupt, size)
	}
	h := make([]byte, headerSize)
	if _, err := r.ReadAt(h, 0); err != nil {
		return nil, fmt.Errorf("read segment header: %w", err)
	}
	if !bytes.Equal(h[:8], headerMagic) || binary.LittleEndian.Uint32(h[12:]) != 0 {
		return nil, fmt.Errorf("%w: no segment header at offset 0", ErrCorrupt)
	}
	f := make([]byte, footerSize)
	if _, err := r.ReadAt(f, size-footerSize); err != nil {
		return nil, fmt.Errorf("read segment footer: %w", err)
	}
	if !bytes.Equal(f[footerSize-8:], footerMagic) {
		return nil, fmt.Errorf("%w: footer at offset %d has no end mark", ErrCorrupt, size-footerSize)
	}
	if got, want := checksum(f[:fCRC]), binary.LittleEndian.Uint32(f[fCRC:]); got != want {
		return nil, fmt.Errorf("%w: footer at offset %d fails its checksum", ErrCorrupt, size-footerSize)
	}
	v := binary.LittleEndian.Uint32(f[fVersion:])
	if v < 1 || v > version {
		return nil, fmt.Errorf("%w: version %d, this build reads 1 to %d", ErrVersion, v, version)
	}
	if hv := binary.LittleEndian.Uint32(h[8:]); hv != v {
		return nil, fmt.Errorf("%w: the header says version %d, the footer %d", ErrCorrupt, hv, v)
	}
	u := func(i int) int64 { return int64(binary.LittleEndian.Uint64(f[8*i:])) }
	ixOff, ixLen, metaOff, metaLen := u(0), u(1), u(2), u(3)
	sr := &Reader{r: r, size: size}
	sr.footer = Footer{First: u(4), Last: u(5), Entries: u(6), Keys: u(7), TimesFrom: u(8)}
	copy(sr.footer.Prev[:], f[fPrev:fDigest])
	copy(sr.footer.Digest[:], f[fDigest:fIndexCRC])
	end := size - footerSize
	if ixOff < headerSize || ixLen < 1 || ixOff > end-ixLen || metaOff != ixOff+ixLen || metaLen != end-metaOff ||
		sr.footer.First < 1 || sr.footer.First > sr.footer.Last ||
		sr.footer.TimesFrom < sr.footer.First || sr.footer.TimesFrom > sr.footer.Last || sr.footer.Entries < 0 || sr.footer.Keys < 0 || sr.footer.Keys > sr.footer.Entries {
		return nil, fmt.Errorf("%w: footer at offset %d names impossible offsets or counts", ErrCorrupt, end)
	}
	sr.f = f
	return sr, nil
}

// Footer returns what the segment says of itself.
func (sr *Reader) Footer() Footer { return sr.footer }

// Size returns the segment's size in bytes.
func (sr *Reader) Size() int64 { return sr.size }

// BlocksRead returns how many blocks the reader has read from its file.
func (sr *Reader) BlocksRead() int64 { return sr.reads.Load() }

// fenceAfter returns the first block whose fence is after (key, rev) (len:
// none). It searches the keys' heads, which order the fences as their keys
// do where they differ, and compares whole keys only among fences whose
// head is key's: a point read's search then touches one small array, not
// a string per step.
func (sr rd) fenceAfter(key string, rev int64) int {
	h := keyHead(key)
	lo, _ := slices.BinarySearch(sr.heads, h)
	hi := lo + sort.Search(len(sr.heads)-lo, func(i int) bool { return sr.heads[lo+i] > h })
	return lo + sort.Search(hi-lo, func(i int) bool { return less(key, rev, sr.key(lo+i), sr.revs[lo+i]) })
}

// keyHead is key's first 8 bytes as a big-endian number, padded with
// zeros: keyHead(a) < keyHead(b) implies a < b.
func keyHead(key string) uint64 {
	var b [8]byte
	copy(b[:], key)
	return binary.BigEndian.Uint64(b[:])
}

// getBufs are a Get's buffers, for a block and a key: Get copies out the
// one value it returns, so they can serve the next Get.
type getBufs struct{ block, key []byte }

var getBufPool = sync.Pool{New: func() any { return new(getBufs) }}

// Get returns key's newest entry with Rev <= rev in the segment, reading
// at most one block.
func (sr *Reader) Get(key string, rev int64) (Entry, bool, error) {
	r, err := sr.index()
	if err != nil {
		return Entry{}, false, err
	}
	return r.get(key, rev)
}

func (sr rd) get(key string, rev int64) (Entry, bool, error) {
	i := sr.fenceAfter(key, rev) - 1
	if i < 0 {
		return Entry{}, false, nil
	}
	bufs := getBufPool.Get().(*getBufs)
	defer getBufPool.Put(bufs)
	b, err := sr.load(i, bufs.block)
	if err != nil {
		return Entry{}, false, err
	}
	bufs.block = b.entries[:0] // the buffer, grown if it had to be, for the next Get
	j, err := sr.seek(&b, key, rev)
	if err != nil {
		return Entry{}, false, err
	}
	c := sr.cursorAt(b, j, bufs.key)
	var found Entry
	ok, same := false, false
	for c.next() {
		if c.newKey {
			if string(c.k) > key {
				break
			}
			same = string(c.k) == key
		}
		if same && c.e.Rev > rev {
			break
		}
		if same {
			found, ok = c.e, true
		}
	}
	bufs.key = c.k
	if c.err != nil {
		return Entry{}, false, c.err
	}
	if !ok {
		return Entry{}, false, nil
	}
	found.Key = key
	found.Value = bytes.Clone(found.Value) // not the whole block's buffer
	return found, true, nil
}

// History yields key's entries with lo <= Rev <= hi, oldest first,
// reading only the blocks that hold them. A Value points into the block
// read: it stays as it is, and keeps the block in memory while it is held.
func (sr *Reader) History(key string, lo, hi int64) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		sr, err := sr.index()
		if err != nil {
			yield(Entry{}, err)
			return
		}
		i := max(sr.fenceAfter(key, lo)-1, 0)
		for ; i < sr.blocks() && sr.key(i) <= key; i++ {
			for e, err := range sr.block(i) {
				switch {
				case err != nil:
					yield(Entry{}, err)
					return
				case e.Key > key || e.Key == key && e.Rev > hi:
					return
				case e.Key == key && e.Rev >= lo:
					if !yield(e, nil) {
						return
					}
				}
			}
		}
	}
}

// All yields every entry of the segment in (key, revision) order; a Value
// points into its block, as History's do.
func (sr *Reader) All() iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		sr, err := sr.scan()
		if err != nil {
			yield(Entry{}, err)
			return
		}
		for i := range sr.blocks() {
			for e, err := range sr.block(i) {
				if !yield(e, err) || err != nil {
					return
				}
			}
		}
	}
}

// block reads block i and yields its entries.
func (sr rd) block(i int) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		b, err := sr.load(i, nil)
		if err != nil {
			yield(Entry{}, err)
			return
		}
		c := sr.cursorAt(b, 0, nil)
		var key string
		for c.next() {
			if c.newKey {
				key = string(c.k)
			}
			c.e.Key = key
			if !yield(c.e, nil) {
				return
			}
		}
		if c.err != nil {
			yield(Entry{}, c.err)
		}
	}
}

// seek returns the restart point of b to scan from for (key, rev): the
// last whose entry is at or before it. The newest entry of key at or below
// rev, if b holds one, is at or after that entry, which would otherwise
// be a newer one. It reads only the key and revision of each restart
// point it looks at, and compares the key in place: a point read makes no
// string of the keys it passes (scan checks the entries it decodes).
func (sr rd) seek(b *loaded, key string, rev int64) (int, error) {
	var err error
	j := sort.Search(b.nRestarts(), func(k int) bool {
		rk, rr, perr := restartKey(b.entries[b.restart(k):])
		if perr != nil {
			err = fmt.Errorf("%w: block at offset %d, restart %d: %v", ErrCorrupt, b.f.off, k, perr)
			return true
		}
		return key < string(rk) || key == string(rk) && rev < rr
	}) - 1
	return max(j, 0), err
}

// restartKey reads the key and revision of the entry at a restart point,
// which shares no bytes of a key before it.
func restartKey(b []byte) ([]byte, int64, error) {
	if len(b) == 0 {
		return nil, 0, fmt.Errorf("an entry ends early")
	}
	if b[0]&flagNewKey == 0 {
		return nil, 0, fmt.Errorf("an entry at a restart point continues a key")
	}
	d := decoder{b: b[1:]}
	if shared := d.uvarint(); d.err == nil && shared != 0 {
		return nil, 0, fmt.Errorf("an entry at a restart point shares %d bytes of a key", shared)
	}
	k := d.bytes(d.uvarint())
	rev := int64(d.uvarint())
	return k, rev, d.err
}

// cursor decodes a block's entries from a restart point on, checking
// each against the fence, the restart points, the order and the segment's
// range. Its entry has no Key: the key's bytes are in k, valid until the
// next entry, so that a point read compares them in place where a string
// of each key would cost an allocation. An entry's Value points into the
// block's buffer, read afresh for each load and never written again.
type cursor struct {
	sr     *Reader
	b      loaded
	d      decoder
	n, j   int64 // the entry next in the block, and the first decoded
	e      Entry // without its Key
	k      []byte
	newKey bool  // e's key is not the key of the entry before it
	err    error // the damage found: next returned false for it
}

// cursorAt starts a cursor at b's restart point j, with k as its buffer
// for keys.
func (sr rd) cursorAt(b loaded, j int, k []byte) cursor {
	n := int64(j) * restartEvery
	return cursor{sr: sr.Reader, b: b, d: decoder{b: b.entries[b.restart(j):]}, n: n, j: n, k: k[:0]}
}

// next decodes the next entry into c.e and c.k; false at the block's end
// or at damage, which is c.err.
func (c *cursor) next() bool {
	f, n := c.b.f, c.n
	if c.err != nil || c.d.rest() == 0 {
		if c.err == nil && n != f.entries {
			c.err = fmt.Errorf("%w: block at offset %d holds %d entries, its fence says %d", ErrCorrupt, f.off, n, f.entries)
		}
		return false
	}
	restart := n%restartEvery == 0
	if restart && (n/restartEvery >= int64(c.b.nRestarts()) || len(c.b.entries)-c.d.rest() != int(c.b.restart(int(n/restartEvery)))) {
		c.err = fmt.Errorf("%w: block at offset %d, entry %d is not at its restart point", ErrCorrupt, f.off, n)
		return false
	}
	newKey, err := c.d.entry(&c.e, &c.k, restart, n > c.j)
	switch {
	case err != nil:
		c.err = fmt.Errorf("%w: block at offset %d, entry %d: %v", ErrCorrupt, f.off, n, err)
	case n == 0 && (string(c.k) != f.key || c.e.Rev != f.rev):
		c.err = fmt.Errorf("%w: block at offset %d begins with %q@%d, its fence says %q@%d", ErrCorrupt, f.off, c.k, c.e.Rev, f.key, f.rev)
	case c.e.Rev < c.sr.footer.First, c.e.Rev > c.sr.footer.Last, n >= f.entries:
		c.err = fmt.Errorf("%w: block at offset %d, entry %d (%q@%d) is out of range", ErrCorrupt, f.off, n, c.k, c.e.Rev)
	}
	c.n, c.newKey = n+1, newKey
	return c.err == nil
}

// decoder reads a block's or the index's varints; the first failure
// sticks in err and every later read returns zero.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) rest() int { return len(d.b) }

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("a bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("a bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = fmt.Errorf("%d bytes where %d are left", n, len(d.b))
		return nil
	}
	b := d.b[:n:n]
	d.b = d.b[n:]
	return b
}

// entry decodes the next entry into e, which holds the block's previous
// entry (first: the entry is at a restart point), and its key into *k,
// which holds the previous key. ordered: an entry was decoded before it,
// which it must follow in (key, revision) order. It reports whether the
// key is new: a restart point repeats its key even when it is the key
// before it.
func (d *decoder) entry(e *Entry, k *[]byte, first, ordered bool) (newKey bool, err error) {
	if len(d.b) == 0 {
		return false, fmt.Errorf("an entry ends early")
	}
	flags := d.b[0]
	d.b = d.b[1:]
	op, hasTTL, sameZone := Op(flags&flagOp), flags&flagTTL != 0, flags&flagSameZone != 0
	newKey = flags&flagNewKey != 0
	switch {
	case flags&^(flagOp|flagTTL|flagNewKey|flagSameZone) != 0 || op < Put || op > Expire:
		return false, fmt.Errorf("bad flags %#x", flags)
	case hasTTL && op != Put:
		return false, fmt.Errorf("a TTL on a tombstone")
	case first && !newKey:
		return false, fmt.Errorf("an entry at a restart point continues a key")
	case first && sameZone:
		return false, fmt.Errorf("an entry at a restart point takes the zone of the one before it")
	}
	if newKey {
		shared := d.uvarint()
		if d.err == nil && first && shared != 0 {
			return false, fmt.Errorf("an entry at a restart point shares %d bytes of a key", shared)
		}
		if d.err == nil && shared > uint64(len(*k)) {
			return false, fmt.Errorf("shares %d bytes of a %d-byte key", shared, len(*k))
		}
		suffix := d.bytes(d.uvarint())
		order := 1
		if d.err == nil && ordered {
			order = bytes.Compare(suffix, (*k)[shared:])
		}
		prevRev := e.Rev
		*k = append((*k)[:shared], suffix...)
		e.Rev, e.Sec = int64(d.uvarint()), d.varint()
		if d.err == nil && (order < 0 || order == 0 && (!first || e.Rev <= prevRev)) {
			return false, fmt.Errorf("%q@%d is out of order", *k, e.Rev)
		}
	} else {
		delta := d.uvarint()
		if d.err == nil && (delta == 0 || delta > uint64(1<<63-1-e.Rev)) {
			return false, fmt.Errorf("a revision delta of %d", delta)
		}
		e.Rev += int64(delta)
		e.Sec += d.varint()
	}
	nsec, zone := d.uvarint(), uint64(e.Zone)
	if !sameZone {
		zone = d.uvarint()
	}
	if d.err == nil && (nsec >= 1e9 || zone > 1<<32-1) {
		return false, fmt.Errorf("nanoseconds %d or zone %d out of range", nsec, zone)
	}
	e.Nsec, e.Zone, e.Op, e.HasTTL, e.Expires, e.Value = int32(nsec), uint32(zone), op, hasTTL, 0, nil
	if hasTTL {
		e.Expires = base(e.Sec, e.Nsec) + d.varint()
	}
	if op == Put {
		e.Value = d.bytes(d.uvarint())
	}
	return newKey, d.err
}
