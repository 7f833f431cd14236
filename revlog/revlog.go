// Package revlog holds one key's log: its entries oldest first, binary search
// by revision and by time, and trimming from the front.
//
// A Log is not safe for concurrent use; the store guards each one with the
// key's own mutex.
package revlog

import (
	"slices"
	"sort"
	"time"
)

// Op says what an entry did. The values match revkv.Op.
type Op uint8

const (
	Put    Op = iota + 1 // a value was written (also: a TTL set or removed)
	Delete               // an explicit delete
	Expire               // the TTL ran out
)

// Entry is one revision of one key: 56 bytes with a slice value, and no
// pointer but the value's.
//
// Its time is kept as Unix seconds and nanoseconds plus the number of its
// location in the store's Zones (Time and SetTime), not as a time.Time: that
// saves 8 bytes, and with the flags packed beside it 16, and a pointer for
// the garbage collector to scan in every entry. It loses nothing: the pair
// holds every instant a time.Time holds (but those within about 2,000 years
// of its lowest, year -292 billion, where t.Unix() wraps around), and Zones
// gives back the location.
// The expiry time is kept as Unix nanoseconds: every expiry time is in the
// range they hold (ttl.ExpiryTime), and it has the entry's location.
type Entry[V any] struct {
	Rev     int64
	sec     int64 // the time's t.Unix()
	Value   V     // zero unless Op == Put
	Expires int64 // the expiry time in Unix nanoseconds, if HasTTL
	nsec    int32 // the time's t.Nanosecond()
	zone    Zone  // the time's location
	Op      Op
	HasTTL  bool // only on an OpPut
}

// SetTime sets e's time to t, numbering t's location in z.
func (e *Entry[V]) SetTime(t time.Time, z *Zones) {
	e.SetTimeIn(t, z.Number(t.Location()))
}

// SetTimeIn sets e's time to t, whose location z numbered zone: SetTime
// for a caller that numbers locations itself.
func (e *Entry[V]) SetTimeIn(t time.Time, zone Zone) {
	e.sec, e.nsec, e.zone = t.Unix(), int32(t.Nanosecond()), zone
}

// Time returns e's time, in its location (z must be the Zones that numbered it).
func (e *Entry[V]) Time(z *Zones) time.Time {
	return time.Unix(e.sec, int64(e.nsec)).In(z.Location(e.zone))
}

// after reports whether e's time is after the instant (sec, nsec).
func (e *Entry[V]) after(sec int64, nsec int32) bool {
	return e.sec > sec || (e.sec == sec && e.nsec > nsec)
}

// ExpiresAt returns the expiry time, in the location of e's time; zero
// without a TTL.
func (e *Entry[V]) ExpiresAt(z *Zones) time.Time {
	if !e.HasTTL {
		return time.Time{}
	}
	return time.Unix(0, e.Expires).In(z.Location(e.zone))
}

// Live reports whether e holds a value that has not expired at now (Unix
// nanoseconds).
func (e *Entry[V]) Live(now int64) bool {
	return e.Op == Put && (!e.HasTTL || e.Expires > now)
}

// Status is the outcome of a lookup.
type Status uint8

const (
	Absent    Status = iota // no entry decides the answer: the key did not exist
	Found                   // the entry returned decides the answer
	Compacted               // the entries that decide the answer were dropped
	Sealed                  // the answer is in the sealed tier, not in the log (Seal)
)

// Log is one key's retained history.
//
// Invariants: entries are in strictly increasing Rev and non-decreasing Time.
// If trimmed, entries[0] is the oldest retained entry and every read below its
// revision (or before its time) is Compacted; otherwise the log holds the
// key's whole history.
//
// Example: Append(put@2); Append(put@5); Append(del@9) → At(1) Absent,
// At(6) Found put@5. CutBefore(6) drops put@2 → trimmed, At(4) Compacted,
// At(6) still put@5.
//
// The fields most logs never need (the revision index of a long log and
// the sealed tier's bounds) live behind ext, allocated by the first that
// does, so that the log of a key with a short history is 40 bytes: a store
// holds one per key, and most keys have a short history.
type Log[V any] struct {
	entries []Entry[V]
	ext     *logExt
	// front packs what the log knows of the entries dropped from its
	// front: dropped, the revision of the newest of them (0: none, or not
	// known: a log rebuilt from a snapshot), so that a reader walking the
	// log forward from a revision knows whether it lost anything; and
	// trimmed: entries were dropped from the front. It is dropped, or ^dropped
	// (negative) when trimmed: dropped is never negative, so every value
	// it may take is kept whole.
	front int64
}

// logExt is the part of a Log that most logs never need.
type logExt struct {
	// revs is nil or holds every entry's Rev in order (revs[i] ==
	// entries[i].Rev); it is built once a log reaches revsFrom entries. A
	// search by revision probes it instead of the entries, 8 bytes apart
	// instead of 56, so the probes of a long history stay in cache.
	revs []int64
	// sealed is 0, or the revision of entries[0], below which the key's
	// history was moved to the sealed tier (Seal): reads from lo, the
	// revision of the key's oldest retained entry, up to it answer
	// Sealed; below lo, Compacted if trimmed, else Absent (the key did not
	// exist: the tier's older entries of the same key, if any, are of an
	// earlier life of it that a compaction removed). A trim of the log's
	// own entries clears both.
	sealed, lo int64
}

// revIndex returns the log's revision index, nil if it has none.
func (l *Log[V]) revIndex() []int64 {
	if l.ext == nil {
		return nil
	}
	return l.ext.revs
}

// sealedAt returns the revision below which the key's history is in the
// sealed tier and the revision of its oldest entry there (0, 0: none is).
func (l *Log[V]) sealedAt() (sealed, lo int64) {
	if l.ext == nil {
		return 0, 0
	}
	return l.ext.sealed, l.ext.lo
}

// setExt sets the revision index and the sealed tier's bounds, freeing
// the ext when they are all empty.
func (l *Log[V]) setExt(revs []int64, sealed, lo int64) {
	switch {
	case revs == nil && sealed == 0 && lo == 0:
		l.ext = nil
	case l.ext == nil:
		l.ext = &logExt{revs: revs, sealed: sealed, lo: lo}
	default:
		l.ext.revs, l.ext.sealed, l.ext.lo = revs, sealed, lo
	}
}

func (l *Log[V]) trimmed() bool { return l.front < 0 }

func (l *Log[V]) dropped() int64 {
	if l.front < 0 {
		return ^l.front
	}
	return l.front
}

// setFront sets front from dropped (never negative) and trimmed.
func (l *Log[V]) setFront(dropped int64, trimmed bool) {
	l.front = dropped
	if trimmed {
		l.front = ^dropped
	}
}

func (l *Log[V]) setTrimmed(t bool) { l.setFront(l.dropped(), t) }

// revsFrom is the length at which a log starts keeping revs: below it a
// search is a few probes anyway, and most keys never pay for the slice.
const revsFrom = 16

// Append adds e as the newest entry. The caller guarantees e's revision and
// time are not below the newest entry's. O(1) amortised.
//
// An entry with a TTL is given room for the OpExpire that follows it unless
// a newer write comes first: the expiry is written by a purge, which finds the
// log cold, and writing into room already there spares it an allocation and
// the copy of the log.
func (l *Log[V]) Append(e Entry[V]) {
	if e.HasTTL {
		// Grown one append-sized step at a time, so that capacities stay the
		// ones append picks: asking for two more at once grows a log of one
		// to 3 (not 2, then 4) and shifts every later capacity, which leaves
		// the heap under a history cap measurably larger (bench/heapflat).
		for cap(l.entries)-len(l.entries) < 2 {
			l.entries = slices.Grow(l.entries, cap(l.entries)-len(l.entries)+1)
		}
	}
	l.entries = append(l.entries, e)
	l.indexRev(e)
}

// indexRev keeps the revision index in step with an entry just appended.
func (l *Log[V]) indexRev(e Entry[V]) {
	switch {
	case l.revIndex() != nil:
		l.ext.revs = append(l.ext.revs, e.Rev)
	case len(l.entries) >= revsFrom:
		revs := make([]int64, len(l.entries), cap(l.entries))
		for i := range l.entries {
			revs[i] = l.entries[i].Rev
		}
		sealed, lo := l.sealedAt()
		l.setExt(revs, sealed, lo)
	}
}

// AppendWithin is Append for a log that a history cap keeps to at most
// most entries (but for what an open reader pins): while the log is
// shorter than most, its array grows to at most most, where append would
// double it past for good (a log capped at 3 would hold room for 4 with
// every key). An entry with a TTL gets room for its expiry as with Append,
// within most too: the cap trims the log before it could need more.
func (l *Log[V]) AppendWithin(e Entry[V], most int) {
	n := len(l.entries)
	if n >= most {
		l.Append(e) // a reader pinned more than the cap keeps: append's growth
		return
	}
	want := n + 1
	if e.HasTTL {
		want = min(n+2, most)
	}
	if cap(l.entries) < want {
		grown := make([]Entry[V], n, min(max(2*n, want), most))
		copy(grown, l.entries)
		l.entries = grown
	}
	l.entries = append(l.entries, e)
	l.indexRev(e)
}

// Grow makes room for n more entries, so that as many Appends do not
// allocate: for a log rebuilt from a snapshot, whose length is known.
func (l *Log[V]) Grow(n int) {
	l.entries = slices.Grow(l.entries, n)
}

// Len returns the number of retained entries.
func (l *Log[V]) Len() int { return len(l.entries) }

// Entries returns the retained entries, oldest first. The slice belongs to the
// log: read it under the key's lock and copy what must outlive it.
func (l *Log[V]) Entries() []Entry[V] { return l.entries }

// Last returns the newest entry.
func (l *Log[V]) Last() (*Entry[V], bool) {
	if len(l.entries) == 0 {
		return nil, false
	}
	return &l.entries[len(l.entries)-1], true
}

// MarkTrimmed records that entries older than the first were dropped, for a
// log rebuilt from a snapshot.
func (l *Log[V]) MarkTrimmed() { l.setTrimmed(len(l.entries) > 0) }

// SetDropped records that entries up to rev were dropped (by a trim, or
// before a log was rebuilt from disk): it never lowers what the log knows.
func (l *Log[V]) SetDropped(rev int64) {
	if rev > l.dropped() {
		l.setFront(rev, l.trimmed())
	}
}

// Dropped returns the revision of the newest entry dropped from the front:
// a walk forward from revision r has lost nothing of this key if
// Dropped() < r. 0 when nothing was dropped.
func (l *Log[V]) Dropped() int64 { return l.dropped() }

// From returns the oldest entry with Rev >= rev, if there is one. O(log n).
func (l *Log[V]) From(rev int64) (Entry[V], bool) {
	i := l.indexAt(rev-1) + 1
	if i >= len(l.entries) {
		return Entry[V]{}, false
	}
	return l.entries[i], true
}

// AppendRange appends to buf the entries with lo <= Rev <= hi, oldest
// first, at most n of them, and returns it. O(log n + entries copied).
func (l *Log[V]) AppendRange(buf []Entry[V], lo, hi int64, n int) []Entry[V] {
	for i := l.indexAt(lo-1) + 1; i < len(l.entries) && l.entries[i].Rev <= hi && n > 0; i, n = i+1, n-1 {
		buf = append(buf, l.entries[i])
	}
	return buf
}

// Lo returns the revision below which reads are Compacted (0: none are).
func (l *Log[V]) Lo() int64 {
	switch sealed, lo := l.sealedAt(); {
	case !l.trimmed() || len(l.entries) == 0:
		return 0
	case sealed > 0:
		return lo
	}
	return l.entries[0].Rev
}

// SealedFrom returns the revision of a sealed log's oldest retained
// entry, which the tier holds (0: the log is not sealed).
func (l *Log[V]) SealedFrom() int64 {
	if sealed, lo := l.sealedAt(); sealed > 0 {
		return lo
	}
	return 0
}

// Seal drops the entries older than the newest at or below rev (and than
// the put before it, if that one is an expiry: the put's value is the one
// that expired), which the sealed tier now holds: reads below the oldest
// entry kept answer Sealed, and the caller reads the tier. It is not a
// trim: Lo and Dropped do not change. Returns how many entries it dropped.
// O(n).
func (l *Log[V]) Seal(rev int64) int {
	i := l.indexAt(rev)
	if i > 0 && l.entries[i].Op == Expire {
		i--
	}
	if i <= 0 {
		return 0
	}
	sealed, lo := l.sealedAt()
	if sealed == 0 {
		lo = l.entries[0].Rev
	}
	l.cutFront(i)
	l.setExt(l.revIndex(), l.entries[0].Rev, lo)
	return i
}

// MarkSealed records that the key's history below its oldest entry is in
// the sealed tier from revision lo on, and whether reads below lo are
// Compacted (trimmed) or Absent, for a log rebuilt from a snapshot.
func (l *Log[V]) MarkSealed(lo int64, trimmed bool) {
	if len(l.entries) == 0 {
		return
	}
	l.setExt(l.revIndex(), l.entries[0].Rev, lo)
	l.setTrimmed(trimmed)
}

// HideSealed records that a trim or compaction hid the sealed entries
// below lo, the newest of them at dropped: reads below lo answer
// Compacted. For a sealed log whose cut falls below its oldest entry.
func (l *Log[V]) HideSealed(lo, dropped int64) {
	sealed, was := l.sealedAt()
	if sealed == 0 || lo <= was && l.trimmed() {
		return
	}
	l.setExt(l.revIndex(), sealed, max(min(lo, sealed), was))
	l.setTrimmed(true)
	l.SetDropped(dropped)
}

// SealedBelow returns the revision below which the key's history is in
// the sealed tier (0: none is).
func (l *Log[V]) SealedBelow() int64 {
	sealed, _ := l.sealedAt()
	return sealed
}

// At returns the entry visible just after revision rev: the newest with
// Rev <= rev. O(1) when that is the newest entry, else O(log n).
func (l *Log[V]) At(rev int64) (Entry[V], Status) {
	i := l.indexAt(rev)
	return l.result(i, rev)
}

// AsOf returns the newest entry with Time <= t and Rev <= maxRev (entries
// above maxRev are not yet published). O(log n). Below a sealed log's
// oldest entry it answers Sealed: the caller finds the revision at t and
// reads the tier, and judges Compacted by the time of the trim.
func (l *Log[V]) AsOf(t time.Time, maxRev int64) (Entry[V], Status) {
	sec, nsec := t.Unix(), int32(t.Nanosecond())
	sealed, _ := l.sealedAt()
	if l.trimmed() && sealed == 0 && len(l.entries) > 0 && l.entries[0].after(sec, nsec) {
		return Entry[V]{}, Compacted
	}
	i := sort.Search(len(l.entries), func(i int) bool { return l.entries[i].after(sec, nsec) }) - 1
	for i >= 0 && l.entries[i].Rev > maxRev {
		i--
	}
	if i < 0 && sealed > 0 {
		return Entry[V]{}, Sealed
	}
	return l.result(i, 0)
}

// result is the answer of a read at rev whose newest entry at or below it
// is entries[i] (i < 0: none).
func (l *Log[V]) result(i int, rev int64) (Entry[V], Status) {
	if i >= 0 {
		return l.entries[i], Found
	}
	switch sealed, lo := l.sealedAt(); {
	case sealed > 0 && rev >= lo:
		return Entry[V]{}, Sealed
	case l.trimmed():
		return Entry[V]{}, Compacted
	default:
		return Entry[V]{}, Absent
	}
}

// Index returns the index of the entry of revision rev, or -1 if the log
// does not hold it. O(log n).
func (l *Log[V]) Index(rev int64) int {
	if i := l.indexAt(rev); i >= 0 && l.entries[i].Rev == rev {
		return i
	}
	return -1
}

// indexAt returns the index of the newest entry with Rev <= rev, or -1.
func (l *Log[V]) indexAt(rev int64) int {
	n := len(l.entries)
	if n > 0 && l.entries[n-1].Rev <= rev {
		return n - 1
	}
	if revs := l.revIndex(); revs != nil {
		return sort.Search(n, func(i int) bool { return revs[i] > rev }) - 1
	}
	return sort.Search(n, func(i int) bool { return l.entries[i].Rev > rev }) - 1
}

// CutBefore drops every entry not needed to answer reads at revisions >= rev:
// it keeps the entry visible at rev and all newer ones. If what is left is a
// single tombstone below rev, it is dropped too and empty is true: the key
// no longer needs to exist, and the log is as new (every read Absent). A
// tombstone at rev itself stays: a follower of changes from rev must still
// be able to read it. Returns the number of entries dropped. O(n).
func (l *Log[V]) CutBefore(rev int64) (dropped int, empty bool) {
	i := l.indexAt(rev)
	if i < 0 {
		return 0, false
	}
	if i == len(l.entries)-1 && l.entries[i].Op != Put && l.entries[i].Rev < rev {
		n := len(l.entries)
		l.SetDropped(l.entries[i].Rev) // a reader still holding the log sees the loss
		l.entries, l.ext = nil, nil
		l.setTrimmed(false)
		return n, true
	}
	l.dropFront(i)
	return i, false
}

// DropBefore drops every entry below revision rev (keeping at least the
// newest) and returns how many: a log replayed from disk is cut exactly
// where it was cut before. O(n).
func (l *Log[V]) DropBefore(rev int64) int {
	i := l.indexAt(rev - 1)
	k := min(i+1, len(l.entries)-1)
	l.dropFront(k)
	return max(k, 0)
}

// TrimTo drops the oldest entries until at most n remain, but keeps the entry
// visible at pin and everything newer (pin: the oldest revision an open
// reader still needs). A log always keeps its newest entry. Returns the number
// of entries dropped. O(n).
func (l *Log[V]) TrimTo(n int, pin int64) int {
	n = max(n, 1)
	drop := len(l.entries) - n
	if drop <= 0 {
		return 0
	}
	if i := l.indexAt(pin); i < drop {
		drop = max(i, 0) // with no entry at or below pin, every entry is newer than it
	}
	l.dropFront(drop)
	return drop
}

// dropFront removes entries[:k], a trim: reads below the new oldest
// entry answer Compacted, and the sealed tier's are hidden with them.
func (l *Log[V]) dropFront(k int) {
	if k <= 0 {
		return
	}
	l.SetDropped(l.entries[k-1].Rev)
	l.cutFront(k)
	l.setTrimmed(true)
	l.setExt(l.revIndex(), 0, 0)
}

// cutFront removes entries[:k], clearing them so their values can be
// freed, and gives back a backing array that has become mostly empty.
func (l *Log[V]) cutFront(k int) {
	n := copy(l.entries, l.entries[k:])
	clear(l.entries[n:])
	l.entries = l.entries[:n]
	if c := cap(l.entries); c > 16 && n < c/4 {
		l.entries = append(make([]Entry[V], 0, 2*n), l.entries...)
	}
	sealed, lo := l.sealedAt()
	switch revs := l.revIndex(); {
	case revs == nil:
	case n < revsFrom/2: // rebuilt if the log grows back
		l.setExt(nil, sealed, lo)
	case cap(revs) > 16 && n < cap(revs)/4:
		l.ext.revs = append(make([]int64, 0, 2*n), revs[k:]...)
	default:
		l.ext.revs = revs[:copy(revs, revs[k:])]
	}
}
