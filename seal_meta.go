package revkv

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/revkv/revkv/chain"
)

// A segment's meta (segment.Writer.Finish) is the store's to fill: the
// zone table of its entries' times, then the chain's digest at every
// markEvery-th revision it covers (those the chain held when it was
// sealed). A digest inside a segment is then at most markEvery-1 links
// from one it holds: DigestAt, Export and verify rehash from the nearest
// mark rather than keeping a digest per sealed revision in memory.
//
//	meta  = zones marks?
//	zones = uvarint count, then per zone uvarint name length, name, varint offset
//	marks = uvarint count, then per mark uvarint revision (as a difference
//	        from the one before, the first from 0), 32-byte digest
//
// A segment written before marks has none, and rehashes from its first
// revision.

// markEvery is how far apart a segment's digest marks are: 1,024
// revisions cost 32 bytes of mark, and a digest read rehashes at most
// 1,023 revisions.
const markEvery = 1024

// mark is the chain's digest at a revision.
type digestMark struct {
	rev int64
	d   chain.Digest
}

// segMeta is a segment's meta, decoded.
type segMeta struct {
	zones []zoneKey
	marks []digestMark // by revision
}

// markAt returns the last mark at or below rev (false: none).
func (m *segMeta) markAt(rev int64) (digestMark, bool) {
	i := sort.Search(len(m.marks), func(i int) bool { return m.marks[i].rev > rev }) - 1
	if i < 0 {
		return digestMark{}, false
	}
	return m.marks[i], true
}

// zoneTable numbers the (location name, offset) pairs of a segment's
// entries' times, as the log writes them (logEntry): its encoding is the
// segment's meta.
type zoneTable struct {
	ids   map[zoneKey]uint32
	zones []zoneKey
}

type zoneKey struct {
	name   string
	offset int32
}

func (zt *zoneTable) number(name string, offset int32) uint32 {
	k := zoneKey{name, offset}
	if id, ok := zt.ids[k]; ok {
		return id
	}
	if zt.ids == nil {
		zt.ids = make(map[zoneKey]uint32)
	}
	zt.ids[k] = uint32(len(zt.zones))
	zt.zones = append(zt.zones, k)
	return uint32(len(zt.zones) - 1)
}

// encode returns the meta of a segment whose entries' zones zt numbered,
// with marks.
func (zt *zoneTable) encode(marks []digestMark) []byte {
	b := binary.AppendUvarint(nil, uint64(len(zt.zones)))
	for _, z := range zt.zones {
		b = binary.AppendUvarint(b, uint64(len(z.name)))
		b = append(b, z.name...)
		b = binary.AppendVarint(b, int64(z.offset))
	}
	if len(marks) == 0 {
		return b
	}
	b = binary.AppendUvarint(b, uint64(len(marks)))
	prev := int64(0)
	for _, m := range marks {
		b = binary.AppendUvarint(b, uint64(m.rev-prev))
		b = append(b, m.d[:]...)
		prev = m.rev
	}
	return b
}

// decodeMeta decodes a segment's meta; its marks must lie in [first,
// last], in increasing order.
func decodeMeta(b []byte, first, last int64) (segMeta, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return segMeta{}, fmt.Errorf("a zone table without its count")
	}
	b = b[k:]
	zs := make([]zoneKey, 0, n)
	for range n {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return segMeta{}, fmt.Errorf("a zone name runs past the table")
		}
		name := string(b[k : k+int(l)])
		b = b[k+int(l):]
		off, k := binary.Varint(b)
		if k <= 0 || off < -24*3600 || off > 24*3600 {
			return segMeta{}, fmt.Errorf("zone %q has no offset, or one of more than a day", name)
		}
		b = b[k:]
		zs = append(zs, zoneKey{name, int32(off)})
	}
	m := segMeta{zones: zs}
	if len(b) == 0 {
		return m, nil // no marks
	}
	n, k = binary.Uvarint(b)
	if k <= 0 || n == 0 || n > uint64(len(b))/33 {
		return segMeta{}, fmt.Errorf("a mark table without its count")
	}
	b = b[k:]
	m.marks = make([]digestMark, 0, n)
	prev := int64(0)
	for range n {
		delta, k := binary.Uvarint(b)
		if k <= 0 || len(b)-k < 32 || delta == 0 || delta > uint64(last-prev) {
			return segMeta{}, fmt.Errorf("mark %d is cut short, or not after the one before it in [%d, %d]", len(m.marks), first, last)
		}
		mk := digestMark{rev: prev + int64(delta)}
		copy(mk.d[:], b[k:k+32])
		if mk.rev < first {
			return segMeta{}, fmt.Errorf("mark at revision %d, before the segment's first %d", mk.rev, first)
		}
		m.marks = append(m.marks, mk)
		b, prev = b[k+32:], mk.rev
	}
	if len(b) != 0 {
		return segMeta{}, fmt.Errorf("bytes after the mark table")
	}
	return m, nil
}
