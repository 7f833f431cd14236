package wal

import (
	"encoding/binary"
	"hash/crc32"
)

// After a crash the last segment may end in a record that was being
// written: cut short, or followed by zeros or garbage where the file
// system extended the file but lost the data. Damage to a record that was
// whole looks the same at its offset: a length that runs past the end of
// the file, a checksum that does not match. What tells them apart is what
// follows. A torn write is the end of the log: nothing written after it
// reached the file, so no whole record starts after the bad one. Damage
// in the middle leaves the records after it whole, one after another to
// the end of the file. findTail looks for such a run.
//
// A run, not a single record: the bytes of a torn record are a value a
// client chose, and a value may hold the bytes of a whole record (a
// client storing another store's log, say). Such a record is followed by
// the rest of the value, cut wherever the crash cut it, not by whole
// records that end exactly where the file ends.
//
// In a file with room (a log written through a mapping, vfs.MapAppend,
// allocated ahead of its writes: a crash leaves zeros after the last one,
// to a length that is a multiple of vfs.RoomAlign), the end of the file is
// its last byte that is not zero. So there a torn record whose value
// holds a whole record, cut right after it, or among zeros the value held
// after it, looks like damage, where without room it looks torn; without
// the rule every crash of a mapped log would make damage in the last
// segment look like a torn write, and cut synced records with no error.

// findRecord returns the offset of the first whole record of a log in b at
// or after from: a frame of a log's kind whose length fits in b and whose
// checksum matches; -1 if there is none.
//
// It tries every offset, and checksums a frame only if its length fits and
// its kind is a log's (about one offset in a hundred in random bytes; every
// one in a run of 0x01 bytes). Checksumming each such frame over its
// length would cost the square of b's length; instead the checksum of any
// span is computed from those of b's prefixes at every crcBlock bytes
// (spanCRC), so a candidate costs at most 2*crcBlock bytes of CRC and a
// multiplication modulo the polynomial: O(len(b)), about a microsecond per
// candidate at worst.
func findRecord(b []byte, from int) int {
	s := scanner{b: b}
	for o := max(from, 0); o+frameSize <= len(b); o++ {
		if _, ok := s.whole(o); ok {
			return o
		}
	}
	return -1
}

// findTail returns the offset of the first whole record at or after from
// that starts a run of whole records ending at end, the end of the file:
// len(b), or in a file with room its last byte that is not zero (only
// zeros follow end, and the run's last record may end among them if its
// own bytes end in zeros); -1 if there is none. Each offset is walked at
// most once: a run that breaks marks every record in it as leading
// nowhere, so the cost stays linear even in bytes crafted as records
// within records.
func findTail(b []byte, from, end int) int {
	s := scanner{b: b}
	dead := make([]bool, len(b)) // records whose run breaks before the end
	var run []int
	for o := max(from, 0); o < end && o+frameSize <= len(b); o++ {
		if dead[o] {
			continue
		}
		n, ok := s.whole(o)
		if !ok {
			continue
		}
		run = append(run[:0], o)
		p := o + n
		for p < len(b) && !dead[p] {
			m, ok := s.whole(p)
			if !ok {
				break
			}
			run = append(run, p)
			p += m
		}
		if p >= end {
			return o
		}
		for _, q := range run {
			dead[q] = true
		}
	}
	return -1
}

// scanner checks frames at any offset of b, computing the prefix
// checksums once, at the first frame that needs one.
type scanner struct {
	b     []byte
	sums  []uint32
	shift crcShift
}

// whole returns the size of the frame at o if it is a whole record of a
// log: a log's kind, a length that fits in b, a matching checksum.
func (s *scanner) whole(o int) (int, bool) {
	b := s.b
	if o+frameSize > len(b) {
		return 0, false
	}
	n := binary.LittleEndian.Uint32(b[o:])
	if uint64(n) > uint64(len(b)-o-frameSize) || !logKind(Kind(b[o+8])) {
		return 0, false
	}
	if s.sums == nil {
		s.sums = blockCRCs(b)
	}
	// The checksum covers the kind byte and the payload.
	size := frameSize + int(n)
	return size, spanCRC(b, s.sums, &s.shift, o+8, o+size) == binary.LittleEndian.Uint32(b[o+4:])
}

// logKind reports whether k is the kind of a record a log holds.
func logKind(k Kind) bool { return k >= KindBatch && k <= KindTrim || k == KindChained }

// crcBlock is the spacing of the prefix checksums spanCRC starts from.
const crcBlock = 256

// blockCRCs returns the checksums of b[:i*crcBlock] for every i.
func blockCRCs(b []byte) []uint32 {
	sums := make([]uint32, len(b)/crcBlock+1)
	for i := 1; i < len(sums); i++ {
		sums[i] = crc32.Update(sums[i-1], castagnoli, b[(i-1)*crcBlock:i*crcBlock])
	}
	return sums
}

// spanCRC returns the CRC-32C of b[lo:hi], given blockCRCs(b). With P(i)
// the checksum of b[:i], P(hi) = P(lo)·x^(8(hi-lo)) xor crc(b[lo:hi])
// modulo the polynomial (how zlib's crc32_combine joins two checksums),
// so crc(b[lo:hi]) = P(hi) xor P(lo)·x^(8(hi-lo)).
func spanCRC(b []byte, sums []uint32, shift *crcShift, lo, hi int) uint32 {
	prefix := func(i int) uint32 {
		at := i / crcBlock * crcBlock
		return crc32.Update(sums[i/crcBlock], castagnoli, b[at:i])
	}
	return prefix(hi) ^ multModP(shift.bytes(hi-lo), prefix(lo))
}

// crcPoly is the Castagnoli polynomial, bit-reversed as crc32 uses it.
const crcPoly = 0x82f63b78

// multModP returns a·b modulo the polynomial, in crc32's reversed bit
// order (bit 31 is x^0); a must not be 0.
func multModP(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; ; m >>= 1 {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				return p
			}
		}
		if b&1 != 0 {
			b = b>>1 ^ crcPoly
		} else {
			b >>= 1
		}
	}
}

// x2n[k] is x^(2^k) modulo the polynomial.
var x2n = func() (t [32]uint32) {
	p := uint32(1) << 30 // x^1
	for k := range t {
		t[k] = p
		p = multModP(p, p)
	}
	return t
}()

// crcShift computes x^(8n) modulo the polynomial, remembering the last n:
// the candidates in a run of equal bytes all have the same length.
type crcShift struct {
	n   int
	pow uint32
}

func (s *crcShift) bytes(n int) uint32 {
	if s.pow == 0 || s.n != n {
		p := uint32(1) << 31 // x^0
		for k, m := 3, uint64(n); m != 0; k, m = k+1, m>>1 {
			if m&1 != 0 {
				p = multModP(x2n[k&31], p)
			}
		}
		s.n, s.pow = n, p
	}
	return s.pow
}
