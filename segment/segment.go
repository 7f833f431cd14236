// Package segment writes and reads segments: immutable files of sealed
// history, each holding every entry of a range of revisions, sorted by key
// and then by revision, so that a key's entries lie together, oldest first.
//
// A segment is written once, front to back, by a Writer, and never changed.
// A Reader keeps only the segment's footer and its sparse index (one fence
// per block: the block's first key and revision) in memory, well under a
// byte per entry (and, in a Cache, only while the cache's bound allows),
// and reads blocks with pread as a question needs them:
// the newest entry of a key at or below a revision is always in the one
// block whose fence is the last at or below (key, revision), so a point
// read costs one block read.
//
// # Format
//
// All integers are little-endian; uvarint and varint are encoding/binary's.
//
//	header   "revkvSEG", version u32, zero u32                   16 bytes
//	block*   entries, restart offsets u32 each, restart count u32,
//	         then CRC-32C of all that u32
//	index    uvarint count, then per block: uvarint offset,
//	         uvarint length (CRC included), uvarint first-key length,
//	         first key, uvarint first revision, uvarint entries
//	meta     the writer's opaque bytes (the store's zone names)
//	footer   index offset u64, index length u64, meta offset u64,
//	         meta length u64, first revision i64, last revision i64,
//	         entries u64, keys u64, first revision with a time i64,
//	         digest before the first revision [32], digest at the last
//	         revision [32], index CRC u32, meta CRC u32, version u32,
//	         CRC-32C of the footer so far u32, "revkvEND"         160 bytes
//
// An entry is a flags byte (bits 0-1 the op, bit 2 a TTL, bit 3 a new
// key, bit 4 the zone of the entry before it), then, for a new key, uvarint bytes shared with the block's
// previous key, uvarint suffix length and the suffix; the revision
// (uvarint, a delta from the key's previous entry in the block unless the
// key is new), the time's Unix seconds (varint, likewise a delta) and
// nanoseconds (uvarint), the time's zone number (uvarint; left out, with
// bit 4 of the flags set, where it is the previous entry's), for a TTL the
// expiry in Unix nanoseconds less the time's (varint), and for a put the
// value's length (uvarint) and bytes. Every 16th entry of a block, the
// first included, is a restart point: it starts a new key sharing no
// bytes, so decoding can begin there, and the block lists their offsets;
// a point read decodes one restart point per step of a binary search and
// then at most 16 entries.
//
// Damage anywhere (a checksum, an offset out of the file, entries out of
// order, a block that does not match its fence) is ErrCorrupt, naming the
// offset; a version this build does not know is ErrVersion.
package segment

import (
	"errors"
	"hash/crc32"
)

// Op says what an entry did; the values match revlog.Op.
type Op uint8

const (
	Put    Op = iota + 1 // a value was written
	Delete               // an explicit delete
	Expire               // the TTL ran out
)

// Entry is one revision of one key, as a segment holds it: the value is
// the codec's bytes, the time Unix seconds and nanoseconds with the number
// of its zone.
type Entry struct {
	Key     string
	Rev     int64
	Sec     int64
	Nsec    int32
	Zone    uint32
	Op      Op
	HasTTL  bool  // only on a Put
	Expires int64 // Unix nanoseconds, if HasTTL
	Value   []byte
}

// Footer is what a segment says of itself.
type Footer struct {
	First, Last int64    // the revisions the segment covers: every entry's Rev is in [First, Last]
	TimesFrom   int64    // the first revision whose time the segment holds: First <= TimesFrom <= Last
	Entries     int64    // how many entries it holds
	Keys        int64    // how many keys
	Prev        [32]byte // the hash chain's digest before First
	Digest      [32]byte // the hash chain's digest at Last
}

const (
	version    = 2 // 1 lacked flagSameZone: this build reads both
	headerSize = 16
	// The footer's fields (see the format): nine u64s, two digests, then
	// u32s.
	fPrev      = 8 * 9
	fDigest    = fPrev + 32
	fIndexCRC  = fDigest + 32
	fMetaCRC   = fIndexCRC + 4
	fVersion   = fMetaCRC + 4
	fCRC       = fVersion + 4
	footerSize = fCRC + 4 + 8
	// DefaultBlockSize is the block size a Writer aims at. A warm point
	// read pays for the copy and the checksum of its whole block, and a
	// cold one reads a page either way; the price of smaller blocks is an
	// index entry for each, held in memory once the segment is read.
	// bench/README.md has the trade measured (4 against 8 KiB).
	DefaultBlockSize = 4 << 10
	restartEvery     = 16
)

var (
	headerMagic = []byte("revkvSEG")
	footerMagic = []byte("revkvEND")
	castagnoli  = crc32.MakeTable(crc32.Castagnoli)
)

// ErrCorrupt is damage: the file is not a segment this writer could have
// written.
var ErrCorrupt = errors.New("corrupt segment")

// ErrVersion is a segment of a format version this build does not read:
// a newer build wrote it.
var ErrVersion = errors.New("segment of an unknown format version")

// ErrOrder is a Writer given entries out of (key, revision) order, or
// outside the revisions its footer says it covers.
var ErrOrder = errors.New("segment entries out of order")

const (
	flagOp     = 0x03
	flagTTL    = 0x04
	flagNewKey = 0x08
	// flagSameZone (version 2 on) says the entry's time is in the zone of
	// the block's entry before it, and its zone number is left out: one
	// byte an entry, for the common case of one zone. Never at a restart
	// point.
	flagSameZone = 0x10
)

func checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// base is the time in Unix nanoseconds from which an expiry is stored as
// a delta: the time's own, where that fits an int64, else 0. Both sides
// compute it from the decoded time alone.
func base(sec int64, nsec int32) int64 {
	const lim = 9_000_000_000 // seconds whose nanoseconds fit an int64
	if sec > -lim && sec < lim {
		return sec*1e9 + int64(nsec)
	}
	return 0
}

// less orders entries by key, then revision.
func less(k1 string, r1 int64, k2 string, r2 int64) bool {
	return k1 < k2 || k1 == k2 && r1 < r2
}
