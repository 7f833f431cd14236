package etcdstore

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"strings"
)

// layout names the etcd keys of one store. Every key starts with root, the
// store's prefix followed by a zero byte, so that two stores whose prefixes
// nest ("a" and "ab", "app/" and "app/sub/") never share a key: "a\x00" is
// not a prefix of "ab\x00". The prefix itself may not hold a zero byte.
//
//	root+"head"                    seq, time of the last revision, time of revision 1
//	root+"floor"                   the compaction floor: revision and its time
//	root+"k/"+key                  the key's latest entry (tombstones included)
//	root+"h/"+esc(key)+"\x00\x01"+inv(rev)   one entry of the key's history
//	root+"x/"+hex(expiresAt)+key   the expiry index, ordered by (time, key); may be stale
//	root+"r/"+hex(last rev)        a commit's row: the revision, time and key of each entry
//	root+"t/"+inv(time)+inv(rev)   the time index: newest time first
//	root+"p/"+id                   a View's pin (a revision), on the store's lease
//
// inv(n) is the 16 hex digits of MaxInt64-n: a forward range read with limit
// 1 from inv(rev) finds the newest entry at or below rev in O(log n), which
// etcd cannot do in reverse (it sorts a reversed range in full).
type layout struct {
	root string
}

func (l layout) head() string  { return l.root + "head" }
func (l layout) floor() string { return l.root + "floor" }

func (l layout) latest(key string) string { return l.root + "k/" + key }
func (l layout) latestPrefix() string     { return l.root + "k/" }

// histKey is the etcd key of key's entry at rev; histRange is the half-open
// range of all of key's entries, newest first; histPrefix is what every
// history key of every key starting with prefix starts with.
func (l layout) histKey(key string, rev int64) string {
	return l.root + "h/" + escape(key) + "\x00\x01" + inv(rev)
}

func (l layout) histRange(key string) (string, string) {
	base := l.root + "h/" + escape(key)
	return base + "\x00\x01", base + "\x00\x02"
}

func (l layout) histPrefix(prefix string) string { return l.root + "h/" + escape(prefix) }

func (l layout) expiry(at int64, key string) string { return l.root + "x/" + ordHex(at) + key }
func (l layout) expiryPrefix() string               { return l.root + "x/" }

// expiryKey parses an expiry index key back into its time and revkv key.
func (l layout) expiryKey(k string) (int64, string, bool) {
	rest, ok := strings.CutPrefix(k, l.expiryPrefix())
	if !ok || len(rest) < 16 {
		return 0, "", false
	}
	at, ok := parseOrdHex(rest[:16])
	return at, rest[16:], ok
}

func (l layout) revRow(rev int64) string { return l.root + "r/" + hex16(uint64(rev)) }
func (l layout) revPrefix() string       { return l.root + "r/" }

func (l layout) timeRow(t, rev int64) string { return l.root + "t/" + invTime(t) + inv(rev) }
func (l layout) timeSeek(t int64) string     { return l.root + "t/" + invTime(t) }
func (l layout) timeEnd() string             { return l.root + "t0" } // '0' follows '/'

func (l layout) pin(id string) string { return l.root + "p/" + id }
func (l layout) pinPrefix() string    { return l.root + "p/" }

// escape makes key safe to end with the separator "\x00\x01": a zero byte
// becomes "\x00\xff". It keeps byte order and prefixes: escape(p) is a
// prefix of escape(k) exactly when p is a prefix of k.
func escape(key string) string {
	if !strings.Contains(key, "\x00") {
		return key
	}
	return strings.ReplaceAll(key, "\x00", "\x00\xff")
}

func hex16(n uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return hex.EncodeToString(b[:])
}

// inv orders revisions newest first.
func inv(rev int64) string { return hex16(uint64(math.MaxInt64 - rev)) }

func parseInv(s string) (int64, bool) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 8 {
		return 0, false
	}
	return math.MaxInt64 - int64(binary.BigEndian.Uint64(b)), true
}

// ordHex orders Unix nanoseconds, negative ones included, byte-wise.
func ordHex(ns int64) string { return hex16(uint64(ns) ^ 1<<63) }

func parseOrdHex(s string) (int64, bool) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b) ^ 1<<63), true
}

// invTime orders times newest first.
func invTime(ns int64) string { return hex16(^(uint64(ns) ^ 1<<63)) }

// prefixEnd is the end of the range of keys starting with p, as clientv3's
// GetPrefixRangeEnd computes it.
func prefixEnd(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return "\x00"
}

// parseOrdHexRev parses the revision of a revision row.
func parseOrdHexRev(s string) (int64, bool) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b)), true
}
