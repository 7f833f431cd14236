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
	b := binary.BigEndian
	dst = b.AppendUint64(dst, uint64(r.Rev))
	dst = appendBytes(dst, r.Key)
	dst = append(dst, r.Op)
	dst = b.AppendUint64(dst, uint64(r.Sec))
	dst = b.AppendUint32(dst, uint32(r.Nsec))
	if r.HasTTL {
		dst = append(dst, 1)
		dst = b.AppendUint64(dst, uint64(r.Expires))
	} else {
		dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	}
	dst = appendBytes(dst, r.Value)
	dst = b.AppendUint32(dst, uint32(len(r.Notes)/2))
	for _, s := range r.Notes {
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
	d := sha256.Sum256(h.buf)
	if cap(h.buf) > 1<<20 { // one huge value: do not keep its buffer
		h.buf = nil
	}
	return d
}
