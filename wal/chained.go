package wal

import (
	"errors"
	"fmt"
	"math"
)

// Chained is the payload of a KindChained record: a batch, the annotations
// of its revisions, and the hash chain's digest after its last revision
// (package chain), which replay recomputes and checks. One write makes the
// record whole or cuts it whole, so a commit's annotations and digest
// never outlive, nor come without, its entries.
//
//	the batch, as AppendBatch encodes it
//	notes    uvarint count of strings, then each: uvarint length, bytes
//	         (key, value, key, value, ...: keys in byte order, unique)
//	digest   32 bytes: D(the batch's last revision)
type Chained struct {
	Batch  Batch
	Notes  []string
	Digest [32]byte
}

// AppendChained appends the payload of c to dst.
func AppendChained(dst []byte, c *Chained) []byte {
	dst = AppendBatch(dst, c.Batch)
	e := enc{dst}
	e.uvarint(uint64(len(c.Notes)))
	for _, s := range c.Notes {
		e.str(s)
	}
	return append(e.b, c.Digest[:]...)
}

// DecodeChained decodes a KindChained payload into c, reusing its storage
// and bd's (see BatchDecoder). Values point into p.
func (bd *BatchDecoder) DecodeChained(c *Chained, p []byte) error {
	if len(p) < 32 {
		return errShortPayload
	}
	body, digest := p[:len(p)-32], p[len(p)-32:]
	copy(c.Digest[:], digest)
	// The batch decoder wants the whole payload: find where the notes
	// start by decoding the batch from a decoder that leaves the rest.
	d := dec{b: body, zone: bd.zone}
	n := d.uvarint()
	if d.err != nil || n > uint64(len(body)) {
		return errShortPayload
	}
	b := c.Batch[:0]
	for range n {
		b = append(b, Entry{})
		d.entry(&b[len(b)-1], true)
	}
	bd.zone = d.zone
	c.Batch = b
	for i := 1; d.err == nil && i < len(b); i++ {
		if b[i].Rev != b[i-1].Rev+1 {
			d.err = fmt.Errorf("batch revisions %d, %d are not consecutive", b[i-1].Rev, b[i].Rev)
		}
	}
	c.Notes = decodeNotes(&d, c.Notes[:0])
	return d.done()
}

// decodeNotes reads a count of strings and the strings: key, value pairs
// with keys unique and in byte order.
func decodeNotes(d *dec, dst []string) []string {
	k := d.uvarint()
	if d.err != nil {
		return dst
	}
	if k%2 != 0 || k > uint64(len(d.b)) {
		d.err = errors.New("annotations of an odd count")
		return dst
	}
	for i := range k {
		s := string(d.raw())
		if i%2 == 0 && len(dst) >= 2 && s <= dst[len(dst)-2] {
			d.err = errors.New("annotation keys out of order")
		}
		dst = append(dst, s)
	}
	return dst
}

// Digests is the payload of a KindDigests record: the digests of revisions
// First, First+1, ...
type Digests struct {
	First   int64
	Digests [][32]byte
}

// AppendDigests appends the payload of g to dst.
func AppendDigests(dst []byte, g *Digests) []byte {
	e := enc{dst}
	e.varint(g.First)
	e.uvarint(uint64(len(g.Digests)))
	for i := range g.Digests {
		e.b = append(e.b, g.Digests[i][:]...)
	}
	return e.b
}

// DecodeDigests decodes a KindDigests payload.
func DecodeDigests(p []byte) (Digests, error) {
	d := dec{b: p}
	g := Digests{First: d.varint()}
	n := d.uvarint()
	if d.err == nil && (n > uint64(len(d.b))/32 || n*32 != uint64(len(d.b))) {
		return g, fmt.Errorf("%d digests in %d bytes", n, len(d.b))
	}
	if d.err == nil && g.First < 0 {
		return g, fmt.Errorf("digests from revision %d", g.First)
	}
	g.Digests = make([][32]byte, n)
	for i := range g.Digests {
		copy(g.Digests[i][:], d.b[32*i:])
	}
	d.b = nil
	return g, d.err
}

// MaxNoteSpan is the most revisions one KindNotes record covers: a commit
// of more is written as several.
const MaxNoteSpan = 1 << 20

// Notes is the payload of a KindNotes record: the annotations of the N
// revisions First, First+1, ..., one commit's. (Which key each revision
// wrote is in the key records, which the chain covers.)
type Notes struct {
	First int64
	N     int64
	Notes []string // key, value, ...: as in Chained
}

// AppendNotes appends the payload of n to dst.
func AppendNotes(dst []byte, n *Notes) []byte {
	e := enc{dst}
	e.varint(n.First)
	e.varint(n.N)
	e.uvarint(uint64(len(n.Notes)))
	for _, s := range n.Notes {
		e.str(s)
	}
	return e.b
}

// DecodeNotes decodes a KindNotes payload.
func DecodeNotes(p []byte) (Notes, error) {
	d := dec{b: p}
	n := Notes{First: d.varint(), N: d.varint()}
	if d.err == nil && (n.N < 1 || n.N > MaxNoteSpan || n.First > math.MaxInt64-n.N) {
		return n, fmt.Errorf("annotations of %d revisions", n.N)
	}
	n.Notes = decodeNotes(&d, nil)
	if d.err == nil && (len(n.Notes) == 0 || n.First < 1) {
		return n, errors.New("an empty annotation record")
	}
	return n, d.done()
}

// DecodeEntries decodes the entries of a KindBatch or KindChained payload.
func DecodeEntries(kind Kind, p []byte) (Batch, error) {
	if kind != KindChained {
		return DecodeBatch(p)
	}
	var c Chained
	var bd BatchDecoder
	err := bd.DecodeChained(&c, p)
	return c.Batch, err
}
