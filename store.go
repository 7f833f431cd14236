package revkv

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"

	"github.com/revkv/revkv/mvcc"
	"github.com/revkv/revkv/revlog"
	"github.com/revkv/revkv/trimmer"
	"github.com/revkv/revkv/ttl"
)

// Store is a multi-version key-value store. Every method is safe for
// concurrent use. See the package documentation for the data model.
//
// Store is a handle: the data and the background goroutines live in state,
// which never points back at the handle, so that a Store dropped without
// Close can be collected and its goroutines stopped (see New).
type Store[V any] struct {
	*state[V]
}

// state is the store.
//
// Locks, and the order they are taken in: a store on a directory's drain
// lock (durability's quiesce, the group commit's; see group.go) first,
// then mu. A holder of mu takes a keyLog's mu, indexMu or watch.mu, one at
// a time and briefly, never two together.
// A reader takes indexMu's read lock or one keyLog's read lock, each alone,
// and never takes mu while holding either. So no lock is ever taken while
// indexMu or a keyLog's mu is held.
//
// A store on a directory lets go of mu while a drain writes and syncs its
// records: its commits are then applied (in the keys' logs above the head,
// the tree, the slots, the expiry index, liveKeys) but not published. A
// holder of mu who reads only what is published (a view's pin, a clone of
// the tree, the head) takes mu alone; one who changes history or reads
// the rest takes it with lockQuiet, with no drain in flight.
//
// Joint invariant, whenever mu is free and no drain is in flight
// (lockQuiet; Check verifies it in tests):
//   - index, tree and slots hold the same keys, each with the same *keyLog;
//     slots[kl.slot] == kl; no log among them is empty;
//   - every log's entries are at or below the head's revision, with strictly
//     increasing revisions and times that never decrease;
//   - index[k] is indexedOf(k's newest entry), or, when that is an
//     OpExpire, of the OpPut before it (see publishLocked);
//   - the expiry index holds exactly the keys whose newest entry is an OpPut
//     with a TTL, at its ExpiresAt, each with its *keyLog; none of them is
//     due at the head's time unless a write is about to materialise it;
//   - liveKeys counts the keys whose newest entry is an OpPut;
//   - floor is max(compactRev, trimFloor), and compaction (if set) holds
//     compactRev.
//
// A published revision is never changed: writers append above the head
// and publish with one store of the head (mvcc.Order), under indexMu with
// the index slots that go with it, so a reader sees every slot and every
// entry as of the head it loads.
type state[V any] struct {
	opts  options
	order *mvcc.Order  // revisions and their times; readers load its head
	zones revlog.Zones // the locations of the entries' times: numbered under mu, read by anyone

	// index maps each key to its log and a copy of its newest entry, so that
	// a read of the latest state is one map lookup, as in a bare map, and
	// never touches the tree or the log.
	indexMu sync.RWMutex // guards index, and orders it with order's head
	index   map[string]indexed[V]

	compaction atomic.Pointer[mark] // the last Compact; nil before the first
	watch      watchers             // Watch's wake-ups, by prefix
	recent     recent[V]            // the keys of the latest revisions, while watchers exist
	removedMax atomic.Int64         // max(removedFloor, every removal's rev): 0 if none
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
	oldestPin  int64                     // smallest key of pins; noPin when none
	txb        txBuffer[V]               // the running Update's writes (see Txn)
	one        [1]change[V]              // the change of a single write, being committed (commitOneLocked)
	revs       *revKeys[V]               // each revision above the floor's key, for Diff; nil until the first Diff
	notes      noteLog[V]                // the annotated commits (notes.go)
	sweepsDue  int                       // compactions and trims whose walk's sweep (sweepNotes) is yet to come
	// countingHidden is how many Trims are walking the keys: they return
	// how many entries they dropped, so the sealed entries a cut hides are
	// read to be counted; a Compact's walk reads none of them.
	countingHidden int
	// commitNotes are the annotations of the commit being made, sorted
	// by key; nil for nearly every commit.
	commitNotes []string
	txns        []Txn[V] // Txn handles not yet handed out
	// removals are the keys compaction removed, with their newest entry's
	// revision, so that Changes and Watch report exactly the removed keys
	// under their prefix that they had yet to yield. Removals with a
	// revision at or below removedFloor were forgotten (the oldest go past
	// maxRemovals, and those before Open are not known): from at or below
	// it is ErrCompacted, conservatively.
	removals     []removal
	removedFloor int64

	// dur is where commits go besides memory: memory for New, the disk
	// for Open (replay while Open replays the log). disk is the same disk,
	// for the files that deal with it alone (durable.go, recover.go,
	// checkpoint.go); nil for New. Neither changes once Open returns.
	dur    durability[V]
	disk   *disk[V]
	closed bool

	stop      chan struct{}  // closed by shutdown: the background goroutines return
	bg        sync.WaitGroup // the background goroutines
	closeOnce sync.Once
}

// removal is a key compaction removed and the revision of its newest
// entry (a tombstone).
type removal struct {
	key string
	rev int64
}

// maxRemovals bounds the removals kept; past it the older half is
// forgotten, raising removedFloor.
const maxRemovals = 1 << 14

// mark is a compaction: reads below rev, or before time, are ErrCompacted.
type mark struct {
	rev  int64
	time time.Time
}

// New returns an empty store. It starts a goroutine only if an interval
// option asks for one (WithExpiryInterval, WithTrimInterval); Close stops
// them, and so does the garbage collector if the store is dropped without
// Close. New panics, naming the option, if an option has a negative value or
// WithClock is given nil.
func New[V any](opts ...Option) *Store[V] {
	return newState[V](build(opts)).start()
}

// newState returns an empty store's state; start starts its goroutines.
func newState[V any](o options) *state[V] {
	st := &state[V]{
		opts:      o,
		order:     mvcc.NewOrder(o.clock),
		index:     make(map[string]indexed[V]),
		tree:      btree.NewG(32, lessKey[V]),
		expiry:    ttl.New[*keyLog[V]](),
		pins:      make(map[int64]int),
		oldestPin: noPin,
		stop:      make(chan struct{}),
		dur:       memory[V]{},
	}
	st.txb.s = st
	return st
}

// start starts the goroutines the options ask for and returns the handle.
func (st *state[V]) start() *Store[V] {
	o := st.opts
	if d := o.expiryInterval; d > 0 {
		st.bg.Add(1)
		go st.every(d, func() { st.purge() }) // the expirer
	}
	if d := o.trimInterval; d > 0 {
		t := trimmer.New[*keyLog[V]](trimTarget[V]{st}, trimmer.Config{Interval: d, Sample: o.trimSample}, nil)
		st.bg.Add(1)
		go func() {
			defer st.bg.Done()
			t.Run(st.stop)
		}()
	}
	durable := st.dur.start(st)
	s := &Store[V]{st}
	if o.expiryInterval > 0 || o.trimInterval > 0 || durable {
		// The goroutines hold st, never s: once s is unreachable, stop them.
		runtime.AddCleanup(s, func(st *state[V]) { st.shutdown() }, st)
	}
	return s
}

// lookupLocked returns key's log, or nil, for a caller holding mu: only
// holders of mu change the index, so they read it without indexMu. A key
// created by a commit not yet published is not in the index yet:
// durability has it.
func (s *state[V]) lookupLocked(key string) *keyLog[V] {
	if kl := s.index[key].kl; kl != nil {
		return kl
	}
	return s.dur.pending(key)
}

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
//
// A store on a directory also syncs its log, closes it and releases the
// directory; Close returns the first error writing or syncing ever met.
func (s *Store[V]) Close() error { return s.shutdown() }

// lockQuiet takes the write lock once no group commit is in flight, and
// keeps the next one from starting until unlockQuiet: every assigned
// revision is then published, and nothing changes the keys' logs but the
// holder. New's store has no drains: it is mu alone.
func (s *state[V]) lockQuiet() {
	s.dur.quiesce()
	s.mu.Lock()
}

func (s *state[V]) unlockQuiet() {
	s.mu.Unlock()
	s.dur.resume()
}

// shutdown is Close: the first call does the work and returns its error,
// later ones return nil.
func (s *state[V]) shutdown() error {
	var err error
	s.closeOnce.Do(func() {
		s.lockQuiet()
		s.closed = true
		s.unlockQuiet()
		close(s.stop)
		s.bg.Wait()
		err = s.dur.close(s)
	})
	return err
}
