package revkv

import (
	"iter"
	"math"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"

	"github.com/revkv/revkv/mvcc"
	"github.com/revkv/revkv/revlog"
	"github.com/revkv/revkv/trimmer"
	"github.com/revkv/revkv/ttl"
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

// Store is an in-memory multi-version key-value store. Every method is safe
// for concurrent use. See the package documentation for the data model.
//
// Store is a handle: the data and the background goroutines live in state,
// which never points back at the handle, so that a Store dropped without
// Close can be collected and its goroutines stopped (see New).
type Store[V any] struct {
	*state[V]
}

type state[V any] struct {
	opts  options
	order *mvcc.Order  // revisions and their times; readers load its head
	zones revlog.Zones // the locations of the entries' times: numbered under mu, read by anyone

	// index maps each key to its log and a copy of its newest entry, so that
	// a read of the latest state is one map lookup, as in a bare map, and
	// never touches the tree or the log. Writers change it under mu and,
	// briefly, indexMu, and publish each revision while holding indexMu: a
	// reader under indexMu's read lock sees every slot as of the head it
	// loads. The one exception: an expiry leaves the slot of the value it
	// ends, whose deadline every reader's now has passed (expireLocked).
	indexMu sync.RWMutex // guards index, and orders it with order's head
	index   map[string]indexed[V]

	compaction atomic.Pointer[mark] // the last Compact; nil before the first
	floor      atomic.Int64         // max(compactRev, trimFloor): Floor()

	// mu is the write lock. It serialises every write, so revisions are taken
	// in one order, and guards every field below. A keyLog's log is changed
	// only with both mu and the keyLog's own lock held, so either one is
	// enough to read it.
	mu         sync.Mutex
	tree       *btree.BTreeG[*keyLog[V]] // the keys of index, in byte order, for Scan
	expiry     *ttl.Index[*keyLog[V]]    // pending expiries by (ExpiresAt, key), each with the key's log
	liveKeys   int                       // keys whose newest entry is an OpPut, expired or not
	compactRev int64                     // the last Compact (or retention) revision
	trimFloor  int64                     // highest oldest-remaining revision left by a count trim
	slots      []*keyLog[V]              // the keys of index, in no order: the trimmer picks from it in O(1)
	pins       map[int64]int             // revisions of open Views (and Scans) → how many
	oldestPin  int64                     // smallest key of pins; math.MaxInt64 when none
	closed     bool

	stop      chan struct{}  // closed by shutdown: the background goroutines return
	bg        sync.WaitGroup // the background goroutines
	closeOnce sync.Once
}

// mark is a compaction: reads below rev, or before time, are ErrCompacted.
type mark struct {
	rev  int64
	time time.Time
}

// indexed is a key's slot in the index: what a read of the latest state needs
// of the log's newest entry (a log always keeps it), and the log. It is kept
// small (40 bytes with a slice value; 56 with the map's copy of the key)
// because a lookup copies all of it out of the map. Its revision is not kept:
// it is the newest in the log at the head loaded with the slot (see
// liveEntry).
//
// Invariant: the slot is indexedOf(the newest entry), or, when that is an
// OpExpire, indexedOf(the OpPut before it, still in the log), whose deadline
// is the OpExpire's time.
type indexed[V any] struct {
	value V
	// deadline is when value stops being live, in Unix nanoseconds: never
	// for a value without a TTL, gone for a tombstone (OpDelete, OpExpire),
	// else its ExpiresAt, which ttl.ExpiryTime keeps strictly between the two.
	deadline int64
	kl       *keyLog[V]
}

const (
	never = math.MaxInt64 // indexed.deadline of a value without a TTL
	gone  = math.MinInt64 // indexed.deadline of a tombstone
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

// keyLog is one key's place in the store.
type keyLog[V any] struct {
	key  string
	mu   sync.RWMutex // guards log against readers; writers also hold Store.mu
	log  revlog.Log[V]
	slot int // index in state.slots; guarded by Store.mu
}

func lessKey[V any](a, b *keyLog[V]) bool { return a.key < b.key }

// New returns an empty store. It starts a goroutine only if an interval
// option asks for one (WithExpiryInterval, WithTrimInterval); Close stops
// them, and so does the garbage collector if the store is dropped without
// Close. New panics, naming the option, if an option has a negative value or
// WithClock is given nil.
func New[V any](opts ...Option) *Store[V] {
	o := build(opts)
	st := &state[V]{
		opts:      o,
		order:     mvcc.NewOrder(o.clock),
		index:     make(map[string]indexed[V]),
		tree:      btree.NewG(32, lessKey[V]),
		expiry:    ttl.New[*keyLog[V]](),
		pins:      make(map[int64]int),
		oldestPin: noPin,
		stop:      make(chan struct{}),
	}
	if d := o.expiryInterval; d > 0 {
		st.bg.Add(1)
		go st.expire(d)
	}
	if d := o.trimInterval; d > 0 {
		t := trimmer.New[*keyLog[V]](trimTarget[V]{st}, trimmer.Config{Interval: d, Sample: o.trimSample}, nil)
		st.bg.Add(1)
		go func() {
			defer st.bg.Done()
			t.Run(st.stop)
		}()
	}
	s := &Store[V]{st}
	if o.expiryInterval > 0 || o.trimInterval > 0 {
		// The goroutines hold st, never s: once s is unreachable, stop them.
		runtime.AddCleanup(s, (*state[V]).shutdown, st)
	}
	return s
}

// lookupLocked returns key's log, or nil, for a caller holding mu: only
// holders of mu change the index, so they read it without indexMu.
func (s *state[V]) lookupLocked(key string) *keyLog[V] { return s.index[key].kl }

// lookup returns key's log, or nil.
func (s *state[V]) lookup(key string) *keyLog[V] {
	s.indexMu.RLock()
	x := s.index[key]
	s.indexMu.RUnlock()
	return x.kl
}

// Rev returns the latest revision: 0 before the first write.
func (s *Store[V]) Rev() Revision { return Revision(s.order.Head().Rev) }

// Floor returns the lowest revision at which a View can open: the higher of
// the last compaction and every key's oldest remaining revision after a count
// trim (WithMaxHistory). 0 while nothing was trimmed or compacted.
func (s *Store[V]) Floor() Revision { return Revision(s.floor.Load()) }

// Close stops the background goroutines and waits for them, and marks the
// store closed: afterwards writes and Compact return ErrClosed, PurgeExpired
// and Trim return 0, and reads still answer. It is idempotent and always
// returns nil.
func (s *Store[V]) Close() error {
	s.shutdown()
	return nil
}

func (s *state[V]) shutdown() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.stop)
		s.bg.Wait()
	})
}

// Scan yields the live keys with the given prefix and their values, in
// byte-wise key order. It is a consistent snapshot as of the revision current
// when the iteration began (expiry judged at that moment); the loop body may
// read and write the store, which never changes what the loop yields. The
// revision is pinned, as by a View, until the loop ends. Each step is
// O(log n) in the key's history; starting costs O(log keys).
func (s *Store[V]) Scan(prefix string) iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		s.mu.Lock()
		h := s.order.Head()
		v := s.openLocked(h.Rev, s.order.Now(h))
		keys := s.tree.Clone()
		s.mu.Unlock()
		defer v.Close()
		v.scan(keys, prefix, yield)
	}
}
