package revkv

import (
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"

	"github.com/revkv/revkv/revlog"
	"github.com/revkv/revkv/ttl"
)

// View is a consistent, read-only snapshot of every key at one revision. It
// pins that revision: trimming and compaction keep whatever it needs until
// Close, so its reads never fail and never change. A View must not be used
// after Close; its reads then return nothing.
type View[V any] struct {
	s   *state[V]
	rev int64 // 0: the empty state, which pins nothing

	// t hides values whose ExpiresAt <= t. AsOf sets it; At leaves it zero,
	// which hides nothing (expiry times are after 1678), since the state at
	// a revision is exactly what the entries up to it say.
	t time.Time

	closed atomic.Bool
	err    atomic.Pointer[error] // the first read of the sealed tier that failed (Err)

	lenOnce sync.Once
	n       int // Len, computed once
}

// At opens a View of the store just after revision rev. rev <= 0 opens a view
// of the empty state (the empty state is always known); rev > Rev() is
// ErrFutureRevision; rev below Floor() is ErrCompacted.
func (s *Store[V]) At(rev Revision) (*View[V], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.order.Head()
	r := int64(rev)
	switch {
	case r > h.Rev:
		return nil, viewErr(rev, detail(ErrFutureRevision, "latest is", h.Rev))
	case r <= 0:
		return s.openLocked(0, time.Time{}), nil
	case r < s.floor.Load():
		return nil, viewErr(rev, detail(ErrCompacted, "floor is", s.floor.Load()))
	}
	return s.openLocked(r, time.Time{}), nil
}

// AsOf opens a View of the store at time t: at the last revision whose time
// is <= t, hiding every value whose ExpiresAt <= t. t after now is
// ErrFutureRevision; t before the first revision opens a view of the empty
// state; a revision below Floor() is ErrCompacted.
func (s *Store[V]) AsOf(t time.Time) (*View[V], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.order.Head()
	if now := s.order.Now(h); t.After(now) {
		return nil, revErr("view", 0, "as of", t, detail(ErrFutureRevision, "now is", now))
	}
	r, known, err := s.revAt(t)
	if err != nil {
		return nil, revErr("view", 0, "as of", t, err)
	}
	// The order also knows the times of revisions a group commit assigned
	// and has yet to publish (group.go): not this view's.
	r = min(r, h.Rev)
	if !known || (r > 0 && r < s.floor.Load()) {
		return nil, revErr("view", Revision(r), "as of", t, detail(ErrCompacted, "floor is", s.floor.Load()))
	}
	return s.openLocked(r, t), nil
}

// viewErr is the error of At(rev).
func viewErr(rev Revision, err error) error {
	return revErr("view", rev, "at", rev, err)
}

// openLocked returns a view at rev, pinned unless it is the empty state.
func (s *state[V]) openLocked(rev int64, t time.Time) *View[V] {
	if rev > 0 {
		s.pins[rev]++
		s.oldestPin = min(s.oldestPin, rev)
	}
	return &View[V]{s: s, rev: rev, t: t}
}

// Close releases the view's pin; the history it held is freed by the next
// trim or compaction. It is idempotent.
func (v *View[V]) Close() {
	if !v.closed.CompareAndSwap(false, true) || v.rev == 0 {
		return
	}
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pins[v.rev]--; s.pins[v.rev] > 0 {
		return
	}
	delete(s.pins, v.rev)
	if v.rev == s.oldestPin {
		s.oldestPin = noPin
		for r := range s.pins {
			s.oldestPin = min(s.oldestPin, r)
		}
	}
}

// readErr returns the first error a read of the sealed tier met, if any.
func (v *View[V]) readErr() error {
	if e := v.err.Load(); e != nil {
		return *e
	}
	return nil
}

// Rev returns the revision the view shows.
func (v *View[V]) Rev() Revision { return Revision(v.rev) }

// Err reports why the view's reads may have answered less than the whole
// state: the first error a read of sealed history met (an I/O error, or
// ErrCorrupt naming the file; that key answered missing), else ErrClosed
// once the view is closed (its reads then answer nothing), else nil. Get,
// Entry, Scan and Len have no error of their own; code that must know
// their answers are whole checks Err after them.
func (v *View[V]) Err() error {
	if e := v.err.Load(); e != nil {
		return revErr("read view", Revision(v.rev), "at", Revision(v.rev), *e)
	}
	if v.closed.Load() {
		return revErr("read view", Revision(v.rev), "at", Revision(v.rev), ErrClosed)
	}
	return nil
}

// ModRev returns the revision of key's newest entry in the view — a put, a
// delete or an expiry — or 0 if no entry of the key is kept: what
// Txn.ModRev answered in a transaction at the view's revision, for an
// optimistic check made at a view (a read-only EXEC in revkv-server). A
// put whose TTL has passed at the view's time, its expiry not yet
// written, answers as a transaction would, which writes due expiries
// first: a revision after the view's. An error reading sealed history is
// the view's (Err), and answers 0.
func (v *View[V]) ModRev(key string) Revision {
	if v.closed.Load() || v.rev == 0 {
		return 0
	}
	kl := v.s.lookup(key)
	if kl == nil {
		return 0
	}
	kl.mu.RLock()
	e, st := kl.log.At(v.rev)
	kl.mu.RUnlock()
	now := ttl.Nanos(v.t)
	switch st {
	case revlog.Found:
		if e.Op == revlog.Put && !e.Live(now) {
			return Revision(v.rev + 1)
		}
		return Revision(e.Rev)
	case revlog.Sealed:
		pub, ok, err := v.s.sealedRead(kl.key, v.rev)
		switch {
		case err != nil:
			v.err.CompareAndSwap(nil, &err)
		case ok && pub.Op == OpPut && !liveAt(&pub, now):
			return Revision(v.rev + 1)
		case ok:
			return pub.Rev
		}
	}
	return 0
}

// Get returns key's value in the view.
func (v *View[V]) Get(key string) (V, bool) {
	r, ok := v.entry(key)
	return r.value(), ok
}

// Entry returns key's live entry in the view (always an OpPut).
func (v *View[V]) Entry(key string) (Entry[V], bool) {
	r, ok := v.entry(key)
	if !ok {
		return Entry[V]{}, false
	}
	return r.public(key, &v.s.zones), true
}

func (v *View[V]) entry(key string) (read[V], bool) {
	if v.closed.Load() || v.rev == 0 {
		return read[V]{}, false
	}
	if kl := v.s.lookup(key); kl != nil {
		return v.at(kl)
	}
	return read[V]{}, false
}

// read is a key's entry found by a view: from the key's log (e), or, below
// the log's sealed mark, from the sealed tier (pub, nil otherwise, so that
// a read from memory copies no more than the log's entry).
type read[V any] struct {
	e   revlog.Entry[V]
	pub *Entry[V]
}

func (r *read[V]) value() V {
	if r.pub != nil {
		return r.pub.Value
	}
	return r.e.Value
}

func (r *read[V]) rev() int64 {
	if r.pub != nil {
		return int64(r.pub.Rev)
	}
	return r.e.Rev
}

func (r *read[V]) public(key string, zones *revlog.Zones) Entry[V] {
	if r.pub != nil {
		return *r.pub
	}
	return entryOf(key, &r.e, zones)
}

// at returns kl's live entry at the view. A log removed from the store after
// the view opened answers Absent, which is right: a key is removed only when
// its last entry is a tombstone at or below every open view's revision.
// Below the log's sealed mark it reads the tier; an error there is the
// view's (Err), and the key answers missing.
func (v *View[V]) at(kl *keyLog[V]) (read[V], bool) {
	kl.mu.RLock()
	e, st := kl.log.At(v.rev)
	kl.mu.RUnlock()
	if st == revlog.Sealed {
		pub, ok, err := v.s.sealedRead(kl.key, v.rev)
		if err != nil {
			v.err.CompareAndSwap(nil, &err)
			return read[V]{}, false
		}
		return read[V]{pub: &pub}, ok && liveAt(&pub, ttl.Nanos(v.t))
	}
	return read[V]{e: e}, st == revlog.Found && e.Live(ttl.Nanos(v.t))
}

// Scan yields the keys with the given prefix that are live in the view, and
// their values, in byte-wise key order. The loop body may use the store
// freely. Each step is O(log n) in the key's history.
func (v *View[V]) Scan(prefix string) iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		if v.closed.Load() || v.rev == 0 {
			return
		}
		v.s.mu.Lock()
		keys := v.s.tree.Clone()
		v.s.mu.Unlock()
		v.scan(keys, prefix, yield)
	}
}

// scan walks keys, a private clone of the store's key tree: writes to the
// store copy the nodes they change, so the walk needs no lock and the loop
// body may write.
func (v *View[V]) scan(keys *btree.BTreeG[*keyLog[V]], prefix string, yield func(string, V) bool) {
	keys.AscendGreaterOrEqual(&keyLog[V]{key: prefix}, func(kl *keyLog[V]) bool {
		if !strings.HasPrefix(kl.key, prefix) {
			return false
		}
		r, ok := v.at(kl)
		return !ok || yield(kl.key, r.value())
	})
}

// Len returns the number of live keys in the view. The first call costs
// O(keys); the answer is remembered.
func (v *View[V]) Len() int {
	if v.closed.Load() {
		return 0
	}
	v.lenOnce.Do(func() {
		for range v.Scan("") {
			v.n++
		}
	})
	return v.n
}
