// Package chain is revkv's hash chain: the canonical encoding of one
// revision, the digest that links it to the revision before, and the
// sequence of digests a store keeps. It knows nothing of the store.
//
// # The chain
//
// D(0) is 32 zero bytes. For every revision r >= 1,
//
//	D(r) = SHA-256( D(r-1) || enc(r) )
//
// where enc(r) is the canonical encoding of revision r, every integer
// big-endian:
//
//	rev          8 bytes, signed: the revision
//	key length   4 bytes, then the key's bytes
//	op           1 byte: 1 put, 2 delete, 3 expire
//	time         8 bytes, signed: Unix seconds; then 4 bytes: nanoseconds (0..999999999)
//	expiry flag  1 byte: 1 if the entry has a TTL, else 0
//	expiry       8 bytes, signed: the expiry in Unix nanoseconds (0 without a TTL)
//	value length 4 bytes, then the codec's bytes of the value (none but for a put)
//	notes count  4 bytes: the number of annotations
//	each note    4 bytes key length, key, 4 bytes value length, value;
//	             in byte order of their keys
//
// The time is seconds and nanoseconds, not one count of nanoseconds,
// because a time.Time holds instants that an int64 of nanoseconds cannot
// (before 1678 or after 2262): two such times must not encode alike. The
// time's location is not part of it: the digest is of the instant. The
// annotations of an Update belong to each of its revisions, so each of
// them encodes them.
//
// # A worked example
//
// Revision 1, a put of key "a" with value "1" at 2024-01-01T00:00:00Z
// (Unix 1704067200), no TTL, annotated who=alice, encodes as these 60
// bytes:
//
//	00 00 00 00 00 00 00 01                          rev 1
//	00 00 00 01 61                                   key "a"
//	01                                               op put
//	00 00 00 00 65 92 00 80  00 00 00 00             time 1704067200 s, 0 ns
//	00  00 00 00 00 00 00 00 00                      no expiry
//	00 00 00 01 31                                   value "1"
//	00 00 00 01                                      one annotation
//	00 00 00 03 77 68 6f  00 00 00 05 61 6c 69 63 65 "who" = "alice"
//
// and D(1) = SHA-256(32 zero bytes || those 60 bytes) =
//
//	5b42ccce3ef3a58cc7246aa92c3d94c50849432de47808292b0cfb8109a2bc4d
//
// (ExampleDigest; the test of this package recomputes it).
package chain

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
)

// Digest is one link of the chain: D(r).
type Digest [32]byte

// String returns the digest in lower-case hex.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// Short is the digest's first 8 bytes in hex, for an error message. It
// takes d by value, so that a caller's digest does not move to the heap
// for the message it may never write.
func (d Digest) Short() string { return hex.EncodeToString(d[:8]) }

// ExampleDigest is D(1) of the package doc's worked example, in hex.
const ExampleDigest = "5b42ccce3ef3a58cc7246aa92c3d94c50849432de47808292b0cfb8109a2bc4d"

const exampleLen = 60

// Rev is what the chain covers of one revision.
type Rev struct {
	Rev     int64
	Key     string
	Op      uint8
	Sec     int64
	Nsec    int32
	HasTTL  bool
	Expires int64    // Unix nanoseconds, if HasTTL
	Value   []byte   // the codec's bytes; nil but for a put
	Notes   []string // key, value, key, value, ...; sorted by key
}

// Append appends the canonical encoding of r to dst.
func (r *Rev) Append(dst []byte) []byte {
	return AppendNotes(r.AppendHead(dst), r.Notes)
}

// AppendHead appends the canonical encoding of r up to its annotations
// (Notes is not read): enc(r) is its head, then AppendNotes of its
// annotations. A caller that encodes many revisions before it knows
// their annotations keeps the heads, and hashes each with NextHead.
func (r *Rev) AppendHead(dst []byte) []byte {
	// One growth, then stores at fixed offsets: the chain hashes every
	// revision written and every one verify reads.
	n := len(dst)
	dst = slices.Grow(dst, headFixed+len(r.Key)+len(r.Value))
	dst = dst[:n+12+len(r.Key)]
	b := binary.BigEndian
	b.PutUint64(dst[n:], uint64(r.Rev))
	b.PutUint32(dst[n+8:], uint32(len(r.Key)))
	copy(dst[n+12:], r.Key)
	n = len(dst)
	dst = dst[:n+26]
	dst[n] = r.Op
	b.PutUint64(dst[n+1:], uint64(r.Sec))
	b.PutUint32(dst[n+9:], uint32(r.Nsec))
	if r.HasTTL {
		dst[n+13] = 1
		b.PutUint64(dst[n+14:], uint64(r.Expires))
	} else {
		dst[n+13] = 0
		b.PutUint64(dst[n+14:], 0)
	}
	b.PutUint32(dst[n+22:], uint32(len(r.Value)))
	return append(dst, r.Value...)
}

// headFixed is the bytes of a head but its key and value: rev 8, key
// length 4, op 1, time 12, expiry 9, value length 4.
const headFixed = 38

// AppendNotes appends the annotations' part of a revision's encoding
// (Rev.Notes) to dst.
func AppendNotes(dst []byte, notes []string) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(notes)/2))
	for _, s := range notes {
		dst = appendBytes(dst, s)
	}
	return dst
}

func appendBytes[T string | []byte](dst []byte, s T) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

// A Hasher computes links, reusing its buffer. It is not safe for
// concurrent use.
type Hasher struct{ buf []byte }

// Next returns D(r) given prev = D(r-1).
func (h *Hasher) Next(prev Digest, r *Rev) Digest {
	h.buf = append(h.buf[:0], prev[:]...)
	h.buf = r.Append(h.buf)
	return h.sum()
}

// NextHead returns D(r) given prev = D(r-1), the head of r's encoding
// (Rev.AppendHead) and its annotations.
func (h *Hasher) NextHead(prev Digest, head []byte, notes []string) Digest {
	h.buf = append(h.buf[:0], prev[:]...)
	h.buf = AppendNotes(append(h.buf, head...), notes)
	return h.sum()
}

func (h *Hasher) sum() Digest {
	d := sha256.Sum256(h.buf)
	if cap(h.buf) > 1<<20 { // one huge value: do not keep its buffer
		h.buf = nil
	}
	return d
}
