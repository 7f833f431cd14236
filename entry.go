package revkv

import (
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/revkv/revkv/revlog"
)

// Revision is the store's global change counter: 0 means nothing was written
// yet, and every change takes the next one.
type Revision int64

// Op says what an Entry did.
type Op uint8

const (
	OpPut    Op = iota + 1 // value written (also: TTL set or removed)
	OpDelete               // explicit delete
	OpExpire               // the key's TTL ran out
)

// String returns "put", "delete" or "expire".
func (op Op) String() string {
	switch op {
	case OpPut:
		return "put"
	case OpDelete:
		return "delete"
	case OpExpire:
		return "expire"
	}
	return "Op(" + strconv.Itoa(int(op)) + ")"
}

// Entry is one revision of one key.
type Entry[V any] struct {
	Key       string
	Op        Op
	Value     V         // zero unless Op == OpPut
	Rev       Revision  // the revision that made this entry
	Time      time.Time // when it took effect (for OpExpire: the exact expiry time)
	ExpiresAt time.Time // zero: no TTL; always zero on OpDelete and OpExpire
}

// entryOf returns e as the public Entry of key, its times in their
// locations from zones.
func entryOf[V any](key string, e *revlog.Entry[V], zones *revlog.Zones) Entry[V] {
	return Entry[V]{Key: key, Op: Op(e.Op), Value: e.Value, Rev: Revision(e.Rev), Time: e.Time(zones), ExpiresAt: e.ExpiresAt(zones)}
}

// keyLog is one key's place in the store. A store holds one per key, so it
// is kept to 96 bytes, a size class of the allocator, with the log's own 40:
// drop and stale share the last word.
type keyLog[V any] struct {
	key  string
	mu   sync.RWMutex // guards log against readers; writers also hold state.mu
	log  revlog.Log[V]
	slot int // index in state.slots; guarded by state.mu
	// drop is how many of log's oldest entries the history cap has cut
	// during a drain (Open's stores), to be dropped when the drain is
	// published; 0 otherwise. Guarded by state.mu. It is below the log's
	// length, which memory keeps far below 2^31.
	drop int32
	// stale is set while Open's log replay has left the key's index slot
	// behind its log (disk.stale lists these keys). Guarded by
	// state.mu.
	stale bool
}

func lessKey[V any](a, b *keyLog[V]) bool { return a.key < b.key }

// indexed is a key's slot in the index: what a read of the latest state needs
// of the log's newest entry (a log always keeps it), and the log. It is kept
// small because a lookup copies all of it out of the map. Its revision is
// not kept: it is the newest in the log at the head loaded with the slot
// (see liveEntry).
//
// Invariant: the slot is indexedOf(the newest entry), or, when that is an
// OpExpire, indexedOf(the OpPut before it, still in the log), whose deadline
// is the OpExpire's time (see publishLocked).
type indexed[V any] struct {
	value V
	// deadline is when value stops being live, in Unix nanoseconds: never
	// for a value without a TTL, gone for a tombstone (OpDelete, OpExpire),
	// else its ExpiresAt, which expiryOf keeps above both.
	deadline int64
	kl       *keyLog[V]
}

// The two deadlines that are not times. They are the two lowest int64s, so
// that every expiry time up to the last one Unix nanoseconds hold,
// time.Unix(0, math.MaxInt64), is a deadline of its own; expiryOf refuses the
// two instants they stand for (in the year 1677).
const (
	gone  = math.MinInt64     // indexed.deadline of a tombstone
	never = math.MinInt64 + 1 // indexed.deadline of a value without a TTL
)

func indexedOf[V any](kl *keyLog[V], e *revlog.Entry[V]) indexed[V] {
	x := indexed[V]{value: e.Value, deadline: never, kl: kl}
	switch {
	case e.Op != revlog.Put:
		x.deadline = gone
	case e.HasTTL:
		x.deadline = e.Expires
	}
	return x
}
